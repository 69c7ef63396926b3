//! The false-claim checker: reads what an agent tells a person ("I moved Fix
//! login to Done") and checks each claim in it against the writes the system
//! stored for that agent in the turn, so a person is shown what was stored.
//!
//! Pure: the message, the turn's writes and the app's describe in, a verdict
//! out. It does no I/O, knows no HTTP or SQL, reads no clock (the app's
//! "today" is given) and never panics on a message, whatever its bytes.

mod claim;
pub mod corpus;
mod discrepancy;
mod language;
mod lexicon;
mod markdown;
mod matcher;
mod sentence;
#[cfg(test)]
mod tests;
mod token;
mod turn;
mod value;
mod vocabulary;

pub use protocol::claim::Check;
pub use turn::{Action, Job, Outcome, Turn, Write};

use jiff::civil::Date;
use jiff::tz::TimeZone;
use protocol::claim::{Claim, ClaimedValue, Discrepancy, Reason, Verdict, WriteRef};
use protocol::describe::Describe;

/// What the checker knows of the app besides the turn.
#[derive(Debug, Clone)]
pub struct App<'a> {
    pub describe: &'a Describe,
    /// The date it is now in the app's zone: what "today" and "Friday" count from.
    pub today: Date,
    /// The app's zone, for the day a stored datetime falls on.
    pub zone: TimeZone,
}

/// The longest message checked in full; the server refuses longer ones, and
/// the checker reads no further than this into one it is given anyway.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// Checks a message against one turn (see [`Checker`] to check many against one app).
pub fn check(app: &App<'_>, turn: &Turn, message: &str) -> Check {
    Checker::new(app.clone()).check(turn, message)
}

/// A checker for one app: what describe adds to the vocabulary is read once,
/// and each check reads only its message and its turn.
#[derive(Debug, Clone)]
pub struct Checker<'a> {
    app: App<'a>,
    words: lexicon::Words,
}

impl<'a> Checker<'a> {
    pub fn new(app: App<'a>) -> Checker<'a> {
        let words = lexicon::Words::new(app.describe);
        Checker { app, words }
    }

    /// Checks a message against one turn.
    pub fn check(&self, turn: &Turn, message: &str) -> Check {
        check_with(&self.app, &self.words, turn, message)
    }
}

fn check_with(app: &App<'_>, words: &lexicon::Words, turn: &Turn, message: &str) -> Check {
    let message = cut(message, MAX_MESSAGE_BYTES);
    let paragraphs = markdown::paragraphs(message);
    let said: String = paragraphs.iter().map(|p| token::normalize(&p.text)).collect::<Vec<_>>().join("\n");
    let lex = lexicon::Lexicon::new(words, turn, &said);
    let read = claim::read(&paragraphs, &lex, app.today);
    let judged = matcher::Matcher::new(turn, &lex, &app.zone).judge(&read.claims);
    let mut claims = Vec::with_capacity(read.claims.len());
    let mut discrepancies = Vec::new();
    for (found, j) in read.claims.iter().zip(judged) {
        let values = found
            .values
            .iter()
            .zip(&j.values)
            .map(|(said, (field, stored))| ClaimedValue {
                field: field.clone().or_else(|| match &said.hint {
                    claim::Hint::Field(f) if f.len() == 1 => f.first().cloned(),
                    _ => None,
                }),
                value: said.text.clone(),
                read: reading(&said.reading, &said.text),
                stored: stored.clone(),
            })
            .collect();
        let write =
            j.write.and_then(|i| turn.writes.get(i)).map(|w| WriteRef { id: w.id.clone(), text: w.text.clone() });
        let claim = Claim {
            kind: j.kind.unwrap_or(found.what.kind()),
            entity: j.entity.clone(),
            target: found.target.text.clone(),
            values,
            text: found.text.clone(),
            backed: j.backed,
            write,
            reason: j.reason,
            violations: j.violations.clone(),
            job_state: j.job_state,
        };
        if !claim.backed {
            discrepancies.push(Discrepancy {
                reason: claim.reason.unwrap_or(Reason::NoWrite),
                claim: Some(claims.len()),
                message: discrepancy::sentence(&claim),
            });
        }
        claims.push(claim);
    }
    if read.unreadable {
        discrepancies.push(Discrepancy {
            reason: Reason::UnreadableLanguage,
            claim: None,
            message: discrepancy::unreadable(),
        });
    }
    let confirmations =
        turn.writes.iter().filter(|w| w.is_stored() && !w.text.is_empty()).map(|w| w.text.clone()).collect();
    let verdict = if discrepancies.is_empty() { Verdict::Pass } else { Verdict::Withheld };
    Check { verdict, claims, confirmations, discrepancies, cursor: None }
}

/// How a value was read, when that is not simply its words.
fn reading(r: &value::Reading, text: &str) -> Option<String> {
    match r {
        value::Reading::Date(d) => Some(d.to_string()),
        value::Reading::Number(n) => Some(n.to_string()),
        value::Reading::Flag(b) => Some(if *b { "yes" } else { "no" }.to_owned()),
        value::Reading::Words(w) => (w != &token::normalize(text)).then(|| w.clone()),
    }
}

/// `text` up to `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}
