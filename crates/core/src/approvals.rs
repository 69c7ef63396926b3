//! Approval keys: one call of a destructive operation, confirmed before it
//! runs. A key is bound to who asked (what the caller proved), the operation
//! and its exact params, works once, and expires after
//! [`APPROVAL_LIFETIME`].
//!
//! Who confirms depends on `destructive_consent` and the caller:
//! - `"host"` (the default), and any caller but a grant: the key goes back to
//!   the caller, whose host asks its person and repeats the call with it, as
//!   the source documents describe for hosts;
//! - `"person"`, for an agent holding a grant: the key works only once a
//!   person of the app approved that very call, on the app's page or with
//!   `agent-app approvals`. The person is the one the grant acts for; no
//!   agent credential (the agent token, a grant) can decide.
//!
//! Every decision is audited (`approval.approve`, `approval.deny`).

use crate::app::App;
use a2app_access::caller::{Caller, CallerKind};
use a2app_definition::config::DestructiveConsent;
use a2app_definition::datetime;
use a2app_definition::error::Error;
use a2app_store::blocking;
use a2app_store::{Approval, ApprovedCall, Consent, Refusal, Store};
use jiff::{SignedDuration, Timestamp};
use protocol::operation::WaitingApproval;
use protocol::receipt::Receipt;
use serde_json::{Map, Value};
use std::sync::Arc;

/// How long an approval key stays valid.
pub const APPROVAL_LIFETIME: SignedDuration = SignedDuration::from_mins(15);
/// The most approval keys kept at once; the oldest go first.
const MAX_APPROVALS: usize = 10_000;
/// The audit entity of decisions.
pub const ENTITY: &str = "_a2app_approvals";

/// Lets one call of the destructive operation `operation` through, or says
/// why not: without a key, a new one is issued and the call refused with
/// `approval_required`; with one, the call runs if the key was issued for
/// this very call and, where a person must consent, they approved it.
pub async fn check(
    app: &Arc<App>,
    caller: &Caller,
    operation: &str,
    params: &Map<String, Value>,
    key: Option<&str>,
) -> Result<(), Error> {
    let person =
        caller.kind == CallerKind::Grant && app.definition.config.destructive_consent == DestructiveConsent::Person;
    let asking = Asking {
        consent: if person { Consent::Waiting } else { Consent::Host },
        agent: caller.agent.clone().unwrap_or_default(),
    };
    let call = ApprovedCall { approver: approver(caller), operation: operation.to_owned(), params: params.clone() };
    let (app, key, now) = (Arc::clone(app), key.map(str::to_owned), app.clock.now());
    blocking(move || approve(app.store.as_ref(), call, key.as_deref(), now, asking)).await
}

/// What an issued key waits for, and who asked.
struct Asking {
    consent: Consent,
    agent: String,
}

/// Without a key: stores a new one bound to the caller, the operation and its
/// exact params and refuses with `approval_required`. With a key: lets the
/// call through exactly once if the key was issued for this very call.
/// Blocks on the store's writer (keys are durable): call it off the runtime.
fn approve(
    store: &dyn Store,
    call: ApprovedCall,
    key: Option<&str>,
    now: Timestamp,
    asking: Asking,
) -> Result<(), Error> {
    let at = datetime::format(now);
    let Some(key) = key else {
        let key = format!("apv_{}{}", a2app_definition::id::generate(), a2app_definition::id::generate());
        let expires = datetime::format(now.checked_add(APPROVAL_LIFETIME).unwrap_or(now));
        let (operation, params) = (call.operation.clone(), call.params.clone());
        let person = asking.consent == Consent::Waiting;
        let approval = Approval {
            key: key.clone(),
            call,
            expires,
            used: false,
            consent: asking.consent,
            created: at.clone(),
            agent: asking.agent,
        };
        store.issue_approval(&approval, &at, MAX_APPROVALS)?;
        return Err(Error::ApprovalRequired { key, operation, params, person });
    };
    let refusal = match store.spend_approval(key, &call, &at)? {
        Ok(()) => return Ok(()),
        Err(refusal) => refusal,
    };
    Err(match refusal {
        Refusal::AwaitingPerson => Error::ApprovalRequired {
            key: key.to_owned(),
            operation: call.operation,
            params: call.params,
            person: true,
        },
        Refusal::DeniedByPerson => Error::ApprovalInvalid(
            "a person of the app denied this call; it will not run. Call again without the key only if they want it after all"
                .into(),
        ),
        Refusal::UnknownOrExpired => Error::ApprovalInvalid(
            "this approval key is unknown or expired; call again without it to get a new one for a person to confirm"
                .into(),
        ),
        Refusal::Used => Error::ApprovalInvalid(
            "this approval key was already used: an approval runs the operation once; call again without it to ask anew"
                .into(),
        ),
        Refusal::OtherCaller => Error::ApprovalInvalid(
            "this approval key was issued to another caller; call again without it to ask for your own".into(),
        ),
        Refusal::OtherCall(operation) => Error::ApprovalInvalid(format!(
            "this approval key was issued for \"{operation}\" with other params; a person confirmed that call, not this one: call again without the key to ask for this one"
        )),
    })
}

