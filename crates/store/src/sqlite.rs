//! The SQLite store: WAL, one writer committing in groups, a pool of
//! readers, cached prepared statements.
//!
//! Durability: the writer connection runs `synchronous = FULL`, so a COMMIT
//! returns only after the WAL is on disk, and no write is acknowledged before
//! its COMMIT returned (see `writer`).

mod approvals;
mod claims;
mod grants;
mod jobs;
mod migrate;
mod oauth;
pub mod query;
mod requests;
mod row;
mod surfaces;
mod users;
mod writer;

use crate::sql::SqlCache;
use crate::verify::{self, entity};
use crate::{
    AuditEntry, KEY_LIFETIME, ListQuery, ListResult, Migration, Pending, QueryContext, Records, Rendered, Row, Store,
    StoreError, Write, WriteKind, Written,
};
use protocol::Violation;
use protocol::schema::{Entity, FieldType, Schema};
use r2d2_sqlite::SqliteConnectionManager;
use row::quote;
use rusqlite::types::Value as Sql;
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde_json::{Map, Value};
use std::cell::Cell;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use writer::Writer;

pub struct SqliteStore {
    readers: r2d2::Pool<SqliteConnectionManager>,
    writer: Writer,
    /// Bumped after every commit: cached counts of an older generation are stale.
    generation: Arc<AtomicU64>,
    /// Row counts of whole entities (unfiltered lists), by generation. COUNT over
    /// a large table is the main cost of a list with totals; the table's size
    /// only changes with a commit.
    counts: Mutex<HashMap<String, (u64, u64)>>,
    /// Shared with the writer's jobs.
    sql: Arc<SqlCache>,
}

const STATEMENT_CACHE: usize = 256;

fn configure(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.execute_batch("PRAGMA foreign_keys = OFF; PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16000;")
}

/// How often (in SQLite virtual-machine instructions) a reader's progress
/// handler runs, and how many periods an inline read may take: about ten
/// thousand instructions, a point read or a page of an indexed list, well
/// under a millisecond of an async worker's time.
const PROGRESS_PERIOD: std::ffi::c_int = 1000;
const INLINE_PERIODS: u32 = 10;

/// Where this thread stands with [`Store::inline`].
#[derive(Debug, Clone, Copy, PartialEq)]
enum Inline {
    /// Not inside `inline`: reads may wait for a connection and run long.
    Off,
    /// Inside `inline`, with this many progress periods left.
    Budget(u32),
    /// Inside `inline`, and the reads gave up (over budget or no free reader).
    GaveUp,
}

thread_local! {
    static INLINE: Cell<Inline> = const { Cell::new(Inline::Off) };
}

/// A reader connection: the common settings plus the progress handler that
/// enforces the inline budget (a no-op outside `inline`).
fn configure_reader(conn: &Connection) -> rusqlite::Result<()> {
    configure(conn)?;
    conn.progress_handler(
        PROGRESS_PERIOD,
        Some(|| {
            INLINE.with(|state| match state.get() {
                Inline::Off => false,
                Inline::Budget(0) | Inline::GaveUp => {
                    state.set(Inline::GaveUp);
                    true
                }
                Inline::Budget(n) => {
                    state.set(Inline::Budget(n - 1));
                    false
                }
            })
        }),
    )
}

