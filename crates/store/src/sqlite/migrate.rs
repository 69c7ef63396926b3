//! Schema migration at launch, in SQLite's SQL.
//!
//! The schema last applied is kept in `_a2app_meta`; the new one is compared
//! with it (and with the tables that really exist) by `store::migration`'s
//! plan, whose steps this module writes.

use super::row::{column_decl, quote};
use crate::migration::{self, Tables};
use crate::{Migration, StoreError};
use protocol::schema::{Entity, FieldType, Schema};
use rusqlite::{Connection, OptionalExtension};
use std::collections::HashMap;

const META: &str = "_a2app_meta";

/// The runtime's own tables. Entity names cannot start with `_`, so these never collide.
///
/// Every write adds an audit entry, and a keyed one a key: each B-tree here costs a
/// page in every commit's WAL. Keys live in their primary key (`WITHOUT
/// ROWID`: no separate rowid table), and audit entries take the next rowid
/// without `AUTOINCREMENT`, which would also rewrite `sqlite_sequence`; entries
/// are never deleted, so the next rowid is always above every earlier one.
/// A single keyed create appends about a sixth fewer WAL frames (docs/decisions/0016).
/// Databases made before keep their tables: both shapes behave the same.
const INTERNAL_TABLES: &str = "
    CREATE TABLE IF NOT EXISTS _a2app_keys (
        entity TEXT NOT NULL, key TEXT NOT NULL, record_id TEXT NOT NULL, created TEXT NOT NULL,
        PRIMARY KEY (entity, key)) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS _a2app_keys_created ON _a2app_keys (created);
    CREATE TABLE IF NOT EXISTS _a2app_audit (
        seq INTEGER PRIMARY KEY, at TEXT NOT NULL, entity TEXT NOT NULL, record_id TEXT NOT NULL,
        action TEXT NOT NULL, agent TEXT, caller TEXT NOT NULL, receipt TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_audit_at ON _a2app_audit (at);
    CREATE TABLE IF NOT EXISTS _a2app_auth (
        user_id TEXT PRIMARY KEY NOT NULL, password_hash TEXT NOT NULL, token_key TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_jobs (
        id TEXT PRIMARY KEY NOT NULL, operation TEXT NOT NULL, state TEXT NOT NULL, job TEXT NOT NULL,
        created TEXT NOT NULL, updated TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_jobs_state ON _a2app_jobs (state);
    CREATE TABLE IF NOT EXISTS _a2app_schedule (
        operation TEXT PRIMARY KEY NOT NULL, last_run TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_surfaces (
        id TEXT PRIMARY KEY NOT NULL, doc BLOB NOT NULL, updated TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_requests (
        id TEXT PRIMARY KEY NOT NULL, capability TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL,
        requested_by TEXT NOT NULL, created TEXT NOT NULL, updated TEXT NOT NULL, claimed_by TEXT,
        lease_until TEXT, result TEXT, failure TEXT, claim_hash TEXT);
    CREATE INDEX IF NOT EXISTS _a2app_requests_open ON _a2app_requests (status, created);
    CREATE TABLE IF NOT EXISTS _a2app_grants (
        id TEXT PRIMARY KEY NOT NULL, agent TEXT NOT NULL, public_key TEXT NOT NULL, fingerprint TEXT NOT NULL,
        scopes TEXT NOT NULL, status TEXT NOT NULL, acts_for TEXT NOT NULL, created TEXT NOT NULL,
        updated TEXT NOT NULL, expires TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_grants_status ON _a2app_grants (status, created);
    CREATE TABLE IF NOT EXISTS _a2app_grant_tokens (
        hash TEXT PRIMARY KEY NOT NULL, grant_id TEXT NOT NULL, created TEXT NOT NULL, expires TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_grant_tokens_grant ON _a2app_grant_tokens (grant_id, created);
    CREATE TABLE IF NOT EXISTS _a2app_grant_nonces (
        grant_id TEXT NOT NULL, nonce TEXT NOT NULL, expires TEXT NOT NULL, PRIMARY KEY (grant_id, nonce));
    CREATE TABLE IF NOT EXISTS _a2app_oauth_clients (
        client_id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, redirect_uris TEXT NOT NULL, used TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_oauth_requests (
        grant_id TEXT PRIMARY KEY NOT NULL, client_id TEXT NOT NULL, redirect_uri TEXT NOT NULL,
        challenge TEXT NOT NULL, state TEXT, audience TEXT NOT NULL, code_hash TEXT UNIQUE, code_expires TEXT);
    CREATE TABLE IF NOT EXISTS _a2app_refresh_tokens (
        hash TEXT PRIMARY KEY NOT NULL, grant_id TEXT NOT NULL, audience TEXT NOT NULL, created TEXT NOT NULL,
        expires TEXT NOT NULL, used INTEGER NOT NULL DEFAULT 0);
    CREATE INDEX IF NOT EXISTS _a2app_refresh_tokens_grant ON _a2app_refresh_tokens (grant_id);
    CREATE TABLE IF NOT EXISTS _a2app_approvals (
        key TEXT PRIMARY KEY NOT NULL, approver TEXT NOT NULL, operation TEXT NOT NULL, params TEXT NOT NULL,
        expires TEXT NOT NULL, used INTEGER NOT NULL DEFAULT 0);
    CREATE TABLE IF NOT EXISTS _a2app_refused (
        seq INTEGER PRIMARY KEY, at TEXT NOT NULL, caller TEXT NOT NULL, agent TEXT, action TEXT NOT NULL,
        entity TEXT NOT NULL, record_id TEXT NOT NULL, body TEXT NOT NULL, violations TEXT NOT NULL,
        text TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_refused_at ON _a2app_refused (at);
    CREATE TABLE IF NOT EXISTS _a2app_claim_checks (
        seq INTEGER PRIMARY KEY, at TEXT NOT NULL, caller TEXT NOT NULL, agent TEXT, verdict TEXT NOT NULL,
        discrepancies TEXT NOT NULL, cursor TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_claim_checks_caller ON _a2app_claim_checks (caller, agent, seq);
";

/// Columns the runtime's tables gained after they were first made, for
/// databases made before: `(table, column declaration)`.
const ADDED_COLUMNS: &[(&str, &str)] = &[
    // The OAuth client behind a grant (JSON), none for a key's grant.
    ("_a2app_grants", "client TEXT"),
    // Where an ask came from, for the per-source bound and the person's view.
    ("_a2app_grants", "source TEXT NOT NULL DEFAULT ''"),
    // The one resource an OAuth access token is good for.
    ("_a2app_grant_tokens", "audience TEXT"),
    // The hash of an OAuth request's code once traded, to see it presented again.
    ("_a2app_oauth_requests", "spent_code TEXT"),
    // A destructive call's consent (`store::Consent`), when it was asked and by which agent.
    ("_a2app_approvals", "consent TEXT NOT NULL DEFAULT ''"),
    ("_a2app_approvals", "created TEXT NOT NULL DEFAULT ''"),
    ("_a2app_approvals", "agent TEXT NOT NULL DEFAULT ''"),
];

fn add_column(tx: &Connection, table: &str, declaration: &str) -> Result<(), StoreError> {
    let name = declaration.split_whitespace().next().unwrap_or(declaration);
    let present: bool =
        tx.query_row("SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2", [table, name], |r| r.get(0))?;
    if !present {
        tx.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {declaration}"))?;
    }
    Ok(())
}

/// Runs in the writer's transaction: a refusal rolls every step back (a
/// migration's failure always rolls its transaction back; see `writer`).
pub fn migrate(tx: &Connection, schema: &Schema, allow_destructive: bool) -> Result<Migration, StoreError> {
    tx.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL)"
    ))?;
    tx.execute_batch(INTERNAL_TABLES)?;
    for (table, column) in ADDED_COLUMNS {
        add_column(tx, table, column)?;
    }
    // On an added column, so made after it.
    tx.execute_batch("CREATE INDEX IF NOT EXISTS _a2app_oauth_requests_spent ON _a2app_oauth_requests (spent_code)")?;
    let previous: Schema = tx
        .query_row(&format!("SELECT value FROM {META} WHERE key = 'schema'"), [], |r| r.get::<_, String>(0))
        .optional()?
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default();
    let done = migration::apply(&mut Sqlite(tx), &previous, schema, allow_destructive)?;
    let text = serde_json::to_string(schema).map_err(|e| StoreError::Internal(e.to_string()))?;
    tx.execute(&format!("INSERT INTO {META} (key, value) VALUES ('schema', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value"), [text])?;
    Ok(done)
}

/// The migration's steps on one SQLite connection.
struct Sqlite<'c>(&'c Connection);

impl Tables for Sqlite<'_> {
    type Error = StoreError;

    fn table_exists(&mut self, name: &str) -> Result<bool, StoreError> {
        Ok(self
            .0
            .query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// Column name → declared type (upper case).
    fn columns(&mut self, table: &str) -> Result<HashMap<String, String>, StoreError> {
        let mut stmt = self.0.prepare(&format!("PRAGMA table_info({})", quote(table)))?;
        let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?.to_uppercase())))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn holds_type(&self, stored: &str, kind: &FieldType) -> bool {
        column_decl(kind).starts_with(stored)
    }

    fn create_table(&mut self, name: &str, entity: &Entity) -> Result<(), StoreError> {
        let mut cols = vec!["\"id\" TEXT PRIMARY KEY NOT NULL".to_owned()];
        for (field, spec) in &entity.fields {
            cols.push(format!("{} {}", quote(field), column_decl(&spec.kind)));
        }
        cols.push("\"created\" TEXT NOT NULL DEFAULT ''".into());
        cols.push("\"updated\" TEXT NOT NULL DEFAULT ''".into());
        Ok(self.0.execute_batch(&format!("CREATE TABLE {} ({})", quote(name), cols.join(", ")))?)
    }

    fn drop_table(&mut self, name: &str) -> Result<(), StoreError> {
        Ok(self.0.execute_batch(&format!("DROP TABLE {}", quote(name)))?)
    }

    fn count(&mut self, table: &str) -> Result<i64, StoreError> {
        Ok(self.0.query_row(&format!("SELECT COUNT(*) FROM {}", quote(table)), [], |r| r.get(0))?)
    }

    fn add_column(&mut self, table: &str, column: &str, kind: &FieldType) -> Result<(), StoreError> {
        let sql = format!("ALTER TABLE {} ADD COLUMN {} {}", quote(table), quote(column), column_decl(kind));
        Ok(self.0.execute_batch(&sql)?)
    }

    /// SQLite refuses to drop an indexed column: the runtime's indexes
    /// covering it go first, the users' email index too.
    fn drop_column(&mut self, table: &str, column: &str) -> Result<(), StoreError> {
        for index in self.indexes_named(table, "a2app_")? {
            let mut stmt = self.0.prepare(&format!("PRAGMA index_info({})", quote(&index)))?;
            let cols: Vec<String> = stmt.query_map([], |r| r.get(2))?.collect::<Result<_, _>>()?;
            if cols.iter().any(|c| c == column) {
                self.drop_index(&index)?;
            }
        }
        Ok(self.0.execute_batch(&format!("ALTER TABLE {} DROP COLUMN {}", quote(table), quote(column)))?)
    }

    fn rows_holding(&mut self, table: &str, column: &str) -> Result<i64, StoreError> {
        let c = quote(column);
        let sql =
            format!("SELECT COUNT(*) FROM {} WHERE {c} IS NOT NULL AND {c} NOT IN ('', 0, '[]', 'null')", quote(table));
        Ok(self.0.query_row(&sql, [], |r| r.get(0))?)
    }

    fn index(&self, name: &str) -> String {
        name.to_owned()
    }

    fn indexes_named(&mut self, table: &str, prefix: &str) -> Result<Vec<String>, StoreError> {
        let mut stmt = self.0.prepare(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 AND substr(name, 1, length(?2)) = ?2",
        )?;
        Ok(stmt.query_map([table, prefix], |r| r.get(0))?.collect::<Result<_, _>>()?)
    }

    fn create_index(&mut self, name: &str, table: &str, columns: &[String]) -> Result<(), StoreError> {
        let list: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        Ok(self.0.execute_batch(&format!("CREATE INDEX {} ON {} ({})", quote(name), quote(table), list.join(", ")))?)
    }

    fn drop_index(&mut self, name: &str) -> Result<(), StoreError> {
        Ok(self.0.execute_batch(&format!("DROP INDEX {}", quote(name)))?)
    }

    fn shared_email(&mut self, table: &str) -> Result<Option<String>, StoreError> {
        let sql = format!(
            "SELECT \"email\" FROM {} WHERE \"email\" != '' GROUP BY \"email\" COLLATE NOCASE HAVING COUNT(*) > 1 LIMIT 1",
            quote(table)
        );
        Ok(self.0.query_row(&sql, [], |r| r.get::<_, String>(0)).optional()?)
    }

    fn create_email_index(&mut self, name: &str, table: &str) -> Result<(), StoreError> {
        let sql = format!(
            "CREATE UNIQUE INDEX {} ON {} (\"email\" COLLATE NOCASE) WHERE \"email\" != ''",
            quote(name),
            quote(table)
        );
        Ok(self.0.execute_batch(&sql)?)
    }
}
