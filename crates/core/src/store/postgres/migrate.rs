//! Schema migration at launch, as the SQLite store's (`sqlite::migrate`): the
//! schema last applied is kept in `_a2app_meta`, additive changes apply, and a
//! change that would lose or reinterpret stored data is refused unless allowed.
//!
//! PostgreSQL's DDL is transactional, so a refused or failed migration leaves
//! nothing behind; and several nodes starting at once take turns on an
//! advisory lock, so each finds the tables the one before it made.

use super::row::{column_decl, column_type};
use super::{Fail, quote};
use crate::store::{Migration, StoreError};
use postgres::Transaction;
use protocol::schema::{Entity, FieldType, Schema};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};

const INDEX_PREFIX: &str = "a2app_idx_";
/// PostgreSQL's longest identifier, in bytes; a longer one is cut silently.
const MAX_IDENTIFIER: usize = 63;
/// The advisory lock migrations take (any constant both nodes agree on).
const MIGRATION_LOCK: i64 = 0x0a2a_9900_0001;

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
        created text NOT NULL, updated text NOT NULL);
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
    CREATE TABLE IF NOT EXISTS _a2app_approvals (
        key text PRIMARY KEY, approver text NOT NULL, operation text NOT NULL, params text NOT NULL,
        expires text NOT NULL, used integer NOT NULL DEFAULT 0);
";

/// Runs in one transaction: a refusal or a failure rolls every step back.
pub fn migrate(tx: &mut Transaction<'_>, schema: &Schema, allow_destructive: bool) -> Result<Migration, Fail> {
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])?;
    tx.batch_execute(INTERNAL_TABLES)?;
    let previous: Schema = tx
        .query_opt("SELECT value FROM _a2app_meta WHERE key = 'schema'", &[])?
        .and_then(|row| serde_json::from_str(row.get::<_, &str>(0)).ok())
        .unwrap_or_default();
    let mut plan = Plan { tx, allow_destructive, applied: Vec::new(), refused: Vec::new() };
    for (name, entity) in &schema.entities {
        if table_exists(plan.tx, name)? {
            plan.evolve(name, previous.entities.get(name), entity)?;
        } else {
            plan.create(name, entity)?;
        }
    }
    for name in previous.entities.keys().filter(|n| !schema.entities.contains_key(*n)) {
        if !table_exists(plan.tx, name)? {
            continue;
        }
        let rows: i64 = plan.tx.query_one(&format!("SELECT COUNT(*) FROM {}", quote(name)), &[])?.get(0);
        if rows > 0 && !allow_destructive {
            plan.refused.push(format!("dropping entity \"{name}\" would delete its {rows} records"));
            continue;
        }
        plan.tx.batch_execute(&format!("DROP TABLE {}", quote(name)))?;
        plan.applied.push(format!("dropped entity {name} ({rows} records)"));
    }
    let Plan { applied, refused, .. } = plan;
    if !refused.is_empty() {
        return Err(StoreError::MigrationRefused(refused).into());
    }
    let text = serde_json::to_string(schema).map_err(|e| StoreError::Internal(e.to_string()))?;
    tx.execute(
        "INSERT INTO _a2app_meta (key, value) VALUES ('schema', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        &[&text],
    )?;
    Ok(Migration { applied })
}

struct Plan<'t, 'c> {
    tx: &'t mut Transaction<'c>,
    allow_destructive: bool,
    applied: Vec<String>,
    refused: Vec<String>,
}

impl Plan<'_, '_> {
    fn create(&mut self, name: &str, entity: &Entity) -> Result<(), Fail> {
        let mut cols = vec!["\"id\" text PRIMARY KEY".to_owned()];
        for (field, spec) in &entity.fields {
            cols.push(format!("{} {}", quote(field), column_decl(&spec.kind)));
        }
        cols.push("\"created\" text NOT NULL DEFAULT ''".into());
        cols.push("\"updated\" text NOT NULL DEFAULT ''".into());
        self.tx.batch_execute(&format!("CREATE TABLE {} ({})", quote(name), cols.join(", ")))?;
        self.applied.push(format!("created entity {name}"));
        self.sync_indexes(name, entity)
    }

    fn evolve(&mut self, name: &str, before: Option<&Entity>, entity: &Entity) -> Result<(), Fail> {
        let columns = columns(self.tx, name)?;
        for (field, spec) in &entity.fields {
            let Some(stored) = columns.get(field) else {
                self.add_column(name, field, &spec.kind)?;
                self.applied.push(format!("added field {name}.{field}"));
                continue;
            };
            let old_kind = before.and_then(|e| e.fields.get(field)).map(|f| &f.kind);
            let changed = match old_kind {
                Some(old) => old.name() != spec.kind.name() || old.target() != spec.kind.target(),
                // No record of the old type: trust the column's type.
                None => column_type(&spec.kind) != stored,
            };
            if !changed {
                continue;
            }
            let from = old_kind.map(FieldType::name).unwrap_or(stored.as_str());
            let held = self.rows_holding(name, field)?;
            if held > 0 && !self.allow_destructive {
                self.refused.push(format!(
                    "changing the type of {name}.{field} from {from} to {} would reinterpret {held} stored values",
                    spec.kind.name()
                ));
                continue;
            }
            // Dropping a column drops the indexes over it.
            self.tx.batch_execute(&format!("ALTER TABLE {} DROP COLUMN {}", quote(name), quote(field)))?;
            self.add_column(name, field, &spec.kind)?;
            self.applied.push(format!(
                "changed the type of {name}.{field} from {from} to {} ({held} values reset)",
                spec.kind.name()
            ));
        }
        for column in columns.keys() {
            if ["id", "created", "updated"].contains(&column.as_str()) || entity.fields.contains_key(column) {
                continue;
            }
            let held = self.rows_holding(name, column)?;
            if held > 0 && !self.allow_destructive {
                self.refused.push(format!("dropping field {name}.{column} would lose its values in {held} records"));
                continue;
            }
            self.tx.batch_execute(&format!("ALTER TABLE {} DROP COLUMN {}", quote(name), quote(column)))?;
            self.applied.push(format!("dropped field {name}.{column} ({held} values)"));
        }
        self.sync_indexes(name, entity)
    }

