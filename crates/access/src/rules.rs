//! Per-entity rules of multi-user apps, in PocketBase's grammar.
//!
//! `null` (absent) means only the app's owner (the agent token acting as
//! nobody, like a PocketBase superuser); `""` means anyone; any other text is
//! a filter the record must satisfy, with `@request.auth.*` bound to the
//! signed-in user and `@request.body.*` to the write's body. Single-user apps
//! have no rules: the Origin and token checks are the whole story there.

use crate::caller::Caller;
use crate::context::Context;
use a2app_definition::AuthMode;
use a2app_definition::Error;
use a2app_filter::{self, Expr};
use a2app_store::{QueryContext, RequestInfo};
use protocol::grant::Scope;
use protocol::schema::Rules;
use serde_json::{Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    List,
    View,
    Create,
    Update,
    Delete,
}

/// PocketBase's defaults for its `users` collection: people see and change
/// only themselves; anyone may sign up.
fn users_default() -> Rules {
    let own = Some("id = @request.auth.id".to_owned());
    Rules { list: own.clone(), view: own.clone(), create: Some(String::new()), update: own.clone(), delete: own }
}

/// The rule that applies: `Ok(None)` = allowed outright, `Ok(Some(expr))` =
/// allowed where the record satisfies `expr`, `Err` = refused.
pub fn rule(app: &Context, caller: &Caller, entity: &str, action: Action) -> Result<Option<Expr>, Error> {
    // A grant first needs the scope; then, acting for its person, their rules.
    caller.require(match action {
        Action::List | Action::View => Scope::Read(entity.to_owned()),
        Action::Create | Action::Update | Action::Delete => Scope::Write(entity.to_owned()),
    })?;
    if app.definition.config.auth_mode != AuthMode::MultiUser || caller.is_owner() {
        return Ok(None);
    }
    let declared = app.definition.schema.entities.get(entity).and_then(|e| e.rules.clone());
    let rules = declared
        .unwrap_or_else(|| if entity == a2app_definition::users::ENTITY { users_default() } else { Rules::default() });
    let text = match action {
        Action::List => rules.list,
        Action::View => rules.view,
        Action::Create => rules.create,
        Action::Update => rules.update,
        Action::Delete => rules.delete,
    };
    match text.as_deref().map(str::trim) {
        None => Err(Error::Forbidden(format!(
            "only the app's owner may {} {entity}: its rule is locked",
            match action {
                Action::List | Action::View => "read",
                Action::Create => "create in",
                Action::Update => "update",
                Action::Delete => "delete from",
            }
        ))),
        Some("") => Ok(None),
        // Rules were parsed by `agent-app check`; a failure here is a bug, not input.
        Some(text) => {
            a2app_filter::parse(text).map(Some).map_err(|e| Error::Internal(format!("rule of {entity}: {e}")))
        }
    }
}

/// The `@request` a rule (or a list filter) sees.
pub fn request(caller: &Caller, method: &str, body: Option<&Value>) -> RequestInfo {
    let parts = caller.request.as_deref();
    RequestInfo {
        auth: caller.user.as_ref().map(|u| u.record.clone()),
        method: method.to_owned(),
        headers: parts.map(|p| p.headers.clone()).unwrap_or_default(),
        query: parts.map(|p| p.query.clone()).unwrap_or_default(),
        body: body.and_then(Value::as_object).cloned(),
        context: "default".to_owned(),
    }
}

/// Whether a rule of the app reads the request's headers or query, so a
/// transport must hand them on with the caller (list filters that do are
/// seen by the transport itself: only the agent token may send them).
pub fn reads_request_parts(app: &Context) -> bool {
    app.rules_read_request
}

/// [`reads_request_parts`], judged from the definition when the app opens.
pub fn read_request(definition: &a2app_definition::AppDefinition) -> bool {
    definition.config.auth_mode == AuthMode::MultiUser
        && definition.schema.entities.values().filter_map(|e| e.rules.as_ref()).any(|r| {
            [&r.list, &r.view, &r.create, &r.update, &r.delete]
                .into_iter()
                .flatten()
                .any(|text| text.contains("@request.headers") || text.contains("@request.query"))
        })
}

pub fn context(app: &Context, caller: &Caller, method: &str, body: Option<&Value>) -> QueryContext {
    QueryContext { now: app.clock.now(), request: request(caller, method, body) }
}

/// Whether [`redact`] may change a record of `entity` for this caller.
pub fn may_redact(app: &Context, caller: &Caller, entity: &str) -> bool {
    entity == a2app_definition::users::ENTITY
        && app.definition.config.auth_mode == AuthMode::MultiUser
        && !caller.is_owner()
}

/// Hides a user's email from everyone but that user and the owner, unless
/// the user made it visible (PocketBase's `emailVisibility`).
pub fn redact(app: &Context, caller: &Caller, entity: &str, record: &mut Map<String, Value>) {
    if !may_redact(app, caller, entity) {
        return;
    }
    let own = caller.user.as_ref().is_some_and(|u| record.get("id").and_then(Value::as_str) == Some(u.id.as_str()));
    let visible = record.get("emailVisibility").and_then(Value::as_bool) == Some(true);
    if !own && !visible {
        record.insert("email".into(), Value::String(String::new()));
    }
}