/// The identity an approval is bound to: what the caller proved (as the rate
/// limiter keys it), so another user cannot spend a key issued to someone else.
fn approver(caller: &Caller) -> String {
    match (&caller.grant, &caller.user) {
        (Some(grant), _) => format!("grant:{}", grant.id),
        (None, Some(user)) => format!("user:{}", user.id),
        (None, None) => caller.kind.as_str().to_owned(),
    }
}

/// Who decides: a person of the app (as `grants` names them: `owner`,
/// `user:<id>`), or the app's owner through its files (`agent-app`).
#[derive(Debug, Clone)]
pub enum Decider {
    Person(Caller),
    Files,
}

/// The calls waiting for `decider`: those of the grants acting for them (all
/// of them, for the owner).
pub async fn waiting(app: &Arc<App>, decider: &Decider) -> Result<Vec<WaitingApproval>, Error> {
    let who = person(app, decider)?;
    let store = Arc::clone(&app.store);
    let now = datetime::format(app.clock.now());
    let all = blocking(move || Ok(store.waiting_approvals(&now)?)).await?;
    let mut out = Vec::new();
    for approval in all {
        if may_decide(app, &who, &approval).await? {
            out.push(shown(&approval));
        }
    }
    Ok(out)
}

/// A person approves (`yes`) or denies one waiting call.
pub async fn decide(app: &Arc<App>, decider: &Decider, key: &str, yes: bool) -> Result<WaitingApproval, Error> {
    let who = person(app, decider)?;
    let store = Arc::clone(&app.store);
    let now = datetime::format(app.clock.now());
    let (k, n) = (key.to_owned(), now.clone());
    let current = blocking(move || Ok(store.approval(&k, &n)?)).await?.ok_or(Error::NotFound)?;
    // A key the host consents to, or one this person may not decide, is
    // not theirs to see.
    if current.consent == Consent::Host || !may_decide(app, &who, &current).await? {
        return Err(Error::NotFound);
    }
    if current.consent != Consent::Waiting || current.used {
        return Err(Error::ApprovalInvalid("this call was decided already".into()));
    }
    let consent = if yes { Consent::Approved(who.clone()) } else { Consent::Denied(who.clone()) };
    let store = Arc::clone(&app.store);
    let (k, n, c) = (key.to_owned(), now.clone(), consent);
    let decided = blocking(move || Ok(store.decide_approval(&k, &c, &n)?))
        .await?
        .ok_or_else(|| Error::ApprovalInvalid("this call was decided already".into()))?;
    let verb = if yes { "approve" } else { "deny" };
    let text = format!(
        "{} \"{}\" for agent \"{}\"",
        if yes { "Approved a call of" } else { "Denied a call of" },
        decided.call.operation,
        decided.agent
    );
    let receipt = Receipt {
        text,
        action: format!("approval.{verb}"),
        entity: ENTITY.into(),
        id: decided.call.operation.clone(),
        fields: decided.call.params.clone(),
        at: now,
        agent: None,
        caller: who,
        before: Default::default(),
    };
    let store = Arc::clone(&app.store);
    blocking(move || Ok(store.audit(&receipt)?)).await?;
    Ok(shown(&decided))
}

/// The person behind a decider, or `forbidden`: agents never decide.
fn person(app: &App, decider: &Decider) -> Result<String, Error> {
    match decider {
        Decider::Files => Ok(a2app_access::grants::OWNER.to_owned()),
        Decider::Person(caller) => a2app_access::grants::person(app, caller).ok_or_else(|| {
            Error::Forbidden(
                "a call waiting for consent is approved or denied by a person: on the app's own page (signed in, in a multi-user app), never by an agent"
                    .into(),
            )
        }),
    }
}

/// Whether `who` decides on `approval`: the person its grant acts for, or
/// the owner.
async fn may_decide(app: &Arc<App>, who: &str, approval: &Approval) -> Result<bool, Error> {
    if who == a2app_access::grants::OWNER {
        return Ok(true);
    }
    let Some(grant) = approval.call.approver.strip_prefix("grant:") else { return Ok(false) };
    Ok(a2app_access::grants::get(app, grant).await.is_ok_and(|g| g.acts_for == who))
}

