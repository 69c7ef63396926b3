//! The PostgreSQL store: DESIGN section 8's scale-out store, where stateless
//! server nodes share one database. Being built; docs/decisions/0019 says
//! what it does so far and the order of what follows.
//! It is not yet a [`Store`](crate::Store), and no command opens it.
//!
//! Its shape is the SQLite store's: a pool of connections for reads, and
//! queued writes answered once committed. Where the SQLite store relies on
//! its single writer, this one relies on row locks, because another node may
//! write at the same moment: a write locks the row it changes and the rows
//! its refs name, an `Idempotency-Key` is claimed by an insert that waits for
//! a competing one, and migrations take an advisory lock.
//!
//! Durability: a COMMIT returns once PostgreSQL has flushed its WAL (with
//! the server's default `synchronous_commit = on`), and no write is
//! acknowledged, nor its change published, before its COMMIT returned.
//!
//! The client is the synchronous `postgres` crate, which runs a runtime of its
//! own per call: every method blocks, and must be called where blocking is
//! allowed (a blocking-pool thread, a writer thread, a test), never on an
//! async worker.

mod changes;
mod grants;
mod migrate;
mod oauth;
mod operations;
mod records;
mod requests;
mod row;
mod surfaces;

use crate::sql::SqlCache;
pub(crate) use crate::sql::quote;
use crate::verify::entity;
use crate::{
    AuditEntry, AuthRequest, CodeUse, Credentials, GrantConflict, GrantLimits, GrantRoom, GrantStep, IssuedToken,
    Migration, OAuthClient, OAuthTokens, Pending, Rendered, Row, StoreError, TokenGrant, Write, Written,
};
use postgres::Statement;
use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{GenericClient, NoTls, Transaction};
use protocol::Violation;
use protocol::schema::Schema;
use r2d2_postgres::PostgresConnectionManager;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

type Pool = r2d2::Pool<Manager>;

/// A pooled connection and the statements prepared on it, by their text: a
/// statement run again (every write runs the same ten or so) is sent once
/// prepared, not parsed and planned anew, which took a round trip each.
pub(crate) struct Conn {
    client: postgres::Client,
    statements: HashMap<String, Statement>,
    /// The migration count these statements were prepared under, and the
    /// store's count now.
    prepared_under: u64,
    migrations: Arc<AtomicU64>,
}

impl std::ops::Deref for Conn {
    type Target = postgres::Client;
    fn deref(&self) -> &postgres::Client {
        &self.client
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut postgres::Client {
        &mut self.client
    }
}

/// r2d2's manager for [`Conn`]: the `postgres` one, plus an empty cache.
pub(crate) struct Manager {
    inner: PostgresConnectionManager<NoTls>,
    /// Bumped by every migration: statements prepared before are dropped,
    /// since a changed table can make one unusable.
    migrations: Arc<AtomicU64>,
}

impl r2d2::ManageConnection for Manager {
    type Connection = Conn;
    type Error = postgres::Error;

    fn connect(&self) -> Result<Conn, postgres::Error> {
        let prepared_under = self.migrations.load(Ordering::SeqCst);
        let migrations = Arc::clone(&self.migrations);
        Ok(Conn { client: self.inner.connect()?, statements: HashMap::new(), prepared_under, migrations })
    }

    fn is_valid(&self, conn: &mut Conn) -> Result<(), postgres::Error> {
        self.inner.is_valid(&mut conn.client)
    }

    fn has_broken(&self, conn: &mut Conn) -> bool {
        self.inner.has_broken(&mut conn.client)
    }
}

/// A transaction whose statements are prepared once per connection (see
/// [`Conn`]); [`Tx::raw`] for statements run once (DDL) or for code that
/// takes any client.
pub(crate) struct Tx<'a> {
    inner: Transaction<'a>,
    statements: &'a mut HashMap<String, Statement>,
}

type Params<'p> = [&'p (dyn ToSql + Sync)];

impl<'a> Tx<'a> {
    fn prepared(&mut self, sql: &str) -> Result<Statement, postgres::Error> {
        if let Some(found) = self.statements.get(sql) {
            return Ok(found.clone());
        }
        let statement = self.inner.prepare(sql)?;
        self.statements.insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    pub fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.inner.execute(&statement, params)
    }

