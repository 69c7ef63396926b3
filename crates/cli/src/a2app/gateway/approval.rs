//! A destructive operation through the gateway is approved by the person,
//! asked by the gateway itself through the host (MCP elicitation), never by
//! the agent: the approval key goes to the app only after the person said yes,
//! and the agent never sees it, as `a2app run … --yes` never prints it.
//!
//! - A legacy-era (2025-11-25) host that declared form elicitation is asked
//!   within the call (`elicitation/create`), and the call answers once the
//!   person did.
//! - A 2026-07-28 host cannot be sent requests; the call answers
//!   `input_required` with the question (MRTR), and the host repeats it with
//!   the person's answer. The gateway keeps what it needs under an opaque,
//!   single-use `requestState` that expires; the repeat must be the same call.
//! - A host that cannot ask gets `approval_required` with the key, as the
//!   app's own `/mcp` gives it: the tool's `destructiveHint` and the fix say
//!   to ask the person first.

use crate::a2app::output::{Failure, REFUSED};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequiredResult, InputResponses,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a person has to answer.
const ANSWER_WITHIN: Duration = Duration::from_secs(600);
/// At most this many questions wait for an answer; the oldest goes first.
const MAX_PENDING: usize = 64;
/// The key of the one question in an `input_required` result.
const QUESTION: &str = "approval";

/// How this call's host can ask its person.
pub enum Asker<'a> {
    /// Legacy era, form elicitation declared: ask now.
    Now(&'a Peer<RoleServer>),
    /// 2026-07-28, form elicitation declared in the request's metadata: ask through MRTR.
    Later,
    /// The host cannot ask.
    Cannot,
}

pub fn asker(ctx: &RequestContext<RoleServer>) -> Asker<'_> {
    // 2026-07-28 and every later revision: no handshake, no requests to the client.
    let modern = ctx.meta.protocol_version().is_some_and(|v| !v.has_initialize());
    if modern {
        let can = ctx
            .meta
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        return if can { Asker::Later } else { Asker::Cannot };
    }
    if ctx.peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
        Asker::Now(&ctx.peer)
    } else {
        Asker::Cannot
    }
}

/// The form a person answers: one box to tick.
fn form(message: &str) -> ElicitRequestParams {
    form_titled(message, "Run it")
}

fn form_titled(message: &str, title: &'static str) -> ElicitRequestParams {
    let schema = ElicitationSchema::builder()
        .required_bool_property("approve", |b| b.title(title).with_default(false))
        .build_unchecked();
    ElicitRequestParams::FormElicitationParams { meta: None, message: message.to_owned(), requested_schema: schema }
}

/// True only for an accepted form with `approve` ticked.
fn approved(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result.content.as_ref().and_then(|c| c.get("approve")).and_then(Value::as_bool) == Some(true)
}

/// Asks within the call (legacy era). No answer, a refusal or an unticked
/// box is a no.
pub async fn ask_now(peer: &Peer<RoleServer>, message: &str) -> bool {
    match peer.create_elicitation_with_timeout(form(message), Some(ANSWER_WITHIN)).await {
        Ok(result) => approved(&result),
        Err(e) => {
            tracing::warn!(error = %e, "the approval question got no answer");
            false
        }
    }
}

/// Asks the person to consent (legacy era, within the call): the same
/// one-box form, titled "Allow". No answer or anything but a tick is a no.
pub async fn consent_now(peer: &Peer<RoleServer>, message: &str) -> bool {
    match peer.create_elicitation_with_timeout(form_titled(message, "Allow"), Some(ANSWER_WITHIN)).await {
        Ok(result) => approved(&result),
        Err(e) => {
            tracing::warn!(error = %e, "the consent question got no answer");
            false
        }
    }
}

/// What the repeat of a call needs once the person answered.
#[derive(Clone)]
pub struct Pending {
    pub tool: String,
    pub args: Map<String, Value>,
    pub approval_key: String,
    pub idempotency_key: String,
    asked: Instant,
}

/// The questions waiting for an answer, by `requestState`.
#[derive(Clone, Default)]
pub struct Pendings(Arc<Mutex<HashMap<String, Pending>>>);

