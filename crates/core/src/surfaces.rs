//! A2UI surfaces (DESIGN §8): what an agent shows the person, kept by the
//! app. A batch of A2UI v1.0 messages is checked against the catalog
//! (`a2app_a2ui`) with every problem reported at once, then applied to the
//! stored surfaces all or nothing; each surface's state is a Loro document.
//!
//! A button may only call this app's own tools, named here: pressing it is
//! the person's act, and a renderer asks them before any write it makes.
//! Who may render is the transport's rule (a write: the agent token).

use crate::app::App;
use a2app_a2ui::{Rules, Surface};
use a2app_definition::error::Error;
use a2app_store::blocking;
use protocol::{ErrorCode, Violation};
use serde_json::{Value, json};
use std::sync::Arc;

/// The tools a button's event may name: the record tools and operations.
pub const ACTIONS: &[&str] = &["query", "get", "create", "update", "delete", "run_operation"];

/// Who may use surfaces: any writer (the agent token, the app's own page)
/// but a grant, whose scopes name entities and operations, not what the
/// person typed into another agent's form.
pub fn may_use(caller: &a2app_access::caller::Caller) -> Result<(), Error> {
    if caller.grant.is_some() {
        return Err(Error::Forbidden("surfaces are not open to grants; they take the agent token".into()));
    }
    Ok(())
}

/// Checks and applies a batch; answers the touched surfaces as
/// `createSurface` messages (a deleted one as its `deleteSurface`).
pub async fn render(app: &Arc<App>, batch: &Value) -> Result<Vec<Value>, Error> {
    let messages = a2app_a2ui::parse(batch, &Rules { actions: ACTIONS }).map_err(Error::Invalid)?;
    let store = Arc::clone(&app.store);
    let now = a2app_definition::datetime::format(app.clock.now());
    let rendered = blocking(move || Ok(store.render_surfaces(&messages, &now)?)).await?.map_err(Error::Invalid)?;
    Ok(rendered.iter().map(|(id, state)| as_message(id, state.as_ref())).collect())
}

/// One surface as a `createSurface` message: its components and its data
/// model (what the person entered, once a renderer wrote it back).
pub async fn get(app: &Arc<App>, id: &str) -> Result<Value, Error> {
    let store = Arc::clone(&app.store);
    let key = id.to_owned();
    match blocking(move || Ok(store.surface(&key)?)).await? {
        Some(s) => Ok(as_message(id, Some(&s))),
        None => Err(unknown(id)),
    }
}

/// Every surface's id and when it last changed, newest first.
pub async fn list(app: &Arc<App>) -> Result<Vec<Value>, Error> {
    let store = Arc::clone(&app.store);
    let rows = blocking(move || Ok(store.surfaces()?)).await?;
    Ok(rows.into_iter().map(|(id, updated)| json!({"surfaceId": id, "updated": updated})).collect())
}

fn as_message(id: &str, state: Option<&Surface>) -> Value {
    match state {
        Some(s) => s.to_message(id),
        None => json!({"version": a2app_a2ui::VERSION, "deleteSurface": {"surfaceId": id}}),
    }
}

fn unknown(id: &str) -> Error {
    Error::Invalid(vec![
        Violation::new(ErrorCode::UnknownSurface, format!("no surface {id}; createSurface makes one"))
            .field("surfaceId")
            .got(Value::from(id)),
    ])
}