    pub fn query(&mut self, sql: &str, params: &Params<'_>) -> Result<Vec<postgres::Row>, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.inner.query(&statement, params)
    }

    pub fn query_one(&mut self, sql: &str, params: &Params<'_>) -> Result<postgres::Row, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.inner.query_one(&statement, params)
    }

    pub fn query_opt(&mut self, sql: &str, params: &Params<'_>) -> Result<Option<postgres::Row>, postgres::Error> {
        let statement = self.prepared(sql)?;
        self.inner.query_opt(&statement, params)
    }

    /// The transaction itself, its statements not kept.
    pub fn raw(&mut self) -> &mut Transaction<'a> {
        &mut self.inner
    }
}

/// Connections kept for reads and writes; PostgreSQL's default allows 100
/// per server, shared by every node.
const POOL_SIZE: u32 = 16;
/// How often a transaction PostgreSQL aborted for a deadlock or a
/// serialization failure is run again before the error is the answer.
const RETRIES: usize = 3;

/// Why work in a transaction stopped: a store answer (a refusal), or an error
/// of the database, which may ask for the transaction to be run again.
#[derive(Debug)]
pub(crate) enum Fail {
    Store(StoreError),
    Db(postgres::Error),
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Self {
        Fail::Store(e)
    }
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Db(e)
    }
}

impl From<a2app_filter::FilterError> for Fail {
    fn from(e: a2app_filter::FilterError) -> Self {
        Fail::Store(e.into())
    }
}

impl Fail {
    /// Whether PostgreSQL aborted the transaction only because of a competing
    /// one: running it again may succeed.
    fn retryable(&self) -> bool {
        matches!(self, Fail::Db(e) if e.code().is_some_and(|c| *c == SqlState::T_R_DEADLOCK_DETECTED || *c == SqlState::T_R_SERIALIZATION_FAILURE))
    }

    fn into_store(self) -> StoreError {
        match self {
            Fail::Store(e) => e,
            // Text PostgreSQL refuses (U+0000 in a `text` column), wherever
            // it came from: the caller's input, not the store, is at fault.
            Fail::Db(e)
                if e.code().is_some_and(|c| {
                    *c == SqlState::CHARACTER_NOT_IN_REPERTOIRE || *c == SqlState::UNTRANSLATABLE_CHARACTER
                }) =>
            {
                StoreError::Unstorable(vec![protocol::Violation::new(
                    protocol::ErrorCode::InvalidString,
                    "a text holds a character PostgreSQL cannot hold (U+0000)",
                )])
            }
            // The database's own words go to the server's log; the caller
            // gets an internal error either way (see `error`).
            Fail::Db(e) => StoreError::Internal(describe(&e)),
        }
    }
}

impl From<postgres::Error> for StoreError {
    fn from(e: postgres::Error) -> Self {
        Fail::Db(e).into_store()
    }
}

/// A database error in full: its own `Display` says only "db error" for
/// what the server answered, leaving out the code and the message, and
/// nothing of the cause of a failed connection.
pub(crate) fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!("PostgreSQL {} {}: {}", db.severity(), db.code().code(), db.message());
            if let Some(detail) = db.detail() {
                text.push_str(&format!(" ({detail})"));
            }
            if let Some(constraint) = db.constraint() {
                text.push_str(&format!(" [constraint {constraint}]"));
            }
            text
        }
        None => {
            let mut text = format!("PostgreSQL: {e}");
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                text.push_str(&format!(": {c}"));
                cause = c.source();
            }
            text
        }
    }
}

/// What an advisory lock guards; held until the transaction ends. The
/// second key is the schema's, so apps sharing a database in schemas of
/// their own never wait for each other.
#[derive(Debug, Clone, Copy)]
#[repr(i32)]
pub(crate) enum Lock {
    Migration = 1,
    Render = 2,
    Requests = 3,
    /// Grant asks and client registrations: the pending bounds, and the
    /// clients a registration may prune.
    Grants = 4,
    Approvals = 5,
}

/// Takes `lock` until the transaction ends; other nodes taking it wait.
pub(crate) fn lock(tx: &mut impl GenericClient, lock: Lock) -> Result<(), Fail> {
    tx.execute("SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))", &[&(lock as i32)])?;
    Ok(())
}