impl Pendings {
    /// Keeps `pending` and answers the `input_required` result that asks.
    pub fn ask_later(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        approval_key: String,
        idempotency_key: String,
        message: &str,
    ) -> InputRequiredResult {
        let state = format!("approval-{}", crate::fresh_key());
        let pending =
            Pending { tool: tool.to_owned(), args: args.clone(), approval_key, idempotency_key, asked: Instant::now() };
        let mut map = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        map.retain(|_, p| p.asked.elapsed() < ANSWER_WITHIN);
        if map.len() >= MAX_PENDING
            && let Some(oldest) = map.iter().min_by_key(|(_, p)| p.asked).map(|(k, _)| k.clone())
        {
            map.remove(&oldest);
        }
        map.insert(state.clone(), pending);
        let question = InputRequest::Elicitation(ElicitRequest::new(form(message)));
        InputRequiredResult::new(Some([(QUESTION.to_owned(), question)].into()), Some(state))
    }

    /// The pending call a repeat names, once: it must be the same tool with
    /// the same arguments. `Ok(true)` when the person approved.
    pub fn answer(
        &self,
        state: &str,
        tool: &str,
        args: &Map<String, Value>,
        responses: Option<&InputResponses>,
    ) -> Result<(Pending, bool), Failure> {
        let taken = {
            let mut map = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            map.remove(state).filter(|p| p.asked.elapsed() < ANSWER_WITHIN)
        };
        let Some(pending) = taken else {
            let mut f =
                Failure::new(REFUSED, "invalid_param", "this requestState is unknown, expired or already answered")
                    .fix("call the tool again without requestState; the person is asked again");
            f.field = Some("requestState".into());
            return Err(f);
        };
        if pending.tool != tool || &pending.args != args {
            return Err(Failure::new(
                REFUSED,
                "invalid_param",
                "a repeat with requestState must be the call that asked, unchanged",
            )
            .fix("call the tool again without requestState; the person is asked again"));
        }
        let result = responses
            .and_then(|r| r.get(QUESTION))
            .and_then(|v| serde_json::from_value::<ElicitResult>(v.clone()).ok());
        let yes = result.as_ref().is_some_and(approved);
        Ok((pending, yes))
    }
}

/// The person said no (or did not answer): nothing ran.
pub fn declined(operation: &str) -> Failure {
    Failure::new(REFUSED, "declined", format!("the person did not approve \"{operation}\"; nothing ran"))
        .fix("do not run it again unless the person asks for it")
        .with("operation", json!(operation))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn state(asked: &InputRequiredResult) -> String {
        asked.request_state.clone().unwrap()
    }

    fn yes() -> InputResponses {
        [(QUESTION.to_owned(), json!({"action": "accept", "content": {"approve": true}}))].into()
    }

    #[test]
    fn a_question_is_answered_once_and_the_oldest_gives_way_past_the_limit() {
        let pendings = Pendings::default();
        let args = Map::from_iter([("app".to_owned(), json!("kanban")), ("name".to_owned(), json!("clear_done"))]);
        let ask =
            |n: usize| state(&pendings.ask_later("run_operation", &args, format!("apv_{n}"), format!("k{n}"), "?"));
        let first = ask(0);
        let rest: Vec<String> = (1..=MAX_PENDING).map(ask).collect();
        // The first was evicted by the 65th question; the others wait.
        assert_eq!(
            pendings.answer(&first, "run_operation", &args, Some(&yes())).err().map(|f| f.code),
            Some("invalid_param".to_owned())
        );
        let (pending, approved) = pendings.answer(&rest[0], "run_operation", &args, Some(&yes())).unwrap();
        assert_eq!((pending.approval_key.as_str(), pending.idempotency_key.as_str(), approved), ("apv_1", "k1", true));
        // Answered once: the same state again is refused.
        assert!(pendings.answer(&rest[0], "run_operation", &args, Some(&yes())).is_err());
        // No answer, a decline, or the box unticked: not approved.
        for responses in
            [None, Some(json!({"action": "decline"})), Some(json!({"action": "accept", "content": {"approve": false}}))]
        {
            let s = ask(100);
            let map: Option<InputResponses> = responses.map(|r| [(QUESTION.to_owned(), r)].into());
            assert!(!pendings.answer(&s, "run_operation", &args, map.as_ref()).unwrap().1);
        }
    }
}
