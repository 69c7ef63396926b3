//! Schema migration at launch, in PostgreSQL's SQL: the schema last applied
//! is kept in `_a2app_meta`, and `store::migration`'s plan, shared with the
//! SQLite store, decides what applies and what is refused.
//!
//! PostgreSQL's DDL is transactional, so a refused or failed migration leaves
//! nothing behind; and several nodes starting at once take turns on an
//! advisory lock, so each finds the tables the one before it made.

use super::row::{column_decl, column_type};
use super::{Fail, quote};
use crate::migration::{self, Tables};
use crate::{Migration, StoreError};
use postgres::Transaction;
use protocol::schema::{Entity, FieldType, Schema};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// Emails are compared with ASCII letters folded only, as SQLite's `NOCASE`
/// does (PostgreSQL's `lower` would fold others too, by the server's locale):
/// `translate(email, UPPER, LOWER)`, in the unique index and in lookups alike.
const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";

/// `email` folded as [`UPPER`] says, in SQL (constants written out, so a
/// lookup's expression is the index's).
pub(super) fn folded(column: &str) -> String {
    format!("translate({column}, '{UPPER}', '{LOWER}')")
}

/// PostgreSQL's longest identifier, in bytes; a longer one is cut silently.
const MAX_IDENTIFIER: usize = 63;

