//! The app-to-agent queue's state steps, the same in every store: a store
//! reads the request's row (locked where other nodes could step it too),
//! lets [`next`] judge the step against it, and writes what it answers.

use crate::{RequestConflict, RequestStep};
use protocol::request::{AgentRequest, RequestStatus};

/// Moves `r` on by `step` at `now`, if its stored state allows it: the claim
/// key's hash to store from now on (`None` clears it), or why not.
/// `claim_hash` is the hash of the current claim's key.
pub(crate) fn next(
    r: &mut AgentRequest,
    claim_hash: Option<&str>,
    step: &RequestStep,
    now: &str,
) -> Result<Option<String>, RequestConflict> {
    if r.status.is_closed() {
        return Err(RequestConflict::Closed(r.status));
    }
    let lease_live = r.status == RequestStatus::Claimed && r.lease_until.as_deref().is_some_and(|l| l > now);
    let new_hash = match step {
        RequestStep::Claim { key_hash, agent, lease_until } => {
            if lease_live {
                return Err(RequestConflict::Claimed(r.lease_until.clone().unwrap_or_default()));
            }
            r.status = RequestStatus::Claimed;
            r.claimed_by = agent.clone();
            r.lease_until = Some(lease_until.clone());
            Some(key_hash.clone())
        }
        RequestStep::Answer { key_hash, outcome } => {
            // The key of the current claim, even past its lease as long as
            // nobody claimed it since: the work is done, and only its claimer
            // did it.
            if r.status != RequestStatus::Claimed || claim_hash != Some(key_hash.as_str()) {
                return Err(RequestConflict::WrongKey);
            }
            match outcome {
                Ok(result) => {
                    r.status = RequestStatus::Done;
                    r.result = Some(result.clone());
                }
                Err(why) => {
                    r.status = RequestStatus::Failed;
                    r.failure = Some(why.clone());
                }
            }
            r.lease_until = None;
            None
        }
        RequestStep::Cancel { by } => {
            if by.as_deref().is_some_and(|b| b != r.requested_by) {
                return Err(RequestConflict::NotFound);
            }
            r.status = RequestStatus::Cancelled;
            r.lease_until = None;
            None
        }
    };
    r.updated = now.to_owned();
    Ok(new_hash)
}

/// Whether an asker with `open` unanswered requests, in an app with `all`,
/// may ask again: `max_open` each, and ten times that in all, so no number
/// of askers grows the table unbounded while one user's flood never blocks
/// another's asking.
pub(crate) fn room(open: i64, all: i64, max_open: u64) -> bool {
    (open.max(0) as u64) < max_open && (all.max(0) as u64) < max_open.saturating_mul(10)
}