/// Whether a lookup key holds U+0000, which PostgreSQL's `text` cannot: such
/// a key names nothing stored, and a lookup answers so without asking (as the
/// SQLite store finds nothing), instead of the error PostgreSQL would raise.
fn nul(key: &str) -> bool {
    key.contains('\0')
}

/// A queued write, run by the writer thread.
type Job = Box<dyn FnOnce(&Pool) + Send>;

pub use changes::{Listener, StoredChange};

pub struct PostgresStore {
    config: postgres::Config,
    /// This node's key: its jobs name it, and it holds the key's advisory
    /// lock while it lives (see `operations`).
    node: i64,
    _liveness: operations::Liveness,
    pool: Pool,
    /// Bumped by every migration (see [`Manager`]).
    migrations: Arc<AtomicU64>,
    /// The writer thread's queue; it stops when the store is dropped. One
    /// thread, each write in its own transaction: so `OnCommit` sees this
    /// node's writes in commit order, as its contract says (several threads
    /// would commit and announce in either order). A node's writes are
    /// bounded by one commit at a time; nodes add up.
    jobs: mpsc::Sender<Job>,
    sql: Arc<SqlCache>,
}

impl PostgresStore {
    /// Connects to the database `config` names (a `postgres://` URL or
    /// libpq's `key=value` form parse into one) and checks that it answers.
    pub fn open(config: postgres::Config) -> Result<PostgresStore, StoreError> {
        let mut config = config;
        // A connection cut without a word (a crashed server, a NAT's idle
        // timeout) fails within about fifteen seconds instead of TCP's hours:
        // the listener and the liveness lock depend on noticing.
        config
            .connect_timeout(Duration::from_secs(10))
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(10))
            .keepalives_interval(Duration::from_secs(2))
            .keepalives_retries(3)
            .tcp_user_timeout(Duration::from_secs(15));
        // One connection first: a wrong address or database answers at once,
        // with the server's reason, where the pool would wait and say less.
        let mut first = config
            .connect(NoTls)
            .map_err(|e| StoreError::Internal(format!("cannot connect to PostgreSQL: {}", describe(&e))))?;
        let encoding: String = first.query_one("SHOW server_encoding", &[])?.get(0);
        if encoding != "UTF8" {
            return Err(StoreError::Internal(format!(
                "the PostgreSQL database is encoded {encoding}; a2app needs UTF8 (CREATE DATABASE … ENCODING 'UTF8')"
            )));
        }
        drop(first);
        let migrations = Arc::new(AtomicU64::new(0));
        let pool = r2d2::Pool::builder()
            .max_size(POOL_SIZE)
            .min_idle(Some(2))
            .connection_timeout(std::time::Duration::from_secs(10))
            .build(Manager {
                inner: PostgresConnectionManager::new(config.clone(), NoTls),
                migrations: Arc::clone(&migrations),
            })
            .map_err(|e| StoreError::Internal(format!("cannot connect to PostgreSQL: {e}")))?;
        let (jobs, queue) = mpsc::channel::<Job>();
        let writer_pool = pool.clone();
        std::thread::Builder::new()
            .name("a2app-pg-writer".into())
            .spawn(move || {
                while let Ok(job) = queue.recv() {
                    job(&writer_pool);
                }
            })
            .map_err(|e| StoreError::Internal(format!("cannot start the writer thread: {e}")))?;
        // Any number will do but one a live node holds: a clash is as likely as two equal random i64.
        let node = rand::random::<i64>();
        let liveness = operations::Liveness::hold(&config, node).map_err(Fail::into_store)?;
        Ok(PostgresStore {
            config,
            node,
            _liveness: liveness,
            pool,
            migrations,
            jobs,
            sql: Arc::new(SqlCache::new("$1")),
        })
    }

    fn connection(&self) -> Result<r2d2::PooledConnection<Manager>, StoreError> {
        self.pool.get().map_err(|e| StoreError::Internal(format!("no PostgreSQL connection: {e}")))
    }

    /// Hands every record change committed from now on, by any node, to
    /// `deliver`, in commit order (see `changes`), until the listener is dropped.
    pub fn listen(&self, deliver: impl Fn(StoredChange) + Send + 'static) -> Result<Listener, StoreError> {
        changes::listen(self.config.clone(), deliver)
    }

    /// Brings the database to `schema` (see `migrate`).
    pub fn migrate(&self, schema: &Schema, allow_destructive: bool) -> Result<Migration, StoreError> {
        self.sql.clear();
        let done = transaction(&self.pool, |tx| migrate::migrate(tx.raw(), schema, allow_destructive));
        // Whatever the outcome: a failed migration's DDL is rolled back, but
        // a statement prepared during it would name what was never made.
        self.migrations.fetch_add(1, Ordering::SeqCst);
        done
    }

    /// One write with its read-back, idempotency key and audit entry, in one
    /// transaction; answered once committed, after `on_commit` saw it.
    pub fn write(&self, schema: &Arc<Schema>, write: Write) -> Pending<Written> {
        let (answer, pending) = tokio::sync::oneshot::channel();
        let (schema, cache) = (Arc::clone(schema), Arc::clone(&self.sql));
        let job: Job = Box::new(move |pool| {
            let done = transaction(pool, |tx| records::write(tx, &cache, &schema, &write));
            if let (Ok(written), Some(hook)) = (&done, &write.on_commit) {
                (hook.0)(written);
            }
            let _ = answer.send(done);
        });
        // A send fails only when the writer thread is gone; the dropped
        // answer then reads as a closed channel.
        let _ = self.jobs.send(job);
        pending
    }

    /// Rows of one entity by id, in no particular order; missing ids are skipped.
    pub fn get_many(&self, schema: &Schema, entity_name: &str, ids: &[String]) -> Result<Vec<Row>, StoreError> {
        let ent = entity(schema, entity_name)?;
        // An id PostgreSQL's text cannot hold names no record, as on SQLite.
        let ids: Vec<&String> = ids.iter().filter(|id| !nul(id)).collect();
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT {} FROM {} WHERE \"id\" = ANY($1)",
            self.sql.get(entity_name, ent).columns,
            quote(entity_name)
        );
        let rows = self.connection()?.query(&sql, &[&ids])?;
        Ok(rows.iter().map(|r| row::read(ent, r)).collect::<Result<_, _>>()?)
    }

    /// Ids of the rows of `entity` whose `field` points at `target`, at most `limit`.
    pub fn referencing(
        &self,
        schema: &Schema,
        entity_name: &str,
        field: &str,
        target: &str,
        limit: u64,
    ) -> Result<Vec<String>, StoreError> {
        let ent = entity(schema, entity_name)?;
        let Some(spec) = ent.fields.get(field) else { return Ok(Vec::new()) };
        if nul(target) {
            return Ok(Vec::new());
        }
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let sql = format!(
            "SELECT \"id\" FROM {} WHERE {} LIMIT $2",
            quote(entity_name),
            records::holds(&quote(field), spec.kind.is_multi())
        );
        let rows = self.connection()?.query(&sql, &[&target, &limit])?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// Refs among `values` that name no existing record.
    pub fn missing_refs(
        &self,
        schema: &Schema,
        entity_name: &str,
        values: &Map<String, Value>,
    ) -> Result<Vec<Violation>, StoreError> {
        let ent = entity(schema, entity_name)?;
        // A read: its transaction commits nothing.
        transaction(&self.pool, |tx| match records::check_refs(tx, ent, values, false) {
            Ok(()) => Ok(Vec::new()),
            Err(Fail::Store(StoreError::MissingRefs(v))) => Ok(v),
            Err(e) => Err(e),
        })
    }

    /// Audit entries stored after `since` (a wire-form time), oldest first.
    pub fn receipts(&self, since: &str, limit: u64) -> Result<Vec<AuditEntry>, StoreError> {
        let limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
        let rows = self.connection()?.query(&super::sql::receipts_page('$'), &[&since, &limit])?;
        rows.iter()
            .map(|r| {
                let seq: i64 = r.get(0);
                let receipt = serde_json::from_str(r.get::<_, &str>(1))
                    .map_err(|e| StoreError::Internal(format!("audit entry {seq}: {e}")))?;
                Ok(AuditEntry { seq, receipt })
            })
            .collect()
    }

    /// A named secret of the app, created on first use; every node gets the
    /// same one (the first stored wins).
    pub fn secret(&self, name: &str) -> Result<String, StoreError> {
        let key = format!("secret:{name}");
        let mut conn = self.connection()?;
        conn.execute(
            "INSERT INTO _a2app_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
            &[&key, &a2app_definition::secret::agent_token()],
        )?;
        let row = conn.query_one("SELECT value FROM _a2app_meta WHERE key = $1", &[&key])?;
        Ok(row.get(0))
    }

    /// The id, password hash and token key of the user with this email.
    pub fn credentials(&self, schema: &Schema, email: &str) -> Result<Option<Credentials>, StoreError> {
        if nul(email) {
            return Ok(None);
        }
        if !a2app_definition::users::has_users(schema) {
            return Ok(None);
        }
        // Folded as the unique index is, so the lookup uses it.
        let sql = format!(
            "SELECT u.\"id\", a.password_hash, a.token_key FROM \"users\" AS u \
             JOIN _a2app_auth AS a ON a.user_id = u.\"id\" WHERE {} = {} AND u.\"email\" <> ''",
            migrate::folded("u.\"email\""),
            migrate::folded("$1")
        );
        let found = self.connection()?.query_opt(&sql, &[&email])?;
        Ok(found.map(|r| Credentials { user_id: r.get(0), password_hash: r.get(1), token_key: r.get(2) }))
    }

    /// Persists a new job, claiming its `Idempotency-Key` in the same transaction.
    pub fn create_job(&self, job: &protocol::operation::Job, key: Option<&str>) -> Result<(), StoreError> {
        transaction(&self.pool, |tx| operations::create_job(tx, job, key, self.node))
    }

    /// Replaces a job's persisted state.
    pub fn put_job(&self, job: &protocol::operation::Job) -> Result<(), StoreError> {
        operations::put_job(&mut **self.connection()?, job, self.node).map_err(Fail::into_store)
    }

    /// At a node's start: the queued and running jobs of nodes that are
    /// gone become interrupted (never re-run); those of live nodes go on.
    pub fn interrupt_jobs(&self, now: &str) -> Result<u64, StoreError> {
        transaction(&self.pool, |tx| operations::interrupt_jobs(tx, now))
    }

    pub fn job(&self, id: &str) -> Result<Option<protocol::operation::Job>, StoreError> {
        if nul(id) {
            return Ok(None);
        }
        operations::job(&mut **self.connection()?, id).map_err(Fail::into_store)
    }

    /// When a scheduled operation last ran, if ever.
    pub fn last_run(&self, operation: &str) -> Result<Option<String>, StoreError> {
        operations::last_run(&mut **self.connection()?, operation).map_err(Fail::into_store)
    }

    /// Records `at` as the last run if the stored one is still `seen`: true
    /// when this node claimed the run.
    pub fn claim_run(&self, operation: &str, seen: Option<&str>, at: &str) -> Result<bool, StoreError> {
        operations::claim_run(&mut **self.connection()?, operation, seen, at).map_err(Fail::into_store)
    }

    /// Appends an audit entry that is not a record write (an operation run).
    pub fn audit(&self, receipt: &protocol::receipt::Receipt) -> Result<(), StoreError> {
        operations::audit(&mut **self.connection()?, receipt).map_err(Fail::into_store)
    }

    /// Stores a new approval key.
    pub fn issue_approval(&self, approval: &crate::Approval, now: &str, max: usize) -> Result<(), StoreError> {
        transaction(&self.pool, |tx| operations::issue_approval(tx, approval, now, max))
    }

    /// Spends an approval key for this call, at most once across every node.
    pub fn spend_approval(
        &self,
        key: &str,
        call: &crate::ApprovedCall,
        now: &str,
    ) -> Result<Result<(), crate::Refusal>, StoreError> {
        transaction(&self.pool, |tx| operations::spend_approval(tx, key, call, now))
    }

    /// Applies checked A2UI messages to the surfaces they name, all or nothing.
    pub fn render_surfaces(&self, messages: &[a2app_a2ui::Message], now: &str) -> Result<Rendered, StoreError> {
        transaction(&self.pool, |tx| surfaces::render(tx, messages, now))
    }

    /// One surface's state, if it exists.
    pub fn surface(&self, id: &str) -> Result<Option<a2app_a2ui::Surface>, StoreError> {
        if nul(id) {
            return Ok(None);
        }
        surfaces::get(&mut **self.connection()?, id).map_err(Fail::into_store)
    }

    /// Every surface's id and when it last changed, newest first.
    pub fn surfaces(&self) -> Result<Vec<(String, String)>, StoreError> {
        surfaces::list(&mut **self.connection()?).map_err(Fail::into_store)
    }

    /// Adds a request to the app-to-agent queue unless its asker has
    /// `max_open` open; `audit` is written with it.
    pub fn ask(
        &self,
        request: &protocol::request::AgentRequest,
        max_open: u64,
        keep: u64,
        audit: &protocol::receipt::Receipt,
    ) -> Result<bool, StoreError> {
        transaction(&self.pool, |tx| requests::ask(tx, request, max_open, keep, audit))
    }

    /// One request, if it exists.
    pub fn request(&self, id: &str) -> Result<Option<protocol::request::AgentRequest>, StoreError> {
        if nul(id) {
            return Ok(None);
        }
        requests::get(&mut **self.connection()?, id).map_err(Fail::into_store)
    }

    /// A page of requests and how many match the filter.
    pub fn requests(
        &self,
        filter: &crate::RequestFilter,
    ) -> Result<(Vec<protocol::request::AgentRequest>, u64), StoreError> {
        requests::list(&mut **self.connection()?, filter).map_err(Fail::into_store)
    }

    /// Moves a request on (claim, answer, cancel), atomically against its
    /// stored state on every node, with `audit` in the same transaction.
    pub fn step_request(
        &self,
        id: &str,
        step: &crate::RequestStep,
        now: &str,
        audit: &protocol::receipt::Receipt,
    ) -> Result<Result<protocol::request::AgentRequest, crate::RequestConflict>, StoreError> {
        transaction(&self.pool, |tx| requests::step(tx, id, step, now, audit))
    }

    /// Adds a pending grant (with its audit entry) unless the bounds are met.
    pub fn ask_grant(
        &self,
        grant: &protocol::grant::Grant,
        limits: GrantLimits,
        audit: &protocol::receipt::Receipt,
        request: Option<&AuthRequest>,
    ) -> Result<GrantRoom, StoreError> {
        transaction(&self.pool, |tx| grants::ask(tx, grant, limits, audit, request))
    }

    pub fn grant(&self, id: &str) -> Result<Option<protocol::grant::Grant>, StoreError> {
        if nul(id) {
            return Ok(None);
        }
        grants::get(&mut **self.connection()?, id).map_err(Fail::into_store)
    }

    /// The pending grants, oldest first: all, or those asked from `source`.
    pub fn pending_grants(&self, source: Option<&str>, limit: u64) -> Result<Vec<protocol::grant::Grant>, StoreError> {
        grants::pending(&mut **self.connection()?, source, limit).map_err(Fail::into_store)
    }

    /// Newest first: all grants, or those acting for `acts_for`.
    pub fn grants(&self, acts_for: Option<&str>, limit: u64) -> Result<Vec<protocol::grant::Grant>, StoreError> {
        grants::list(&mut **self.connection()?, acts_for, limit).map_err(Fail::into_store)
    }

    /// Approves, denies or revokes a grant if its stored state allows it.
    pub fn step_grant(
        &self,
        id: &str,
        step: &GrantStep,
        now: &str,
        audit: &protocol::receipt::Receipt,
    ) -> Result<Result<protocol::grant::Grant, GrantConflict>, StoreError> {
        transaction(&self.pool, |tx| grants::step(tx, id, step, now, audit))
    }

    /// Spends a signed nonce and stores a token's hash for an active grant.
    pub fn issue_grant_token(
        &self,
        token: &IssuedToken,
        now: &str,
        max_tokens: u64,
    ) -> Result<Result<(), GrantConflict>, StoreError> {
        transaction(&self.pool, |tx| grants::issue(tx, token, now, max_tokens))
    }

    /// The active grant a live token (by its hash) belongs to.
    pub fn grant_by_token(&self, hash: &str, now: &str) -> Result<Option<TokenGrant>, StoreError> {
        grants::by_token(&mut **self.connection()?, hash, now).map_err(Fail::into_store)
    }

    /// Registers an OAuth client, or stores it again with a new `used`.
    pub fn register_client(&self, client: &OAuthClient, max: u64) -> Result<(), StoreError> {
        transaction(&self.pool, |tx| oauth::register(tx, client, max))
    }

    pub fn oauth_client(&self, id: &str) -> Result<Option<OAuthClient>, StoreError> {
        if nul(id) {
            return Ok(None);
        }
        oauth::client(&mut **self.connection()?, id).map_err(Fail::into_store)
    }

    /// The authorization request behind an OAuth grant.
    pub fn auth_request(&self, grant_id: &str) -> Result<Option<AuthRequest>, StoreError> {
        if nul(grant_id) {
            return Ok(None);
        }
        oauth::request(&mut **self.connection()?, grant_id).map_err(Fail::into_store)
    }

    /// Gives an approved OAuth grant its authorization code (by hash).
    pub fn set_auth_code(&self, grant_id: &str, code_hash: &str, expires: &str) -> Result<(), StoreError> {
        oauth::set_code(&mut **self.connection()?, grant_id, code_hash, expires).map_err(Fail::into_store)
    }

    /// Spends an authorization code, once across every node.
    pub fn take_auth_code(&self, code_hash: &str, now: &str) -> Result<CodeUse, StoreError> {
        transaction(&self.pool, |tx| oauth::take_code(tx, code_hash, now))
    }

    /// Stores an OAuth grant's access and refresh tokens (see `Store::issue_oauth_tokens`).
    pub fn issue_oauth_tokens(
        &self,
        tokens: &OAuthTokens,
        spent: Option<&str>,
        now: &str,
        max_tokens: u64,
    ) -> Result<Result<(), GrantConflict>, StoreError> {
        transaction(&self.pool, |tx| oauth::issue(tx, tokens, spent, now, max_tokens))
    }

    /// The grant and audience a live refresh token belongs to.
    pub fn refresh_grant(&self, hash: &str, now: &str) -> Result<Option<(String, String)>, StoreError> {
        oauth::refresh_grant(&mut **self.connection()?, hash, now).map_err(Fail::into_store)
    }

    /// The grant an access or refresh token was issued for, expired or not.
    pub fn token_grant(&self, hash: &str) -> Result<Option<String>, StoreError> {
        oauth::token_grant(&mut **self.connection()?, hash).map_err(Fail::into_store)
    }

    /// The current token key of a user.
    pub fn token_key(&self, user_id: &str) -> Result<Option<String>, StoreError> {
        if nul(user_id) {
            return Ok(None);
        }
        let found =
            self.connection()?.query_opt("SELECT token_key FROM _a2app_auth WHERE user_id = $1", &[&user_id])?;
        Ok(found.map(|r| r.get(0)))
    }
}

/// Runs `work` in a transaction on a pooled connection and commits it; a
/// refusal rolls it back. A transaction PostgreSQL aborted in favour of a
/// competing one runs again, up to [`RETRIES`] times.
fn transaction<T>(pool: &Pool, mut work: impl FnMut(&mut Tx<'_>) -> Result<T, Fail>) -> Result<T, StoreError> {
    let mut conn = pool.get().map_err(|e| StoreError::Internal(format!("no PostgreSQL connection: {e}")))?;
    let migrations = conn.migrations.load(Ordering::SeqCst);
    if conn.prepared_under != migrations {
        conn.statements.clear();
        conn.prepared_under = migrations;
    }
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = (|| {
            let Conn { client, statements, .. } = &mut *conn;
            let mut tx = Tx { inner: client.transaction()?, statements };
            let value = work(&mut tx)?;
            tx.inner.commit()?;
            Ok::<_, Fail>(value)
        })();
        match outcome {
            Ok(value) => return Ok(value),
            Err(fail) if fail.retryable() && attempt <= RETRIES => continue,
            Err(fail) => return Err(fail.into_store()),
        }
    }
}

#[cfg(test)]
mod tests;