    fn add_column(&mut self, table: &str, column: &str, kind: &FieldType) -> Result<(), Fail> {
        let sql = format!("ALTER TABLE {} ADD COLUMN {} {}", quote(table), quote(column), column_decl(kind));
        Ok(self.tx.batch_execute(&sql)?)
    }

    /// Rows whose column holds something other than its empty value.
    fn rows_holding(&mut self, table: &str, column: &str) -> Result<i64, Fail> {
        let c = quote(column);
        let sql = format!(
            "SELECT COUNT(*) FROM {} WHERE {c} IS NOT NULL AND {c}::text NOT IN ('', '0', 'false', '[]', 'null')",
            quote(table)
        );
        Ok(self.tx.query_one(&sql, &[])?.get(0))
    }

    /// As the SQLite store: a table becoming a multi-user app's users must not
    /// hold one email twice (compared as PostgreSQL's `lower` folds them).
    fn refuse_shared_emails(&mut self, table: &str) -> Result<(), Fail> {
        let sql = format!(
            "SELECT min(\"email\") FROM {} WHERE \"email\" <> '' GROUP BY lower(\"email\") HAVING COUNT(*) > 1 LIMIT 1",
            quote(table)
        );
        match self.tx.query_opt(&sql, &[])? {
            None => Ok(()),
            Some(row) => Err(StoreError::Unmigratable(format!(
                "{table}.email holds {:?} more than once, and each user of a multi-user app needs an email \
                 of their own: change the others, then start again",
                row.get::<_, String>(0)
            ))
            .into()),
        }
    }

    /// The auth entity's unique index on its email (see the SQLite store).
    fn sync_email_index(&mut self, table: &str, entity: &Entity) -> Result<(), Fail> {
        let index = identifier(&format!("a2app_uidx_{table}__email"));
        let exists = indexes_named(self.tx, table, &index)?.contains(&index);
        let wanted = crate::auth::is_auth_entity(table, entity);
        if wanted && !exists {
            self.refuse_shared_emails(table)?;
            let sql = format!(
                "CREATE UNIQUE INDEX {} ON {} (lower(\"email\")) WHERE \"email\" <> ''",
                quote(&index),
                quote(table)
            );
            self.tx.batch_execute(&sql)?;
        } else if exists && !wanted {
            self.tx.batch_execute(&format!("DROP INDEX {}", quote(&index)))?;
            self.applied.push(format!("dropped index {index}"));
        }
        Ok(())
    }

    fn sync_indexes(&mut self, table: &str, entity: &Entity) -> Result<(), Fail> {
        self.sync_email_index(table, entity)?;
        let existing: BTreeSet<String> = indexes_named(self.tx, table, INDEX_PREFIX)?.into_iter().collect();
        let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
        for cols in std::iter::once(vec!["created".to_owned()]).chain(entity.indexes.iter().cloned()) {
            let name = identifier(&crate::store::sqlite::index_name(table, &cols));
            if !wanted.iter().any(|(n, _)| *n == name) {
                wanted.push((name, cols));
            }
        }
        for index in &existing {
            if !wanted.iter().any(|(name, _)| name == index) {
                self.tx.batch_execute(&format!("DROP INDEX {}", quote(index)))?;
                self.applied.push(format!("dropped index {index}"));
            }
        }
        for (index, cols) in wanted {
            if existing.contains(&index) {
                continue;
            }
            let list: Vec<String> = cols.iter().map(|c| quote(c)).collect();
            self.tx.batch_execute(&format!(
                "CREATE INDEX {} ON {} ({})",
                quote(&index),
                quote(table),
                list.join(", ")
            ))?;
            self.applied.push(format!("created index {index}"));
        }
        Ok(())
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

/// The indexes of `table` whose names start with `prefix`.
fn indexes_named(tx: &mut Transaction<'_>, table: &str, prefix: &str) -> Result<Vec<String>, Fail> {
    let rows = tx.query(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = current_schema() AND tablename = $1 \
         AND starts_with(indexname, $2)",
        &[&table, &prefix],
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

fn table_exists(tx: &mut Transaction<'_>, name: &str) -> Result<bool, Fail> {
    let sql = "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1";
    Ok(tx.query_opt(sql, &[&name])?.is_some())
}

/// Column name → its type as `information_schema` names it.
fn columns(tx: &mut Transaction<'_>, table: &str) -> Result<HashMap<String, String>, Fail> {
    let rows = tx.query(
        "SELECT column_name::text, data_type::text FROM information_schema.columns \
         WHERE table_schema = current_schema() AND table_name = $1",
        &[&table],
    )?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
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
