//! A2UI surfaces in SQLite (`_a2app_surfaces`): one row per surface, its
//! Loro document's snapshot bytes. A batch runs in one writer task
//! (`store::surfaces::render`), so two batches on one surface never lose
//! each other's changes, and a refused batch writes nothing.

use crate::surfaces::{self, SurfaceRows};
use crate::{Rendered, StoreError};
use a2app_a2ui::{Message, Surface};
use rusqlite::{Connection, OptionalExtension};

struct Rows<'c>(&'c Connection);

impl SurfaceRows for Rows<'_> {
    type Error = StoreError;

    fn load(&mut self, id: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self
            .0
            .prepare_cached("SELECT doc FROM _a2app_surfaces WHERE id = ?1")?
            .query_row([id], |r| r.get(0))
            .optional()?)
    }

    fn count(&mut self) -> Result<i64, StoreError> {
        Ok(self.0.prepare_cached("SELECT COUNT(*) FROM _a2app_surfaces")?.query_row([], |r| r.get(0))?)
    }

    fn save(&mut self, id: &str, snapshot: &[u8], now: &str) -> Result<(), StoreError> {
        self.0
            .prepare_cached(
                "INSERT INTO _a2app_surfaces (id, doc, updated) VALUES (?1, ?2, ?3)
                 ON CONFLICT(id) DO UPDATE SET doc = excluded.doc, updated = excluded.updated",
            )?
            .execute(rusqlite::params![id, snapshot, now])?;
        Ok(())
    }

    fn delete(&mut self, id: &str) -> Result<(), StoreError> {
        self.0.prepare_cached("DELETE FROM _a2app_surfaces WHERE id = ?1")?.execute([id])?;
        Ok(())
    }
}

/// Applies `messages`; answers each touched surface's id and state (`None`:
/// deleted), or every problem, with nothing written.
pub fn render(conn: &Connection, messages: &[Message], now: &str) -> Result<Rendered, StoreError> {
    surfaces::render(&mut Rows(conn), messages, now)
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<Surface>, StoreError> {
    let Some(bytes) = Rows(conn).load(id)? else { return Ok(None) };
    surfaces::state(&surfaces::doc(id, &bytes)?).map(Some)
}

/// Every surface's id and when it last changed, newest first.
pub fn list(conn: &Connection) -> Result<Vec<(String, String)>, StoreError> {
    let rows = conn
        .prepare_cached("SELECT id, updated FROM _a2app_surfaces ORDER BY updated DESC, id")?
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