impl SqliteStore {
    /// Opens (or creates) the database file.
    pub fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open(path)?;
        configure(&conn)?;
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Internal(format!("the database refused WAL mode ({mode})")));
        }
        conn.execute_batch("PRAGMA synchronous = FULL;")?;
        let manager = SqliteConnectionManager::file(path)
            .with_flags(rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .with_init(|c| configure_reader(c));
        let readers = r2d2::Pool::builder()
            .max_size(8)
            .min_idle(Some(2))
            .build(manager)
            .map_err(|e| StoreError::Internal(e.to_string()))?;
        Ok(SqliteStore {
            readers,
            writer: Writer::start(conn),
            generation: Arc::new(AtomicU64::new(0)),
            counts: Mutex::new(HashMap::new()),
            sql: Arc::new(SqlCache::new("?1")),
        })
    }

    /// The journal mode and `synchronous` level the writer's connection runs
    /// with: `("wal", 2)`, FULL, for a COMMIT to be durable when it returns.
    pub fn durability(&self) -> Result<(String, i64), StoreError> {
        self.on_writer(|conn| {
            let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
            let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
            Ok((mode, sync))
        })
    }

    /// The number of rows of an entity, from the cache when no commit happened since.
    fn count_all(&self, conn: &Connection, entity: &str) -> Result<u64, StoreError> {
        // The generation is read before counting, so a count is never filed
        // under a generation newer than the data it saw.
        let generation = self.generation.load(Ordering::SeqCst);
        let cached = self.counts.lock().unwrap_or_else(|e| e.into_inner()).get(entity).copied();
        if let Some((at, n)) = cached
            && at == generation
        {
            return Ok(n);
        }
        let n: i64 =
            conn.prepare_cached(&format!("SELECT COUNT(*) FROM {}", quote(entity)))?.query_row([], |r| r.get(0))?;
        let n = u64::try_from(n).unwrap_or(0);
        self.counts.lock().unwrap_or_else(|e| e.into_inner()).insert(entity.to_owned(), (generation, n));
        Ok(n)
    }

    fn reader(&self) -> Result<r2d2::PooledConnection<SqliteConnectionManager>, StoreError> {
        if INLINE.get() == Inline::Off {
            return self.readers.get().map_err(|e| StoreError::Internal(e.to_string()));
        }
        // Inline reads never wait for a connection: that would stall a worker.
        self.readers.try_get().ok_or_else(|| {
            INLINE.set(Inline::GaveUp);
            StoreError::Internal("no reader connection is free".into())
        })
    }

    /// Runs `work` on the writer and waits for its result, returned once the
    /// group it joined has committed; an `Err` leaves nothing of it behind.
    /// Blocks: for callers off the async runtime.
    fn on_writer<T: Send + 'static>(
        &self,
        work: impl FnMut(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.wait_for(work, false)
    }

    /// [`Self::on_writer`], saying whether `work` may change the schema (then
    /// its failure always rolls its transaction back; see `writer`).
    fn wait_for<T: Send + 'static>(
        &self,
        work: impl FnMut(&Connection) -> Result<T, StoreError> + Send + 'static,
        changes_schema: bool,
    ) -> Result<T, StoreError> {
        let (tx, rx) = mpsc::sync_channel::<Result<T, StoreError>>(1);
        self.submit(work, changes_schema, move |answer| {
            let _ = tx.send(answer);
        });
        rx.recv().map_err(|_| StoreError::Internal("the writer has stopped".into()))?
    }

    /// [`Self::on_writer`] without waiting: the result arrives on the returned
    /// receiver, which async callers await; a committed result is first shown
    /// to `committed`, by the committing thread (see `writer`).
    fn queue<T: Send + 'static>(
        &self,
        work: impl FnMut(&Connection) -> Result<T, StoreError> + Send + 'static,
        committed: impl FnOnce(&T) + Send + 'static,
    ) -> Pending<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(work, false, move |answer| {
            if let Ok(done) = &answer {
                committed(done);
            }
            let _ = tx.send(answer);
        });
        rx
    }

    /// Queues `work` for the writer; `reply` gets its result after the group's
    /// COMMIT. When the writer is gone, `reply` is dropped unanswered, which
    /// its receiver sees as a closed channel. `work` may run more than once
    /// (see `writer`); its last result is the answer.
    fn submit<T: Send + 'static>(
        &self,
        work: impl FnMut(&Connection) -> Result<T, StoreError> + Send + 'static,
        changes_schema: bool,
        reply: impl FnOnce(Result<T, StoreError>) + Send + 'static,
    ) {
        let generation = Arc::clone(&self.generation);
        self.writer.submit(Box::new(Queued { work, result: None, reply, generation, changes_schema }));
    }
}

/// A job on the writer: its work, its latest result, where the answer goes.
struct Queued<T, W, R> {
    work: W,
    result: Option<Result<T, StoreError>>,
    reply: R,
    generation: Arc<AtomicU64>,
    changes_schema: bool,
}

impl<T, W, R> writer::Job for Queued<T, W, R>
where
    T: Send,
    W: FnMut(&Connection) -> Result<T, StoreError> + Send,
    R: FnOnce(Result<T, StoreError>) + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let result = (self.work)(conn);
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn changes_schema(&self) -> bool {
        self.changes_schema
    }

    fn finish(self: Box<Self>, committed: bool) {
        // Before the answer is released: whoever learns of the write also
        // finds the cached counts outdated.
        self.generation.fetch_add(1, Ordering::SeqCst);
        let Queued { reply, result, .. } = *self;
        reply(match result {
            Some(Ok(_)) if !committed => Err(StoreError::Internal("the transaction did not commit".into())),
            Some(other) => other,
            None => Err(StoreError::Internal("the write transaction could not start".into())),
        });
    }
}

