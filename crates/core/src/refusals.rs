//! Writes an agent tried and the app refused: kept beside the receipts, so a
//! person sees what was tried and not only what was stored, and so a claim
//! of a refused change is answered "refused", not "never tried".
//!
//! Only an agent's (the agent token, a grant, an OAuth client) are kept: a
//! person at the app's page sees their own refusals. A replay of an
//! `Idempotency-Key` is no refusal (the write it repeats stands), and an
//! internal failure is not the agent's doing. At most [`KEEP`] are kept; the
//! oldest go first.

use crate::app::App;
use a2app_access::caller::{Caller, CallerKind};
use a2app_definition::Error;
use a2app_store::RefusedWrite;
use protocol::ErrorCode;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The most refused writes kept.
pub const KEEP: u64 = 10_000;

/// What was tried: `create`, `update`, `delete` or `run`, on which entity
/// (none for `run`), which record (or which operation), with what.
pub struct Attempt<'a> {
    pub action: &'a str,
    pub entity: &'a str,
    pub id: &'a str,
    pub body: &'a Value,
}

/// Keeps `attempt` if `error` refused it and the caller is an agent; a
/// failure to keep it is logged, never the caller's answer.
pub async fn keep(app: &Arc<App>, caller: &Caller, attempt: Attempt<'_>, error: &Error) {
    if !matches!(caller.kind, CallerKind::Agent | CallerKind::Grant) {
        return;
    }
    let code = error.code();
    if matches!(code, ErrorCode::DuplicateRequest | ErrorCode::Internal) {
        return;
    }
    let body = error.to_body();
    let violations = if body.violations.is_empty() {
        vec![protocol::Violation::new(code, body.message.clone())]
    } else {
        body.violations.clone()
    };
    let fields: Map<String, Value> = attempt.body.as_object().cloned().unwrap_or_default();
    let what = match (attempt.action, attempt.entity) {
        ("run", _) => format!("a run of {}", attempt.id),
        ("create", entity) => format!("a create in {entity}"),
        (action, entity) => format!("a {action} of {entity} {}", attempt.id),
    };
    let codes: Vec<&str> = violations.iter().map(|v| v.code.as_str()).collect();
    let refused = RefusedWrite {
        seq: 0,
        at: a2app_definition::datetime::format(app.clock.now()),
        caller: caller.label(),
        agent: caller.agent.clone(),
        action: attempt.action.to_owned(),
        entity: attempt.entity.to_owned(),
        id: attempt.id.to_owned(),
        body: fields,
        violations,
        text: format!("Refused {what}: {}", codes.join(", ")),
    };
    let store = Arc::clone(&app.store);
    if let Err(e) = a2app_store::blocking(move || Ok(store.keep_refused(&refused, KEEP)?)).await {
        tracing::error!(error = %e, "cannot keep a refused write");
    }
}

/// The refused writes after `after` (their sequence number), oldest first.
pub async fn list(app: &Arc<App>, after: i64, limit: u64) -> Result<Vec<RefusedWrite>, Error> {
    let store = Arc::clone(&app.store);
    a2app_store::blocking(move || Ok(store.refused_writes(after, "", limit)?)).await
}
