//! A2UI surfaces in PostgreSQL (`_a2app_surfaces`), rendered by
//! `store::surfaces::render` in one transaction. Every render holds one
//! advisory lock until it commits, so batches from any node apply one after
//! the other: none loses another's changes, and the app's surface limit
//! counts what the one before stored. Surfaces are few and small; a lock per
//! app costs nothing a person would notice.

use super::Fail;
use super::Tx;
use crate::Rendered;
use crate::surfaces::{self, SurfaceRows};
use a2app_a2ui::{Message, Surface};
use postgres::GenericClient;

struct Rows<'d, D>(&'d mut D);

impl<D: GenericClient> SurfaceRows for Rows<'_, D> {
    type Error = Fail;

    fn load(&mut self, id: &str) -> Result<Option<Vec<u8>>, Fail> {
        Ok(self.0.query_opt("SELECT doc FROM _a2app_surfaces WHERE id = $1", &[&id])?.map(|r| r.get(0)))
    }

    fn count(&mut self) -> Result<i64, Fail> {
        Ok(self.0.query_one("SELECT COUNT(*) FROM _a2app_surfaces", &[])?.get(0))
    }

    fn save(&mut self, id: &str, snapshot: &[u8], now: &str) -> Result<(), Fail> {
        self.0.execute(
            "INSERT INTO _a2app_surfaces (id, doc, updated) VALUES ($1, $2, $3) \
             ON CONFLICT (id) DO UPDATE SET doc = excluded.doc, updated = excluded.updated",
            &[&id, &snapshot, &now],
        )?;
        Ok(())
    }

    fn delete(&mut self, id: &str) -> Result<(), Fail> {
        self.0.execute("DELETE FROM _a2app_surfaces WHERE id = $1", &[&id])?;
        Ok(())
    }
}

pub fn render(tx: &mut Tx<'_>, messages: &[Message], now: &str) -> Result<Rendered, Fail> {
    super::lock(tx.raw(), super::Lock::Render)?;
    surfaces::render(&mut Rows(tx.raw()), messages, now)
}

pub fn get(db: &mut impl GenericClient, id: &str) -> Result<Option<Surface>, Fail> {
    let Some(bytes) = Rows(db).load(id)? else { return Ok(None) };
    Ok(Some(surfaces::state(&surfaces::doc(id, &bytes)?)?))
}

/// Every surface's id and when it last changed, newest first.
pub fn list(db: &mut impl GenericClient) -> Result<Vec<(String, String)>, Fail> {
    let rows = db.query("SELECT id, updated FROM _a2app_surfaces ORDER BY updated DESC, id COLLATE \"C\"", &[])?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}