impl Records for SqliteStore {
    fn list(&self, schema: &Schema, q: &ListQuery<'_>) -> Result<ListResult, StoreError> {
        let ent = entity(schema, q.entity)?;
        let mut conditions = Vec::new();
        let mut params: Vec<Sql> = Vec::new();
        for expr in [q.filter, q.rule].into_iter().flatten() {
            let frag = query::compile_filter(schema, q.entity, expr, q.ctx)?;
            conditions.push(format!("({})", frag.sql));
            params.extend(frag.params);
        }
        let where_sql = if conditions.is_empty() { "1".to_owned() } else { conditions.join(" AND ") };
        let order = query::compile_sort(schema, q.entity, q.sort, q.ctx)?;
        let table = quote(q.entity);
        let mut sql = format!("SELECT {} FROM {table} WHERE {where_sql}", self.sql.get(q.entity, ent).columns);
        let mut select_params = params.clone();
        if !order.sql.is_empty() {
            sql.push_str(" ORDER BY ");
            sql.push_str(&order.sql);
            select_params.extend(order.params);
        }
        sql.push_str(" LIMIT ? OFFSET ?");
        let per_page = i64::try_from(q.per_page).unwrap_or(i64::MAX);
        let offset = i64::try_from(q.page.saturating_sub(1).saturating_mul(q.per_page)).unwrap_or(i64::MAX);
        select_params.push(Sql::Integer(per_page));
        select_params.push(Sql::Integer(offset));

        let conn = self.reader()?;
        let rows = {
            let mut stmt = conn.prepare_cached(&sql)?;
            let mapped = stmt.query_map(params_from_iter(select_params.iter()), |r| row::read(ent, r))?;
            mapped.collect::<Result<Vec<_>, _>>()?
        };
        let total = if q.skip_total {
            None
        } else if q.page <= 1 && (rows.len() as u64) < q.per_page {
            // The first page is not full: it holds everything, no COUNT needed.
            Some(rows.len() as u64)
        } else if conditions.is_empty() {
            Some(self.count_all(&conn, q.entity)?)
        } else {
            let mut stmt = conn.prepare_cached(&format!("SELECT COUNT(*) FROM {table} WHERE {where_sql}"))?;
            let n: i64 = stmt.query_row(params_from_iter(params.iter()), |r| r.get(0))?;
            Some(u64::try_from(n).unwrap_or(0))
        };
        Ok(ListResult { rows, total })
    }