fn shown(approval: &Approval) -> WaitingApproval {
    let status = match approval.consent {
        Consent::Approved(_) => "approved",
        Consent::Denied(_) => "denied",
        Consent::Host | Consent::Waiting => "waiting",
    };
    WaitingApproval {
        key: approval.key.clone(),
        operation: approval.call.operation.clone(),
        params: approval.call.params.clone(),
        agent: approval.agent.clone(),
        grant: approval.call.approver.strip_prefix("grant:").unwrap_or_default().to_owned(),
        status: status.into(),
        created: approval.created.clone(),
        expires: approval.expires.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(dir: &tempfile::TempDir) -> a2app_store::sqlite::SqliteStore {
        let store = a2app_store::sqlite::SqliteStore::open(&dir.path().join("data.db")).unwrap();
        store.migrate(&protocol::schema::Schema::default(), false).unwrap();
        store
    }

    fn call(approver: &str, operation: &str, n: i64) -> ApprovedCall {
        let params: Map<String, Value> = serde_json::from_value(serde_json::json!({ "n": n })).unwrap();
        ApprovedCall { approver: format!("user:{approver}"), operation: operation.into(), params }
    }

    fn host() -> Asking {
        Asking { consent: Consent::Host, agent: String::new() }
    }

    fn refusal(r: Result<(), Error>) -> String {
        match r {
            Err(Error::ApprovalInvalid(why)) => why,
            other => panic!("expected a refused approval, got {other:?}"),
        }
    }

    #[test]
    fn an_approval_is_bound_to_caller_operation_and_params_and_runs_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        let now: Timestamp = "2026-07-30T09:00:00Z".parse().unwrap();
        let Err(Error::ApprovalRequired { key, operation, params, person: false }) =
            approve(&store, call("ada", "wipe", 1), None, now, host())
        else {
            panic!("no key issued");
        };
        assert_eq!((operation.as_str(), params.get("n")), ("wipe", Some(&Value::from(1))));
        let again = |c, k: &str| approve(&store, c, Some(k), now, host());
        assert!(refusal(again(call("bob", "wipe", 1), &key)).contains("another caller"));
        assert!(refusal(again(call("ada", "other", 1), &key)).contains("issued for \"wipe\""));
        assert!(refusal(again(call("ada", "wipe", 2), &key)).contains("other params"));
        assert!(refusal(again(call("ada", "wipe", 1), "apv_nope")).contains("unknown or expired"));
        assert!(again(call("ada", "wipe", 1), &key).is_ok());
        assert!(refusal(again(call("ada", "wipe", 1), &key)).contains("already used"));
    }

    #[test]
    fn a_key_waiting_for_a_person_works_only_once_they_approved() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir);
        let now: Timestamp = "2026-07-30T09:00:00Z".parse().unwrap();
        let at = datetime::format(now);
        let asking = || Asking { consent: Consent::Waiting, agent: "bot".into() };
        let issue = || match approve(&store, call("ada", "wipe", 1), None, now, asking()) {
            Err(Error::ApprovalRequired { key, person: true, .. }) => key,
            other => panic!("no key issued: {other:?}"),
        };
        let (yes, no) = (issue(), issue());
        // Repeated before anyone decided: still waiting, the same key.
        match approve(&store, call("ada", "wipe", 1), Some(&yes), now, asking()) {
            Err(Error::ApprovalRequired { key, person: true, .. }) => assert_eq!(key, yes),
            other => panic!("ran without the person: {other:?}"),
        }
        let waiting: Vec<String> = store.waiting_approvals(&at).unwrap().into_iter().map(|a| a.key).collect();
        assert_eq!(waiting.len(), 2);
        assert!(store.decide_approval(&yes, &Consent::Approved("owner".into()), &at).unwrap().is_some());
        assert!(store.decide_approval(&yes, &Consent::Denied("owner".into()), &at).unwrap().is_none(), "decided once");
        assert!(store.decide_approval(&no, &Consent::Denied("owner".into()), &at).unwrap().is_some());
        assert!(approve(&store, call("ada", "wipe", 1), Some(&yes), now, asking()).is_ok());
        assert!(refusal(approve(&store, call("ada", "wipe", 1), Some(&no), now, asking())).contains("denied"));
        assert_eq!(store.waiting_approvals(&at).unwrap(), []);
    }

    #[test]
    fn an_approval_survives_a_restart_and_expires_after_its_lifetime() {
        let dir = tempfile::tempdir().unwrap();
        let now: Timestamp = "2026-07-30T09:00:00Z".parse().unwrap();
        let issue = |store: &dyn Store| match approve(store, call("ada", "wipe", 1), None, now, host()) {
            Err(Error::ApprovalRequired { key, .. }) => key,
            other => panic!("no key issued: {other:?}"),
        };
        let (kept, late) = {
            let before = store(&dir);
            (issue(&before), issue(&before))
        };
        // A new process on the same file: the person confirmed, the server restarted.
        let after = store(&dir);
        let later = now.checked_add(SignedDuration::from_mins(14)).unwrap();
        assert!(approve(&after, call("ada", "wipe", 1), Some(&kept), later, host()).is_ok());
        let expired = now.checked_add(APPROVAL_LIFETIME).unwrap();
        assert!(
            refusal(approve(&after, call("ada", "wipe", 1), Some(&late), expired, host()))
                .contains("unknown or expired")
        );
    }
}
