//! Schema migration at launch.
//!
//! The schema last applied is kept in `_a2app_meta`; the new one is compared
//! with it (and with the tables that really exist). Additive changes apply at
//! once. A change that would lose or reinterpret stored data is refused with a
//! message naming it, unless the operator allowed destruction; a drop or type
//! change of something that holds no data is not destructive and applies.

use super::row::{column_decl, quote};
use crate::store::{Migration, StoreError};
use protocol::schema::{Entity, FieldType, Schema};
use rusqlite::{Connection, OptionalExtension};
use std::collections::{BTreeSet, HashMap};

const META: &str = "_a2app_meta";
const INDEX_PREFIX: &str = "a2app_idx_";

/// The runtime's own tables. Entity names cannot start with `_`, so these never collide.
///
/// Every write adds an audit entry, and a keyed one a key: each B-tree here costs a
/// page in every commit's WAL. Keys live in their primary key (`WITHOUT
/// ROWID`: no separate rowid table), and audit entries take the next rowid
/// without `AUTOINCREMENT`, which would also rewrite `sqlite_sequence`; entries
/// are never deleted, so the next rowid is always above every earlier one.
/// A single keyed create appends about a sixth fewer WAL frames (ARCHITECTURE.md).
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
";

/// Columns the runtime's tables gained after they were first made, for
/// databases made before: `(table, column declaration)`.
const ADDED_COLUMNS: &[(&str, &str)] = &[
    // The OAuth client behind a grant (JSON), none for a key's grant.
    ("_a2app_grants", "client TEXT"),
    // The one resource an OAuth access token is good for.
    ("_a2app_grant_tokens", "audience TEXT"),
    // The hash of an OAuth request's code once traded, to see it presented again.
    ("_a2app_oauth_requests", "spent_code TEXT"),
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
    let mut plan = Plan { tx, allow_destructive, applied: Vec::new(), refused: Vec::new() };

    for (name, entity) in &schema.entities {
        if table_exists(tx, name)? {
            plan.evolve(name, previous.entities.get(name), entity)?;
        } else {
            plan.create(name, entity)?;
        }
    }
    for (name, _) in previous.entities.iter().filter(|(n, _)| !schema.entities.contains_key(*n)) {
        if !table_exists(tx, name)? {
            continue;
        }
        let rows: i64 = tx.query_row(&format!("SELECT COUNT(*) FROM {}", quote(name)), [], |r| r.get(0))?;
        if rows > 0 && !allow_destructive {
            plan.refused.push(format!("dropping entity \"{name}\" would delete its {rows} records"));
            continue;
        }
        tx.execute_batch(&format!("DROP TABLE {}", quote(name)))?;
        plan.applied.push(format!("dropped entity {name} ({rows} records)"));
    }
    let Plan { applied, refused, .. } = plan;
    if !refused.is_empty() {
        return Err(StoreError::MigrationRefused(refused));
    }
    let text = serde_json::to_string(schema).map_err(|e| StoreError::Internal(e.to_string()))?;
    tx.execute(&format!("INSERT INTO {META} (key, value) VALUES ('schema', ?1) ON CONFLICT(key) DO UPDATE SET value = excluded.value"), [text])?;
    Ok(Migration { applied })
}

struct Plan<'a> {
    tx: &'a Connection,
    allow_destructive: bool,
    applied: Vec<String>,
    refused: Vec<String>,
}