/// The runtime's own tables, as the SQLite store has them (see
/// `sqlite::migrate`); entity names cannot start with `_`.
const INTERNAL_TABLES: &str = "
    CREATE TABLE IF NOT EXISTS _a2app_meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_keys (
        entity text NOT NULL, key text NOT NULL, record_id text NOT NULL, created text NOT NULL,
        PRIMARY KEY (entity, key));
    CREATE INDEX IF NOT EXISTS _a2app_keys_created ON _a2app_keys (created);
    CREATE TABLE IF NOT EXISTS _a2app_audit (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at text NOT NULL, entity text NOT NULL,
        record_id text NOT NULL, action text NOT NULL, agent text, caller text NOT NULL, receipt text NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_audit_at ON _a2app_audit (at);
    CREATE TABLE IF NOT EXISTS _a2app_auth (
        user_id text PRIMARY KEY, password_hash text NOT NULL, token_key text NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_jobs (
        id text PRIMARY KEY, operation text NOT NULL, state text NOT NULL, job text NOT NULL,
        created text NOT NULL, updated text NOT NULL, node bigint);
    CREATE INDEX IF NOT EXISTS _a2app_jobs_state ON _a2app_jobs (state);
    CREATE TABLE IF NOT EXISTS _a2app_schedule (operation text PRIMARY KEY, last_run text NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_surfaces (id text PRIMARY KEY, doc bytea NOT NULL, updated text NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_requests (
        id text PRIMARY KEY, capability text NOT NULL, params text NOT NULL, status text NOT NULL,
        requested_by text NOT NULL, created text NOT NULL, updated text NOT NULL, claimed_by text,
        lease_until text, result text, failure text, claim_hash text);
    CREATE INDEX IF NOT EXISTS _a2app_requests_open ON _a2app_requests (status, created);
    CREATE TABLE IF NOT EXISTS _a2app_grants (
        id text PRIMARY KEY, agent text NOT NULL, public_key text NOT NULL, fingerprint text NOT NULL,
        scopes text NOT NULL, status text NOT NULL, acts_for text NOT NULL, created text NOT NULL,
        updated text NOT NULL, expires text NOT NULL, client text);
    ALTER TABLE _a2app_grants ADD COLUMN IF NOT EXISTS source text NOT NULL DEFAULT '';
    CREATE INDEX IF NOT EXISTS _a2app_grants_status ON _a2app_grants (status, created);
    CREATE TABLE IF NOT EXISTS _a2app_grant_tokens (
        hash text PRIMARY KEY, grant_id text NOT NULL, created text NOT NULL, expires text NOT NULL, audience text);
    CREATE INDEX IF NOT EXISTS _a2app_grant_tokens_grant ON _a2app_grant_tokens (grant_id, created);
    CREATE TABLE IF NOT EXISTS _a2app_grant_nonces (
        grant_id text NOT NULL, nonce text NOT NULL, expires text NOT NULL, PRIMARY KEY (grant_id, nonce));
    CREATE TABLE IF NOT EXISTS _a2app_oauth_clients (
        client_id text PRIMARY KEY, name text NOT NULL, redirect_uris text NOT NULL, used text NOT NULL);
    CREATE TABLE IF NOT EXISTS _a2app_oauth_requests (
        grant_id text PRIMARY KEY, client_id text NOT NULL, redirect_uri text NOT NULL,
        challenge text NOT NULL, state text, audience text NOT NULL, code_hash text UNIQUE, code_expires text,
        spent_code text);
    CREATE INDEX IF NOT EXISTS _a2app_oauth_requests_spent ON _a2app_oauth_requests (spent_code);
    CREATE TABLE IF NOT EXISTS _a2app_refresh_tokens (
        hash text PRIMARY KEY, grant_id text NOT NULL, audience text NOT NULL, created text NOT NULL,
        expires text NOT NULL, used integer NOT NULL DEFAULT 0);
    CREATE INDEX IF NOT EXISTS _a2app_refresh_tokens_grant ON _a2app_refresh_tokens (grant_id);
    CREATE TABLE IF NOT EXISTS _a2app_changes (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, at text NOT NULL, entity text NOT NULL,
        action text NOT NULL, record text NOT NULL);
    CREATE INDEX IF NOT EXISTS _a2app_changes_at ON _a2app_changes (at);
    CREATE TABLE IF NOT EXISTS _a2app_approvals (
        key text PRIMARY KEY, approver text NOT NULL, operation text NOT NULL, params text NOT NULL,
        expires text NOT NULL, used integer NOT NULL DEFAULT 0);
    ALTER TABLE _a2app_approvals ADD COLUMN IF NOT EXISTS consent text NOT NULL DEFAULT '';
    ALTER TABLE _a2app_approvals ADD COLUMN IF NOT EXISTS created text NOT NULL DEFAULT '';
    ALTER TABLE _a2app_approvals ADD COLUMN IF NOT EXISTS agent text NOT NULL DEFAULT '';
";

/// Runs in one transaction: a refusal or a failure rolls every step back.
pub fn migrate(tx: &mut Transaction<'_>, schema: &Schema, allow_destructive: bool) -> Result<Migration, Fail> {
    super::lock(tx, super::Lock::Migration)?;
    tx.batch_execute(INTERNAL_TABLES)?;
    let previous: Schema = tx
        .query_opt("SELECT value FROM _a2app_meta WHERE key = 'schema'", &[])?
        .and_then(|row| serde_json::from_str(row.get::<_, &str>(0)).ok())
        .unwrap_or_default();
    let done = migration::apply(&mut Postgres(tx), &previous, schema, allow_destructive)?;
    let text = serde_json::to_string(schema).map_err(|e| StoreError::Internal(e.to_string()))?;
    tx.execute(
        "INSERT INTO _a2app_meta (key, value) VALUES ('schema', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&text],
    )?;
    Ok(done)
}

/// The migration's steps in one PostgreSQL transaction.
struct Postgres<'t, 'c>(&'t mut Transaction<'c>);

impl Tables for Postgres<'_, '_> {
    type Error = Fail;

    fn table_exists(&mut self, name: &str) -> Result<bool, Fail> {
        let sql = "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1";
        Ok(self.0.query_opt(sql, &[&name])?.is_some())
    }

    /// Column name → its type as `information_schema` names it.
    fn columns(&mut self, table: &str) -> Result<HashMap<String, String>, Fail> {
        let rows = self.0.query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = current_schema() AND table_name = $1",
            &[&table],
        )?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn holds_type(&self, stored: &str, kind: &FieldType) -> bool {
        column_type(kind) == stored
    }

    fn create_table(&mut self, name: &str, entity: &Entity) -> Result<(), Fail> {
        let mut cols = vec!["\"id\" text PRIMARY KEY".to_owned()];
        for (field, spec) in &entity.fields {
            cols.push(format!("{} {}", quote(field), column_decl(&spec.kind)));
        }
        cols.push("\"created\" text NOT NULL DEFAULT ''".into());
        cols.push("\"updated\" text NOT NULL DEFAULT ''".into());
        Ok(self.0.batch_execute(&format!("CREATE TABLE {} ({})", quote(name), cols.join(", ")))?)
    }

    fn drop_table(&mut self, name: &str) -> Result<(), Fail> {
        Ok(self.0.batch_execute(&format!("DROP TABLE {}", quote(name)))?)
    }

    fn count(&mut self, table: &str) -> Result<i64, Fail> {
        Ok(self.0.query_one(&format!("SELECT COUNT(*) FROM {}", quote(table)), &[])?.get(0))
    }

    fn add_column(&mut self, table: &str, column: &str, kind: &FieldType) -> Result<(), Fail> {
        let sql = format!("ALTER TABLE {} ADD COLUMN {} {}", quote(table), quote(column), column_decl(kind));
        Ok(self.0.batch_execute(&sql)?)
    }

    /// PostgreSQL drops the indexes over the column with it.
    fn drop_column(&mut self, table: &str, column: &str) -> Result<(), Fail> {
        Ok(self.0.batch_execute(&format!("ALTER TABLE {} DROP COLUMN {}", quote(table), quote(column)))?)
    }

    /// What counts as empty is what the SQLite store counts (`'', 0, '[]',
    /// 'null'`, a false boolean being 0 there, and a text `'0'`, `'[]'` or
    /// `'null'` too), by the column's type: a json `false` or `""` holds
    /// something, as it does in SQLite.
    fn rows_holding(&mut self, table: &str, column: &str) -> Result<i64, Fail> {
        let c = quote(column);
        let kind: Option<String> = self
            .0
            .query_opt(
                "SELECT data_type::text FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = $1 AND column_name = $2",
                &[&table, &column],
            )?
            .map(|r| r.get(0));
        let holds = match kind.as_deref() {
            Some("double precision") => format!("{c} <> 0"),
            Some("boolean") => c.clone(),
            Some("jsonb") => format!("{c} <> '[]'::jsonb"),
            Some("json") => format!(
                "{c}::text NOT IN ('null', '[]') AND NOT (json_typeof({c}) = 'number' AND {c}::text::double precision = 0)"
            ),
            // As SQLite compares a TEXT column with the integer 0: as the text '0'.
            _ => format!("{c}::text NOT IN ('', '0', '[]', 'null')"),
        };
        let sql = format!("SELECT COUNT(*) FROM {} WHERE {c} IS NOT NULL AND {holds}", quote(table));
        Ok(self.0.query_one(&sql, &[])?.get(0))
    }

    fn index(&self, name: &str) -> String {
        identifier(name)
    }

    fn indexes_named(&mut self, table: &str, prefix: &str) -> Result<Vec<String>, Fail> {
        let rows = self.0.query(
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 \
             AND starts_with(indexname, $2)",
            &[&table, &prefix],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn create_index(&mut self, name: &str, table: &str, columns: &[String]) -> Result<(), Fail> {
        let list: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        Ok(self.0.batch_execute(&format!("CREATE INDEX {} ON {} ({})", quote(name), quote(table), list.join(", ")))?)
    }

    fn drop_index(&mut self, name: &str) -> Result<(), Fail> {
        Ok(self.0.batch_execute(&format!("DROP INDEX {}", quote(name)))?)
    }

    /// Emails are compared with ASCII letters folded only ([`UPPER`]).
    fn shared_email(&mut self, table: &str) -> Result<Option<String>, Fail> {
        let sql = format!(
            "SELECT min(\"email\") FROM {} WHERE \"email\" <> '' GROUP BY {} HAVING COUNT(*) > 1 LIMIT 1",
            quote(table),
            folded("\"email\"")
        );
        Ok(self.0.query_opt(&sql, &[])?.map(|r| r.get(0)))
    }

    fn create_email_index(&mut self, name: &str, table: &str) -> Result<(), Fail> {
        let sql = format!(
            "CREATE UNIQUE INDEX {} ON {} (({})) WHERE \"email\" <> ''",
            quote(name),
            quote(table),
            folded("\"email\"")
        );
        Ok(self.0.batch_execute(&sql)?)
    }
}

/// A name PostgreSQL keeps whole: one longer than its limit is cut and given
/// a hash of the whole, so two long names stay apart and the next start finds
/// the index under the name it was made with.
pub fn identifier(name: &str) -> String {
    if name.len() <= MAX_IDENTIFIER {
        return name.to_owned();
    }
    let hash: String = Sha256::digest(name.as_bytes()).iter().take(6).map(|b| format!("{b:02x}")).collect();
    let mut cut = MAX_IDENTIFIER - hash.len() - 1;
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}_{hash}", &name[..cut])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_index_name_is_cut_to_postgres_limit_and_stays_distinct() {
        assert_eq!(identifier("a2app_idx_cards__created"), "a2app_idx_cards__created");
        let long = format!("a2app_idx_{}__created", "t".repeat(60));
        let other = format!("a2app_idx_{}__updated", "t".repeat(60));
        assert_eq!(identifier(&long).len(), 63);
        assert_eq!(identifier(&other).len(), 63);
        assert_ne!(identifier(&long), identifier(&other));
        assert!(identifier(&long).starts_with("a2app_idx_ttt"));
        // Cut on a character boundary.
        let wide = format!("a2app_idx_{}", "é".repeat(40));
        assert!(identifier(&wide).len() <= 63);
    }
}