    fn get_many(&self, schema: &Schema, entity_name: &str, ids: &[String]) -> Result<Vec<Row>, StoreError> {
        let ent = entity(schema, entity_name)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let conn = self.reader()?;
        if let [one] = ids {
            return Ok(read_by_id(&conn, &self.sql, entity_name, ent, one)?.into_iter().collect());
        }
        let sql = format!(
            "SELECT {} FROM {} WHERE \"id\" IN (SELECT value FROM json_each(?1))",
            self.sql.get(entity_name, ent).columns,
            quote(entity_name)
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let list = Value::from(ids.to_vec()).to_string();
        let rows = stmt.query_map([list], |r| row::read(ent, r))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn get_visible(
        &self,
        schema: &Schema,
        entity_name: &str,
        ids: &[String],
        rule: &a2app_filter::Expr,
        ctx: &QueryContext,
    ) -> Result<Vec<String>, StoreError> {
        entity(schema, entity_name)?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let frag = query::compile_filter(schema, entity_name, rule, ctx)?;
        let table = quote(entity_name);
        let sql = format!(
            "SELECT {table}.\"id\" FROM {table} WHERE {table}.\"id\" IN (SELECT value FROM json_each(?)) AND ({})",
            frag.sql
        );
        let mut params = vec![Sql::Text(Value::from(ids.to_vec()).to_string())];
        params.extend(frag.params);
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(params_from_iter(params.iter()), |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn record_satisfies(
        &self,
        schema: &Schema,
        entity_name: &str,
        record: &Map<String, Value>,
        rule: &a2app_filter::Expr,
        ctx: &QueryContext,
    ) -> Result<bool, StoreError> {
        let ent = entity(schema, entity_name)?;
        let frag = query::compile_filter(schema, entity_name, rule, ctx)?;
        // The record as a one-row table under the entity's name: the rule's
        // SQL refers to the main table by that name only as a correlation, and
        // its joins name real tables, which this alias does not shadow.
        let mut columns = Vec::with_capacity(ent.fields.len() + 3);
        let mut params = Vec::with_capacity(ent.fields.len() + 3 + frag.params.len());
        // Each value keeps its column's affinity (a bound parameter has none),
        // so a rule compares it as it would compare the stored row: a number
        // column against a text from `@request.query`, say. The CASTs change
        // no value (numbers and booleans are bound as numbers, the rest as
        // text); list and json columns, whose NUMERIC affinity would turn
        // their JSON text into a number, are bound as they are.
        for system in ["id", "created", "updated"] {
            columns.push(format!("CAST(? AS TEXT) AS {}", quote(system)));
            params.push(Sql::Text(record.get(system).and_then(Value::as_str).unwrap_or_default().to_owned()));
        }
        for (name, field) in &ent.fields {
            let slot = match field.kind {
                FieldType::Number { .. } | FieldType::Boolean => "CAST(? AS NUMERIC)",
                FieldType::ListEnum { .. } | FieldType::ListRef { .. } | FieldType::Json => "?",
                _ => "CAST(? AS TEXT)",
            };
            columns.push(format!("{slot} AS {}", quote(name)));
            params.push(record.get(name).map_or_else(|| row::zero(&field.kind), |v| row::to_sql(&field.kind, v)));
        }
        params.extend(frag.params);
        let sql = format!("SELECT 1 FROM (SELECT {}) AS {} WHERE {}", columns.join(", "), quote(entity_name), frag.sql);
        let conn = self.reader()?;
        Ok(conn.prepare_cached(&sql)?.exists(params_from_iter(params.iter()))?)
    }

    fn referencing(
        &self,
        schema: &Schema,
        entity_name: &str,
        field: &str,
        target: &str,
        limit: u64,
    ) -> Result<Vec<String>, StoreError> {
        let ent = entity(schema, entity_name)?;
        let Some(spec) = ent.fields.get(field) else { return Ok(Vec::new()) };
        let table = quote(entity_name);
        let col = format!("{table}.{}", quote(field));
        let condition = if spec.kind.is_multi() {
            format!("EXISTS (SELECT 1 FROM json_each({col}) AS je WHERE je.value = ?1)")
        } else {
            format!("{col} = ?1")
        };
        // No ORDER BY, as PocketBase: the order is the one of the index SQLite
        // picks, which is what PocketBase clients see for the same schema.
        let sql = format!("SELECT {table}.\"id\" FROM {table} WHERE {condition} LIMIT ?2");
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(rusqlite::params![target, i64::try_from(limit).unwrap_or(i64::MAX)], |r| {
            r.get::<_, String>(0)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn missing_refs(
        &self,
        schema: &Schema,
        entity_name: &str,
        values: &Map<String, Value>,
    ) -> Result<Vec<Violation>, StoreError> {
        let ent = entity(schema, entity_name)?;
        let conn = self.reader()?;
        match check_refs(&conn, ent, values) {
            Ok(()) => Ok(Vec::new()),
            Err(StoreError::MissingRefs(v)) => Ok(v),
            Err(e) => Err(e),
        }
    }

    fn inline(&self, work: &mut dyn FnMut()) -> bool {
        INLINE.set(Inline::Budget(INLINE_PERIODS));
        work();
        INLINE.replace(Inline::Off) != Inline::GaveUp
    }

    fn write(&self, schema: &Arc<Schema>, write: Write) -> Pending<Written> {
        let (schema, cache) = (Arc::clone(schema), Arc::clone(&self.sql));
        let on_commit = write.on_commit.clone();
        let committed = move |done: &Written| {
            if let Some(hook) = on_commit {
                (hook.0)(done);
            }
        };
        self.queue(
            move |conn| {
                let claimed = claim_key(conn, &write)?;
                let resolved = modified(conn, &cache, &schema, &write)?;
                let write = resolved.as_ref().unwrap_or(&write);
                let (row, action, before) = apply(conn, &cache, &schema, write)?;
                let id = row.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
                if let Some(hash) = &write.password_hash {
                    users::set_password(conn, &id, hash)?;
                }
                if action == "delete" && write.entity == a2app_definition::users::ENTITY {
                    users::forget(conn, &id)?;
                }
                if claimed {
                    let now = a2app_definition::datetime::format(write.now);
                    conn.prepare_cached(
                        "INSERT OR REPLACE INTO _a2app_keys (entity, key, record_id, created) VALUES (?1, ?2, ?3, ?4)",
                    )?
                    .execute(rusqlite::params![write.entity, write.key, id, now])?;
                }
                let receipt = audit(conn, &cache, &schema, write, &row, action, before.as_ref())?;
                Ok(Written { row, receipt })
            },
            committed,
        )
    }
}

impl Store for SqliteStore {
    fn migrate(&self, schema: &Schema, allow_destructive: bool) -> Result<Migration, StoreError> {
        let schema = schema.clone();
        self.sql.clear();
        self.wait_for(move |conn| migrate::migrate(conn, &schema, allow_destructive), true)
    }

    fn receipts(&self, since: &str, limit: u64) -> Result<Vec<AuditEntry>, StoreError> {
        let conn = self.reader()?;
        let mut stmt = conn.prepare_cached(&crate::sql::receipts_page('?'))?;
        let rows = stmt.query_map(rusqlite::params![since, i64::try_from(limit.max(1)).unwrap_or(i64::MAX)], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, text) = row?;
            let receipt =
                serde_json::from_str(&text).map_err(|e| StoreError::Internal(format!("audit entry {seq}: {e}")))?;
            out.push(AuditEntry { seq, receipt });
        }
        Ok(out)
    }

    fn audit_after(&self, after: i64, since: &str, limit: u64) -> Result<Vec<AuditEntry>, StoreError> {
        claims::audit_after(&*self.reader()?, after, since, limit)
    }

    fn keep_refused(&self, refused: &crate::RefusedWrite, keep: u64) -> Result<(), StoreError> {
        let refused = refused.clone();
        self.on_writer(move |conn| claims::keep_refused(conn, &refused, keep))
    }

    fn refused_writes(&self, after: i64, since: &str, limit: u64) -> Result<Vec<crate::RefusedWrite>, StoreError> {
        claims::refused_writes(&*self.reader()?, after, since, limit)
    }

    fn keep_check(&self, check: &crate::ClaimCheck, keep: u64) -> Result<(), StoreError> {
        let check = check.clone();
        self.on_writer(move |conn| claims::keep_check(conn, &check, keep))
    }

    fn claim_checks(&self, limit: u64) -> Result<Vec<crate::ClaimCheck>, StoreError> {
        claims::claim_checks(&*self.reader()?, limit)
    }

    fn last_check(&self, caller: &str, agent: Option<&str>) -> Result<Option<String>, StoreError> {
        claims::last_check(&*self.reader()?, caller, agent)
    }

    fn secret(&self, name: &str) -> Result<String, StoreError> {
        let conn = self.reader()?;
        if let Some(found) = users::secret(&conn, name)? {
            return Ok(found);
        }
        let name = name.to_owned();
        self.on_writer(move |conn| users::create_secret(conn, &name))
    }

    fn credentials(&self, schema: &Schema, email: &str) -> Result<Option<crate::Credentials>, StoreError> {
        if !a2app_definition::users::has_users(schema) {
            return Ok(None);
        }
        let conn = self.reader()?;
        users::credentials(&conn, email)
    }

    fn token_key(&self, user_id: &str) -> Result<Option<String>, StoreError> {
        let conn = self.reader()?;
        users::token_key(&conn, user_id)
    }

    fn create_job(&self, job: &protocol::operation::Job, key: Option<&str>) -> Result<(), StoreError> {
        let (job, key) = (job.clone(), key.map(str::to_owned));
        self.on_writer(move |conn| jobs::create(conn, &job, key.as_deref()))
    }

    fn put_job(&self, job: &protocol::operation::Job) -> Result<(), StoreError> {
        let job = job.clone();
        self.on_writer(move |conn| jobs::put(conn, &job))
    }

    fn job(&self, id: &str) -> Result<Option<protocol::operation::Job>, StoreError> {
        jobs::get(&*self.reader()?, id)
    }

    fn interrupt_jobs(&self, now: &str) -> Result<u64, StoreError> {
        let now = now.to_owned();
        self.on_writer(move |conn| jobs::interrupt(conn, &now))
    }

    fn last_run(&self, operation: &str) -> Result<Option<String>, StoreError> {
        jobs::last_run(&*self.reader()?, operation)
    }

    fn claim_run(&self, operation: &str, seen: Option<&str>, at: &str) -> Result<bool, StoreError> {
        let (operation, seen, at) = (operation.to_owned(), seen.map(str::to_owned), at.to_owned());
        self.on_writer(move |conn| jobs::claim_run(conn, &operation, seen.as_deref(), &at))
    }

    fn audit(&self, receipt: &protocol::receipt::Receipt) -> Result<(), StoreError> {
        let receipt = receipt.clone();
        self.on_writer(move |conn| jobs::audit(conn, &receipt))
    }

    fn render_surfaces(&self, messages: &[a2app_a2ui::Message], now: &str) -> Result<Rendered, StoreError> {
        let (messages, now) = (messages.to_vec(), now.to_owned());
        self.on_writer(move |conn| surfaces::render(conn, &messages, &now))
    }

    fn surface(&self, id: &str) -> Result<Option<a2app_a2ui::Surface>, StoreError> {
        surfaces::get(&*self.reader()?, id)
    }

    fn surfaces(&self) -> Result<Vec<(String, String)>, StoreError> {
        surfaces::list(&*self.reader()?)
    }

    fn ask(
        &self,
        request: &protocol::request::AgentRequest,
        max_open: u64,
        keep: u64,
        audit: &protocol::receipt::Receipt,
    ) -> Result<bool, StoreError> {
        let (request, audit) = (request.clone(), audit.clone());
        self.on_writer(move |conn| requests::ask(conn, &request, max_open, keep, &audit))
    }

    fn request(&self, id: &str) -> Result<Option<protocol::request::AgentRequest>, StoreError> {
        requests::get(&*self.reader()?, id)
    }

    fn requests(
        &self,
        filter: &crate::RequestFilter,
    ) -> Result<(Vec<protocol::request::AgentRequest>, u64), StoreError> {
        requests::list(&*self.reader()?, filter)
    }

    fn step_request(
        &self,
        id: &str,
        step: &crate::RequestStep,
        now: &str,
        audit: &protocol::receipt::Receipt,
    ) -> Result<Result<protocol::request::AgentRequest, crate::RequestConflict>, StoreError> {
        let (id, step, now, audit) = (id.to_owned(), step.clone(), now.to_owned(), audit.clone());
        self.on_writer(move |conn| requests::step(conn, &id, &step, &now, &audit))
    }

    fn ask_grant(
        &self,
        grant: &protocol::grant::Grant,
        limits: crate::GrantLimits,
        audit: &protocol::receipt::Receipt,
        request: Option<&crate::AuthRequest>,
    ) -> Result<crate::GrantRoom, StoreError> {
        let (grant, audit, request) = (grant.clone(), audit.clone(), request.cloned());
        self.on_writer(move |conn| grants::ask(conn, &grant, limits, &audit, request.as_ref()))
    }

    fn grant(&self, id: &str) -> Result<Option<protocol::grant::Grant>, StoreError> {
        grants::get(&*self.reader()?, id)
    }

    fn pending_grants(&self, source: Option<&str>, limit: u64) -> Result<Vec<protocol::grant::Grant>, StoreError> {
        grants::pending(&*self.reader()?, source, limit)
    }

    fn grants(&self, acts_for: Option<&str>, limit: u64) -> Result<Vec<protocol::grant::Grant>, StoreError> {
        grants::list(&*self.reader()?, acts_for, limit)
    }

    fn step_grant(
        &self,
        id: &str,
        step: &crate::GrantStep,
        now: &str,
        audit: &protocol::receipt::Receipt,
    ) -> Result<Result<protocol::grant::Grant, crate::GrantConflict>, StoreError> {
        let (id, step, now, audit) = (id.to_owned(), step.clone(), now.to_owned(), audit.clone());
        self.on_writer(move |conn| grants::step(conn, &id, &step, &now, &audit))
    }

    fn issue_grant_token(
        &self,
        token: &crate::IssuedToken,
        now: &str,
        max_tokens: u64,
    ) -> Result<Result<(), crate::GrantConflict>, StoreError> {
        let (token, now) = (token.clone(), now.to_owned());
        self.on_writer(move |conn| grants::issue(conn, &token, &now, max_tokens))
    }

    fn grant_by_token(&self, hash: &str, now: &str) -> Result<Option<crate::TokenGrant>, StoreError> {
        grants::by_token(&*self.reader()?, hash, now)
    }

    fn register_client(&self, client: &crate::OAuthClient, max: u64) -> Result<(), StoreError> {
        let client = client.clone();
        self.on_writer(move |conn| oauth::register(conn, &client, max))
    }

    fn oauth_client(&self, id: &str) -> Result<Option<crate::OAuthClient>, StoreError> {
        oauth::client(&*self.reader()?, id)
    }

    fn auth_request(&self, grant_id: &str) -> Result<Option<crate::AuthRequest>, StoreError> {
        oauth::request(&*self.reader()?, grant_id)
    }

    fn set_auth_code(&self, grant_id: &str, code_hash: &str, expires: &str) -> Result<(), StoreError> {
        let (id, hash, expires) = (grant_id.to_owned(), code_hash.to_owned(), expires.to_owned());
        self.on_writer(move |conn| oauth::set_code(conn, &id, &hash, &expires))
    }

    fn take_auth_code(&self, code_hash: &str, now: &str) -> Result<crate::CodeUse, StoreError> {
        let (hash, now) = (code_hash.to_owned(), now.to_owned());
        self.on_writer(move |conn| oauth::take_code(conn, &hash, &now))
    }

    fn issue_oauth_tokens(
        &self,
        tokens: &crate::OAuthTokens,
        spent: Option<&str>,
        now: &str,
        max_tokens: u64,
    ) -> Result<Result<(), crate::GrantConflict>, StoreError> {
        let (tokens, spent, now) = (tokens.clone(), spent.map(str::to_owned), now.to_owned());
        self.on_writer(move |conn| oauth::issue(conn, &tokens, spent.as_deref(), &now, max_tokens))
    }

    fn refresh_grant(&self, hash: &str, now: &str) -> Result<Option<(String, String)>, StoreError> {
        oauth::refresh_grant(&*self.reader()?, hash, now)
    }

    fn token_grant(&self, hash: &str) -> Result<Option<String>, StoreError> {
        oauth::token_grant(&*self.reader()?, hash)
    }

    fn issue_approval(&self, approval: &crate::Approval, now: &str, max: usize) -> Result<(), StoreError> {
        let (approval, now) = (approval.clone(), now.to_owned());
        self.on_writer(move |conn| approvals::issue(conn, &approval, &now, max))
    }

    fn spend_approval(
        &self,
        key: &str,
        call: &crate::ApprovedCall,
        now: &str,
    ) -> Result<Result<(), crate::Refusal>, StoreError> {
        let (key, call, now) = (key.to_owned(), call.clone(), now.to_owned());
        self.on_writer(move |conn| approvals::spend(conn, &key, &call, &now))
    }

    fn waiting_approvals(&self, now: &str) -> Result<Vec<crate::Approval>, StoreError> {
        approvals::waiting(&*self.reader()?, now)
    }

    fn approval(&self, key: &str, now: &str) -> Result<Option<crate::Approval>, StoreError> {
        approvals::get(&*self.reader()?, key, now)
    }

    fn decide_approval(
        &self,
        key: &str,
        consent: &crate::Consent,
        now: &str,
    ) -> Result<Option<crate::Approval>, StoreError> {
        let (key, consent, now) = (key.to_owned(), consent.clone(), now.to_owned());
        self.on_writer(move |conn| approvals::decide(conn, &key, &consent, &now))
    }
}

fn read_by_id(
    conn: &Connection,
    cache: &SqlCache,
    name: &str,
    ent: &Entity,
    id: &str,
) -> Result<Option<Row>, StoreError> {
    let mut stmt = conn.prepare_cached(&cache.get(name, ent).by_id)?;
    Ok(stmt.query_row([id], |r| row::read(ent, r)).optional()?)
}

/// The value of a record's label field (its id when the entity names no
/// label), or `None` when no record has `id`. Reads the one column: a full
/// row decoded into a map cost the writer a twentieth of its time.
fn read_label(
    conn: &Connection,
    cache: &SqlCache,
    name: &str,
    ent: &Entity,
    id: &str,
) -> Result<Option<serde_json::Value>, StoreError> {
    let sql = cache.get(name, ent);
    let mut stmt = conn.prepare_cached(&sql.label_by_id)?;
    let value = stmt
        .query_row([id], |r| {
            let column = r.get_ref(0)?;
            Ok(sql.label_kind.as_ref().map_or_else(|| row::text(column), |k| row::from_sql(k, column)))
        })
        .optional()?;
    Ok(value)
}

/// The minute (of the app's clock) expired idempotency keys were last purged.
static LAST_KEY_PURGE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// Checks the write's `Idempotency-Key`: a live one refuses the write and names
/// the record its first use wrote; true when the key is to be recorded.
fn claim_key(conn: &Connection, write: &Write) -> Result<bool, StoreError> {
    let Some(key) = &write.key else { return Ok(false) };
    let cutoff = a2app_definition::datetime::format(write.now.checked_sub(KEY_LIFETIME).unwrap_or(write.now));
    // Expired keys are purged at most once a minute (by the app's clock), not
    // on every write; until then the lookup itself ignores them.
    let minute = write.now.as_second() / 60;
    if LAST_KEY_PURGE.swap(minute, std::sync::atomic::Ordering::Relaxed) != minute {
        conn.prepare_cached("DELETE FROM _a2app_keys WHERE created < ?1")?.execute([&cutoff])?;
    }
    let first: Option<String> = conn
        .prepare_cached("SELECT record_id FROM _a2app_keys WHERE entity = ?1 AND key = ?2 AND created >= ?3")?
        .query_row([&write.entity, key, &cutoff], |r| r.get(0))
        .optional()?;
    match first {
        Some(id) => Err(StoreError::DuplicateRequest { id }),
        None => Ok(true),
    }
}

/// Writes the audit entry (in the same transaction) and returns the receipt.
fn audit(
    conn: &Connection,
    cache: &SqlCache,
    schema: &Schema,
    write: &Write,
    row: &Row,
    action: &str,
    before: Option<&Row>,
) -> Result<protocol::receipt::Receipt, StoreError> {
    let receipt = verify::receipt(schema, write, row, action, before, |ent, entity, id| {
        read_label(conn, cache, entity, ent, id).ok()?
    });
    let text = serde_json::to_string(&receipt).map_err(|e| StoreError::Internal(e.to_string()))?;
    conn.prepare_cached(
        "INSERT INTO _a2app_audit (at, entity, record_id, action, agent, caller, receipt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(rusqlite::params![receipt.at, write.entity, receipt.id, action, write.agent, write.caller, text])?;
    Ok(receipt)
}

/// An update with set modifiers, as the plain write they make of the record
/// as stored now, in the writer's transaction: nothing can change it between
/// this read and the write. `None` for a write without modifiers.
fn modified(conn: &Connection, cache: &SqlCache, schema: &Schema, write: &Write) -> Result<Option<Write>, StoreError> {
    let WriteKind::Update { id, .. } = &write.kind else { return Ok(None) };
    if write.modifiers.is_empty() {
        return Ok(None);
    }
    let ent = entity(schema, &write.entity)?;
    let current = read_by_id(conn, cache, &write.entity, ent, id)?.ok_or(StoreError::NotFound)?;
    verify::modified(ent, write, &current).map(Some)
}

/// One write, inside the writer's transaction: the row as read back, and the action.
fn apply(
    conn: &Connection,
    cache: &SqlCache,
    schema: &Schema,
    write: &Write,
) -> Result<(Row, &'static str, Option<Row>), StoreError> {
    let name = write.entity.as_str();
    let now = a2app_definition::datetime::format(write.now);
    let ent = entity(schema, name)?;
    let table = quote(name);
    match &write.kind {
        WriteKind::Create { id } => {
            check_refs(conn, ent, &write.values)?;
            let mut cols = vec!["\"id\"".to_owned()];
            let mut params = vec![Sql::Text(id.clone())];
            for (field, value) in &write.values {
                let Some(spec) = ent.fields.get(field) else { continue };
                cols.push(quote(field));
                params.push(row::to_sql(&spec.kind, value));
            }
            cols.push("\"created\"".into());
            cols.push("\"updated\"".into());
            params.push(Sql::Text(now.clone()));
            params.push(Sql::Text(now.clone()));
            let marks = vec!["?"; cols.len()].join(", ");
            let sql = format!("INSERT INTO {table} ({}) VALUES ({marks})", cols.join(", "));
            execute_row_write(conn, &sql, &params, &write.values)?;
            let row = read_by_id(conn, cache, name, ent, id)?
                .ok_or_else(|| StoreError::NotStored(vec![verify::missing_row()]))?;
            verify::read_back(&write.values, &row)?;
            // A create rule judges the record as it would be stored.
            if !satisfies(conn, schema, name, id, write)? {
                return Err(StoreError::Denied);
            }
            Ok((row, "create", None))
        }
        WriteKind::Update { id, if_match } => {
            let current = read_by_id(conn, cache, name, ent, id)?.ok_or(StoreError::NotFound)?;
            // A record the rule hides is, for this caller, not there.
            if !satisfies(conn, schema, name, id, write)? {
                return Err(StoreError::NotFound);
            }
            verify::version_matches(if_match.as_deref(), &current)?;
            check_refs(conn, ent, &write.values)?;
            let mut sets = Vec::new();
            let mut params = Vec::new();
            for (field, value) in &write.values {
                let Some(spec) = ent.fields.get(field) else { continue };
                sets.push(format!("{} = ?", quote(field)));
                params.push(row::to_sql(&spec.kind, value));
            }
            sets.push("\"updated\" = ?".into());
            params.push(Sql::Text(now.clone()));
            params.push(Sql::Text(id.clone()));
            let sql = format!("UPDATE {table} SET {} WHERE \"id\" = ?", sets.join(", "));
            execute_row_write(conn, &sql, &params, &write.values)?;
            let row = read_by_id(conn, cache, name, ent, id)?
                .ok_or_else(|| StoreError::NotStored(vec![verify::missing_row()]))?;
            verify::read_back(&write.values, &row)?;
            Ok((row, "update", Some(current)))
        }
        WriteKind::Delete { id, if_match } => {
            let current = read_by_id(conn, cache, name, ent, id)?.ok_or(StoreError::NotFound)?;
            if !satisfies(conn, schema, name, id, write)? {
                return Err(StoreError::NotFound);
            }
            verify::version_matches(if_match.as_deref(), &current)?;
            unlink(conn, schema, name, id, &now)?;
            conn.prepare_cached(&format!("DELETE FROM {table} WHERE \"id\" = ?1"))?.execute([id])?;
            if read_by_id(conn, cache, name, ent, id)?.is_some() {
                return Err(StoreError::NotStored(vec![verify::still_there()]));
            }
            Ok((current, "delete", None))
        }
    }
}

/// Runs an INSERT or UPDATE of one row, naming the constraint it broke.
fn execute_row_write(
    conn: &Connection,
    sql: &str,
    params: &[Sql],
    values: &Map<String, Value>,
) -> Result<(), StoreError> {
    match conn.prepare_cached(sql)?.execute(params_from_iter(params.iter())) {
        Ok(_) => Ok(()),
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
            Err(StoreError::DuplicateId)
        }
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.extended_code == rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE => {
            Err(StoreError::NotUnique(verify::unique_violation(values)))
        }
        Err(e) => Err(e.into()),
    }
}

/// Whether the record satisfies the write's rule (true when there is none).
fn satisfies(conn: &Connection, schema: &Schema, name: &str, id: &str, write: &Write) -> Result<bool, StoreError> {
    let Some(rule) = &write.rule else { return Ok(true) };
    let frag = query::compile_filter(schema, name, &rule.expr, &rule.ctx)?;
    let sql = format!("SELECT 1 FROM {} WHERE {}.\"id\" = ? AND ({})", quote(name), quote(name), frag.sql);
    let mut params = vec![Sql::Text(id.to_owned())];
    params.extend(frag.params);
    Ok(conn.prepare_cached(&sql)?.exists(params_from_iter(params.iter()))?)
}

/// Every ref must name an existing record of its entity.
fn check_refs(conn: &Connection, ent: &Entity, values: &Map<String, Value>) -> Result<(), StoreError> {
    let mut violations = Vec::new();
    for (field, target, ids) in verify::refs(ent, values) {
        let mut stmt = conn.prepare_cached(&format!("SELECT 1 FROM {} WHERE \"id\" = ?1", quote(target)))?;
        for id in ids {
            if !stmt.exists([id])? {
                violations.push(verify::missing_ref(field, target, id));
                break;
            }
        }
    }
    if violations.is_empty() { Ok(()) } else { Err(StoreError::MissingRefs(violations)) }
}

/// Before a delete: refs to the record are cleared, as PocketBase does for
/// optional relations; a required ref to it refuses the delete.
fn unlink(conn: &Connection, schema: &Schema, target: &str, id: &str, now: &str) -> Result<(), StoreError> {
    for (name, ent) in &schema.entities {
        for (field, spec) in &ent.fields {
            if spec.kind.target() != Some(target) {
                continue;
            }
            let table = quote(name);
            let col = quote(field);
            let multi = matches!(spec.kind, FieldType::ListRef { .. });
            let holds = if multi {
                format!("EXISTS (SELECT 1 FROM json_each({table}.{col}) WHERE value = ?1)")
            } else {
                format!("{table}.{col} = ?1")
            };
            if spec.required {
                let used: bool =
                    conn.prepare_cached(&format!("SELECT 1 FROM {table} WHERE {holds} LIMIT 1"))?.exists([id])?;
                if used {
                    return Err(StoreError::InUse { entity: name.clone(), field: field.clone() });
                }
                continue;
            }
            let set = if multi {
                format!("(SELECT json_group_array(value) FROM json_each({table}.{col}) WHERE value != ?1)")
            } else {
                "''".to_owned()
            };
            conn.prepare_cached(&format!("UPDATE {table} SET {col} = {set}, \"updated\" = ?2 WHERE {holds}"))?
                .execute([id, now])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