impl Plan<'_> {
    fn create(&mut self, name: &str, entity: &Entity) -> Result<(), StoreError> {
        let mut cols = vec!["\"id\" TEXT PRIMARY KEY NOT NULL".to_owned()];
        for (field, spec) in &entity.fields {
            cols.push(format!("{} {}", quote(field), column_decl(&spec.kind)));
        }
        cols.push("\"created\" TEXT NOT NULL DEFAULT ''".into());
        cols.push("\"updated\" TEXT NOT NULL DEFAULT ''".into());
        self.tx.execute_batch(&format!("CREATE TABLE {} ({})", quote(name), cols.join(", ")))?;
        self.applied.push(format!("created entity {name}"));
        self.sync_indexes(name, entity)
    }

    fn evolve(&mut self, name: &str, before: Option<&Entity>, entity: &Entity) -> Result<(), StoreError> {
        let columns = columns(self.tx, name)?;
        for (field, spec) in &entity.fields {
            let Some(decl) = columns.get(field) else {
                self.add_column(name, field, &spec.kind)?;
                self.applied.push(format!("added field {name}.{field}"));
                continue;
            };
            let old_kind = before.and_then(|e| e.fields.get(field)).map(|f| &f.kind);
            let changed = match old_kind {
                Some(old) => old.name() != spec.kind.name() || old.target() != spec.kind.target(),
                // No record of the old type: trust the column declaration.
                None => !column_decl(&spec.kind).starts_with(decl.as_str()),
            };
            if !changed {
                continue;
            }
            let from = old_kind.map(FieldType::name).unwrap_or(decl.as_str());
            let held = self.rows_holding(name, field)?;
            if held > 0 && !self.allow_destructive {
                self.refused.push(format!(
                    "changing the type of {name}.{field} from {from} to {} would reinterpret {held} stored values",
                    spec.kind.name()
                ));
                continue;
            }
            self.drop_column(name, field)?;
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
            self.drop_column(name, column)?;
            self.applied.push(format!("dropped field {name}.{column} ({held} values)"));
        }
        self.sync_indexes(name, entity)
    }

    fn add_column(&mut self, table: &str, column: &str, kind: &FieldType) -> Result<(), StoreError> {
        let sql = format!("ALTER TABLE {} ADD COLUMN {} {}", quote(table), quote(column), column_decl(kind));
        Ok(self.tx.execute_batch(&sql)?)
    }

    fn drop_column(&mut self, table: &str, column: &str) -> Result<(), StoreError> {
        self.drop_indexes_on(table, column)?;
        Ok(self.tx.execute_batch(&format!("ALTER TABLE {} DROP COLUMN {}", quote(table), quote(column)))?)
    }

    /// Rows whose column holds something other than its empty value.
    fn rows_holding(&self, table: &str, column: &str) -> Result<i64, StoreError> {
        let c = quote(column);
        let sql =
            format!("SELECT COUNT(*) FROM {} WHERE {c} IS NOT NULL AND {c} NOT IN ('', 0, '[]', 'null')", quote(table));
        Ok(self.tx.query_row(&sql, [], |r| r.get(0))?)
    }

    /// A table that becomes a multi-user app's users (it held an entity
    /// named `users` before) must not hold one email twice: the unique index
    /// could not be built, and no `--allow-destructive` would help.
    fn refuse_shared_emails(&self, table: &str) -> Result<(), StoreError> {
        let sql = format!(
            "SELECT \"email\" FROM {} WHERE \"email\" != '' GROUP BY \"email\" COLLATE NOCASE HAVING COUNT(*) > 1 LIMIT 1",
            quote(table)
        );
        match self.tx.query_row(&sql, [], |r| r.get::<_, String>(0)).optional()? {
            None => Ok(()),
            Some(email) => Err(StoreError::Unmigratable(format!(
                "{table}.email holds {email:?} more than once, and each user of a multi-user app needs an email \
                 of their own: change the others, then start again"
            ))),
        }
    }

    /// Drops the runtime's indexes covering `column`, the users' email index
    /// too (SQLite refuses to drop an indexed column).
    fn drop_indexes_on(&mut self, table: &str, column: &str) -> Result<(), StoreError> {
        for index in indexes_named(self.tx, table, "a2app_")? {
            let mut stmt = self.tx.prepare(&format!("PRAGMA index_info({})", quote(&index)))?;
            let cols: Vec<String> = stmt.query_map([], |r| r.get(2))?.collect::<Result<_, _>>()?;
            if cols.iter().any(|c| c == column) {
                self.tx.execute_batch(&format!("DROP INDEX {}", quote(&index)))?;
            }
        }
        Ok(())
    }

    /// Logins look users up by email, and two users cannot share one: the
    /// auth entity has a unique index on it. Its prefix keeps it out of the
    /// managed set `sync_indexes` keeps; it goes when the app stops being
    /// multi-user (a single-user app's `users` is an entity like any other).
    fn sync_email_index(&mut self, table: &str, entity: &Entity) -> Result<(), StoreError> {
        let index = format!("a2app_uidx_{table}__email");
        let exists = indexes_named(self.tx, table, &index)?.contains(&index);
        let wanted = crate::auth::is_auth_entity(table, entity);
        if wanted && !exists {
            self.refuse_shared_emails(table)?;
            let sql = format!(
                "CREATE UNIQUE INDEX {} ON {} (\"email\" COLLATE NOCASE) WHERE \"email\" != ''",
                quote(&index),
                quote(table)
            );
            self.tx.execute_batch(&sql)?;
        } else if exists && !wanted {
            self.tx.execute_batch(&format!("DROP INDEX {}", quote(&index)))?;
            self.applied.push(format!("dropped index {index}"));
        }
        Ok(())
    }

    fn sync_indexes(&mut self, table: &str, entity: &Entity) -> Result<(), StoreError> {
        self.sync_email_index(table, entity)?;
        let existing: BTreeSet<String> = indexes_named(self.tx, table, INDEX_PREFIX)?.into_iter().collect();
        // `created` is always indexed (the newest-first listing sorts on it),
        // then the declared ones, each once: one on `created` alone is the first.
        let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
        for cols in std::iter::once(vec!["created".to_owned()]).chain(entity.indexes.iter().cloned()) {
            let name = index_name(table, &cols);
            if !wanted.iter().any(|(n, _)| *n == name) {
                wanted.push((name, cols));
            }
        }
        for index in &existing {
            if !wanted.iter().any(|(name, _)| name == index) {
                self.tx.execute_batch(&format!("DROP INDEX {}", quote(index)))?;
                self.applied.push(format!("dropped index {index}"));
            }
        }
        for (index, cols) in wanted {
            if existing.contains(&index) {
                continue;
            }
            let list: Vec<String> = cols.iter().map(|c| quote(c)).collect();
            self.tx.execute_batch(&format!(
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

/// The database name of the managed index of `table` over `columns`. Names
/// may contain `__` too, so two indexes can come out the same: `schema`'s
/// check refuses such a schema, as the second `CREATE INDEX` would fail.
pub(crate) fn index_name(table: &str, columns: &[String]) -> String {
    format!("{INDEX_PREFIX}{table}__{}", columns.join("__"))
}

/// The indexes of `table` whose names start with `prefix`.
fn indexes_named(tx: &Connection, table: &str, prefix: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = tx.prepare(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 AND substr(name, 1, length(?2)) = ?2",
    )?;
    Ok(stmt.query_map([table, prefix], |r| r.get(0))?.collect::<Result<_, _>>()?)
}

fn table_exists(tx: &Connection, name: &str) -> Result<bool, StoreError> {
    Ok(tx
        .query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Column name → declared type (upper case).
fn columns(tx: &Connection, table: &str) -> Result<HashMap<String, String>, StoreError> {
    let mut stmt = tx.prepare(&format!("PRAGMA table_info({})", quote(table)))?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, String>(2)?.to_uppercase())))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
