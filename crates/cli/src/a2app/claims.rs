//! `a2app claims TARGET [--since T]` (or `a2app TARGET claims`): the message
//! an agent is about to show its person, read on stdin, checked by the app
//! against what this credential stored in its turn.
//!
//! Exit codes: 0 the message may be sent (`pass`), 4 it must not be
//! (`withheld`: each discrepancy says what to write or correct), and the
//! usual 2 and 3 when the check itself could not be made.

use super::Ctx;
use super::output::{Failure, OK, REFUSED, WITHHELD};
use protocol::claim::Verdict;
use std::io::Read;

/// The most read from stdin: the app checks up to 64 KiB and refuses more,
/// by its own code, so a little beyond is read to let it say so.
const MAX_STDIN: u64 = 256 * 1024;

pub async fn check(ctx: &mut Ctx<'_>) -> Result<u8, Failure> {
    let mut message = String::new();
    std::io::stdin()
        .take(MAX_STDIN)
        .read_to_string(&mut message)
        .map_err(|e| Failure::new(REFUSED, "invalid_input", format!("cannot read the message on stdin: {e}")))?;
    if message.trim().is_empty() {
        return Err(Failure::new(REFUSED, "invalid_input", "no message on stdin").fix(ctx.hint("claims < message.txt")));
    }
    let check = ctx.session.api.check_claims(&message, ctx.cli.since.as_deref()).await?;
    let mut lines = Vec::new();
    match check.verdict {
        Verdict::Pass => {
            lines.push("pass: the message matches what the app stored. Confirmations:".to_owned());
            lines.extend(check.confirmations.iter().map(|c| format!("  {c}")));
        }
        Verdict::Withheld => {
            lines.push("withheld: do not show this message; the app stored something else:".to_owned());
            lines.extend(check.discrepancies.iter().map(|d| format!("  {}: {}", d.reason.as_str(), d.message)));
        }
    }
    if let Some(cursor) = &check.cursor {
        lines.push(format!("next turn: --since {cursor}"));
    }
    let exit = if check.verdict == Verdict::Pass { OK } else { WITHHELD };
    let doc = serde_json::to_value(&check).unwrap_or_default();
    ctx.out.done(doc, &lines.join("\n"));
    Ok(exit)
}
