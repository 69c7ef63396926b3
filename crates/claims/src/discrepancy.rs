//! One sentence per unbacked claim, for the agent: what the message claims,
//! what the system has, and what to do (write it, or correct the message).

use protocol::claim::{Claim, Reason};

/// The longest quote of the message a sentence carries.
const QUOTE_CHARS: usize = 160;

pub fn sentence(claim: &Claim) -> String {
    let said = quote(&claim.text);
    let receipt = claim.write.as_ref().map(|w| w.text.as_str()).filter(|t| !t.is_empty());
    match claim.reason {
        Some(Reason::NoWrite) | None => format!(
            "The message says {said}, but no write in this turn did that: make the write, or take the claim out of the message."
        ),
        Some(Reason::WrongTarget) => {
            let other = receipt.map(|r| format!(" ({r})")).unwrap_or_default();
            let target =
                if claim.target.is_empty() { "that record".to_owned() } else { format!("\"{}\"", claim.target) };
            format!(
                "The message says {said}, but that change was made to another record{other}: write {target} if it was meant, or correct the message to name the record that was written."
            )
        }
        Some(Reason::ValueDiffers) => {
            let stored: Vec<String> = claim
                .values
                .iter()
                .filter_map(|v| {
                    let stored = v.stored.as_deref()?;
                    Some(match &v.field {
                        Some(f) => format!("{f} → {stored} (not {})", v.value),
                        None => format!("{stored} (not {})", v.value),
                    })
                })
                .collect();
            let what = if stored.is_empty() { "another value".to_owned() } else { stored.join(", ") };
            let receipt = receipt.map(|r| format!(" ({r})")).unwrap_or_default();
            format!(
                "The message says {said}, but the system stored {what}{receipt}: correct the message to the stored value, or write the claimed one."
            )
        }
        Some(Reason::RefusedWrite) => {
            let codes: Vec<&str> = claim.violations.iter().map(|c| c.as_str()).collect();
            let codes = if codes.is_empty() { String::new() } else { format!(" ({})", codes.join(", ")) };
            format!(
                "The message says {said}, but the system refused that write{codes} and stored nothing: fix it and write it again, or tell the person it was not done."
            )
        }
        Some(Reason::JobNotFinished) => {
            let state = claim.job_state.map(|s| s.as_str()).unwrap_or("not finished");
            format!(
                "The message says {said}, but the job is {state}, not succeeded: wait until it has succeeded before saying so, or say where it stands."
            )
        }
        Some(Reason::UnreadableLanguage) => unreadable(),
    }
}

pub fn unreadable() -> String {
    "The message is not in English, the only language the checker reads, so its claims could not be checked: send it in English, or show the person the confirmations instead.".to_owned()
}

fn quote(text: &str) -> String {
    let t = text.trim();
    let short: String = t.chars().take(QUOTE_CHARS).collect();
    if short.len() < t.len() { format!("“{short}…”") } else { format!("“{short}”") }
}
