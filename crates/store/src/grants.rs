//! A grant's decisions and its end, the same in every store: a store reads
//! the grant's row (locked where other nodes could step it too), lets
//! [`next`] judge the step, and writes what it answers.

use crate::{GrantConflict, GrantStep};
use protocol::grant::{Grant, GrantStatus};

/// Moves `g` on by `step` at `now` if its stored state allows it; true when
/// its tokens must end with it (a revocation).
pub(crate) fn next(g: &mut Grant, step: &GrantStep, now: &str) -> Result<bool, GrantConflict> {
    let mut end_tokens = false;
    match step {
        GrantStep::Approve { acts_for, scopes } => {
            if g.status != GrantStatus::Pending {
                return Err(GrantConflict::Decided(g.status));
            }
            g.status = GrantStatus::Active;
            g.acts_for = acts_for.clone();
            g.scopes = scopes.clone();
        }
        GrantStep::Deny => {
            if g.status != GrantStatus::Pending {
                return Err(GrantConflict::Decided(g.status));
            }
            g.status = GrantStatus::Denied;
        }
        GrantStep::Revoke { acts_for } => {
            if acts_for.as_deref().is_some_and(|who| who != g.acts_for) {
                return Err(GrantConflict::NotFound);
            }
            if !matches!(g.status, GrantStatus::Active | GrantStatus::Pending) {
                return Err(GrantConflict::Decided(g.status));
            }
            g.status = GrantStatus::Revoked;
            end_tokens = true;
        }
    }
    g.updated = now.to_owned();
    Ok(end_tokens)
}
