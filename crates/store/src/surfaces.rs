//! A batch of A2UI messages applied to the surfaces it names, the same way in
//! every store: each touched surface is loaded once, the batch is applied to
//! their states all or nothing, the app's surface limit is checked, and only
//! then is anything written. A store supplies its rows ([`SurfaceRows`]) and
//! runs this in one transaction, so a refused batch writes nothing.

use crate::{Rendered, StoreError};
use a2app_a2ui::{Doc, Message, Surface};
use indexmap::IndexMap;
use protocol::{ErrorCode, Violation};

/// Most surfaces one app keeps.
pub const MAX_SURFACES: u64 = 200;

/// A store's surface rows, inside its transaction.
pub(crate) trait SurfaceRows {
    type Error: From<StoreError>;

    /// A surface's snapshot bytes, if it exists.
    fn load(&mut self, id: &str) -> Result<Option<Vec<u8>>, Self::Error>;
    /// How many surfaces the app keeps.
    fn count(&mut self) -> Result<i64, Self::Error>;
    fn save(&mut self, id: &str, snapshot: &[u8], now: &str) -> Result<(), Self::Error>;
    fn delete(&mut self, id: &str) -> Result<(), Self::Error>;
}

/// A stored snapshot as its document.
pub(crate) fn doc(id: &str, snapshot: &[u8]) -> Result<Doc, StoreError> {
    Doc::from_snapshot(snapshot).map_err(|e| StoreError::Internal(format!("surface {id}: {e}")))
}

/// A document's surface state.
pub(crate) fn state(doc: &Doc) -> Result<Surface, StoreError> {
    doc.read().map_err(|e| StoreError::Internal(e.to_string()))
}

/// Applies `messages`; answers each touched surface's id and state (`None`:
/// deleted), or every problem, with nothing written.
pub(crate) fn render<R: SurfaceRows>(rows: &mut R, messages: &[Message], now: &str) -> Result<Rendered, R::Error> {
    let mut docs: IndexMap<String, Option<Doc>> = IndexMap::new();
    let mut states: IndexMap<String, Option<Surface>> = IndexMap::new();
    for m in messages {
        let id = m.surface_id();
        if !docs.contains_key(id) {
            let doc = rows.load(id)?.map(|bytes| doc(id, &bytes)).transpose()?;
            states.insert(id.to_owned(), doc.as_ref().map(state).transpose()?);
            docs.insert(id.to_owned(), doc);
        }
    }
    let existed: Vec<bool> = states.values().map(Option::is_some).collect();
    let touched = match a2app_a2ui::apply(messages.to_vec(), &mut states) {
        Ok(t) => t,
        Err(problems) => return Ok(Err(problems)),
    };
    let created = states.values().zip(&existed).filter(|(s, e)| s.is_some() && !**e).count() as u64;
    let deleted = states.values().zip(&existed).filter(|(s, e)| s.is_none() && **e).count() as u64;
    let held = rows.count()?;
    if created > deleted && held.max(0) as u64 + created - deleted > MAX_SURFACES {
        let v = Violation::new(
            ErrorCode::OutOfRange,
            format!("an app keeps at most {MAX_SURFACES} surfaces; deleteSurface the ones done with"),
        );
        return Ok(Err(vec![v]));
    }
    let mut out = Vec::new();
    for id in touched {
        let state = states.get(&id).cloned().flatten();
        match &state {
            Some(surface) => {
                let doc = docs.get_mut(&id).and_then(Option::take).unwrap_or_default();
                doc.write(surface).map_err(|e| StoreError::Internal(e.to_string()))?;
                let bytes = doc.snapshot().map_err(|e| StoreError::Internal(e.to_string()))?;
                rows.save(&id, &bytes, now)?;
            }
            None => rows.delete(&id)?,
        }
        out.push((id, state));
    }
    Ok(Ok(out))
}
