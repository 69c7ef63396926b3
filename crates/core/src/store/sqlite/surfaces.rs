//! A2UI surfaces in SQLite (`_a2app_surfaces`): one row per surface, its
//! Loro document's snapshot bytes. A batch of messages is read, applied and
//! written in one writer task, so two batches on one surface never lose
//! each other's changes, and a refused batch writes nothing.

use crate::store::{Rendered, StoreError};
use a2app_a2ui::{Doc, Message, Surface};
use indexmap::IndexMap;
use protocol::{ErrorCode, Violation};
use rusqlite::{Connection, OptionalExtension};

/// Most surfaces one app keeps.
pub const MAX_SURFACES: u64 = 200;

fn load(conn: &Connection, id: &str) -> Result<Option<Doc>, StoreError> {
    let bytes: Option<Vec<u8>> = conn
        .prepare_cached("SELECT doc FROM _a2app_surfaces WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?;
    bytes.map(|b| Doc::from_snapshot(&b).map_err(|e| StoreError::Internal(format!("surface {id}: {e}")))).transpose()
}

fn read(doc: &Doc) -> Result<Surface, StoreError> {
    doc.read().map_err(|e| StoreError::Internal(e.to_string()))
}

/// Applies `messages`; answers each touched surface's id and state (`None`:
/// deleted), or every problem, with nothing written.
pub fn render(conn: &Connection, messages: &[Message], now: &str) -> Result<Rendered, StoreError> {
    let mut docs: IndexMap<String, Option<Doc>> = IndexMap::new();
    let mut states: IndexMap<String, Option<Surface>> = IndexMap::new();
    for m in messages {
        let id = m.surface_id();
        if !docs.contains_key(id) {
            let doc = load(conn, id)?;
            states.insert(id.to_owned(), doc.as_ref().map(read).transpose()?);
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
    let held: i64 = conn.prepare_cached("SELECT COUNT(*) FROM _a2app_surfaces")?.query_row([], |r| r.get(0))?;
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
                conn.prepare_cached(
                    "INSERT INTO _a2app_surfaces (id, doc, updated) VALUES (?1, ?2, ?3)
                     ON CONFLICT(id) DO UPDATE SET doc = excluded.doc, updated = excluded.updated",
                )?
                .execute(rusqlite::params![id, bytes, now])?;
            }
            None => {
                conn.prepare_cached("DELETE FROM _a2app_surfaces WHERE id = ?1")?.execute([&id])?;
            }
        }
        out.push((id, state));
    }
    Ok(Ok(out))
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<Surface>, StoreError> {
    load(conn, id)?.as_ref().map(read).transpose()
}

/// Every surface's id and when it last changed, newest first.
pub fn list(conn: &Connection) -> Result<Vec<(String, String)>, StoreError> {
    let rows = conn
        .prepare_cached("SELECT id, updated FROM _a2app_surfaces ORDER BY updated DESC, id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
