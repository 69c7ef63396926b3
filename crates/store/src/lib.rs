//! Storage: the [`Records`] an app holds and the rest it keeps ([`Store`]),
//! and their two implementations, embedded SQLite (`sqlite`) and PostgreSQL
//! (`postgres`). The only crate that contains SQL; nothing else opens a
//! database.
//!
//! The traits speak in schema terms (entities, rows as JSON maps, parsed
//! filters), never in SQL, so the runtime and the transports never change with
//! the store. Reads block: [`read`] runs them inline when they are cheap
//! (`Records::inline`) and on the blocking pool otherwise. Writes are queued
//! (`Records::write`) and answered on a channel, once durable; the change
//! feed (`realtime`) is told of each in commit order.

mod grants;
pub(crate) mod migration;
pub mod postgres;
pub mod realtime;
mod requests;
mod sql;
pub mod sqlite;
mod surfaces;
mod verify;

use a2app_filter::{Expr, SortKey};
use protocol::Violation;
use protocol::schema::Schema;
use serde_json::{Map, Value};
use std::sync::Arc;

pub use sqlite::query::{QueryContext, RequestInfo};

use a2app_definition::Error;

/// Whether `filter` fits `schema` as a filter of `entity`, judged by
/// compiling it (with `query` as `@request.query.*`): what
/// `a2app_definition::load` asks of every rule and crud filter.
pub fn fits(
    schema: &Schema,
    entity: &str,
    filter: &Expr,
    query: &Map<String, Value>,
) -> Result<(), a2app_filter::FilterError> {
    let ctx = QueryContext {
        now: jiff::Timestamp::UNIX_EPOCH,
        request: RequestInfo { query: query.clone(), ..Default::default() },
    };
    sqlite::query::compile_filter(schema, entity, filter, &ctx).map(drop)
}

/// Runs blocking store work off the async runtime.
pub async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::Internal(format!("store task failed: {e}")))?
}

/// Runs store reads: on the calling async worker when they are cheap (see
/// [`Records::inline`]), which spares a point read or an indexed page the two
/// thread hand-offs of the blocking pool; otherwise on the blocking pool.
/// `work` must only read: it may run twice.
pub async fn read<T: Send + 'static>(
    store: &Arc<dyn Store>,
    work: impl Fn(&dyn Store) -> Result<T, Error> + Send + Sync + 'static,
) -> Result<T, Error> {
    let mut answer = None;
    if store.inline(&mut || answer = Some(work(store.as_ref())))
        && let Some(answer) = answer
    {
        return answer;
    }
    let store = Arc::clone(store);
    blocking(move || work(store.as_ref())).await
}

/// A stored record: `id`, `created`, `updated` and every field, as typed JSON.
pub type Row = Map<String, Value>;

/// The answer to a queued write, delivered once its transaction committed
/// (or failed). A dropped sender means the writer is gone.
pub type Pending<T> = tokio::sync::oneshot::Receiver<Result<T, StoreError>>;

/// Where an app's records live: read, filtered, written with their read-back,
/// receipt and key in one step. The seam of record sources: the embedded and
/// PostgreSQL stores are two; a mapped backend (records that live in another
/// system) is meant to be a third, beside a [`Store`] that keeps the rest.
pub trait Records: Send + Sync + 'static {
    /// One page of rows matching a filter, and the total unless skipped.
    fn list(&self, schema: &Schema, query: &ListQuery<'_>) -> Result<ListResult, StoreError>;

    /// Rows of one entity by id, in no particular order; missing ids are skipped.
    fn get_many(&self, schema: &Schema, entity: &str, ids: &[String]) -> Result<Vec<Row>, StoreError>;

    /// Which of `ids` satisfy `rule` (a view rule), in no particular order.
    fn get_visible(
        &self,
        schema: &Schema,
        entity: &str,
        ids: &[String],
        rule: &Expr,
        ctx: &QueryContext,
    ) -> Result<Vec<String>, StoreError>;

    /// Whether `record` (one of `entity`'s records, as the API shows it)
    /// satisfies `rule`, judged on those values rather than on the row stored
    /// now: a change is judged as it was committed, and a deleted record still
    /// can be. What the rule reads through relations is read as stored now.
    fn record_satisfies(
        &self,
        schema: &Schema,
        entity: &str,
        record: &Map<String, Value>,
        rule: &Expr,
        ctx: &QueryContext,
    ) -> Result<bool, StoreError>;

    /// Ids of the rows of `entity` whose `field` (a ref or list of refs) points
    /// at `target`, at most `limit`, in the order the store finds them: the
    /// back-relation side of expand.
    fn referencing(
        &self,
        schema: &Schema,
        entity: &str,
        field: &str,
        target: &str,
        limit: u64,
    ) -> Result<Vec<String>, StoreError>;

    /// Refs among `values` that name no existing record (a read, outside any write).
    fn missing_refs(
        &self,
        schema: &Schema,
        entity: &str,
        values: &Map<String, Value>,
    ) -> Result<Vec<Violation>, StoreError>;

    /// Runs `work`, which only reads, on the calling thread when that is
    /// cheap: a reader connection is free at once and the reads stay within a
    /// small budget of storage work (a point read, a page of an indexed list).
    /// False when it gave up part-way; the caller then runs `work`'s reads
    /// again where waiting is allowed (the blocking pool) and drops what this
    /// attempt produced.
    fn inline(&self, work: &mut dyn FnMut()) -> bool;

    /// One write, applied with its read-back in one transaction, all or
    /// nothing; the answer arrives once it is durable. When the writer is busy
    /// the write is queued for its next group and this returns at once; when
    /// it is idle the write commits before this returns (on a runtime worker
    /// inside `block_in_place`, so the worker's other tasks go on elsewhere).
    fn write(&self, schema: &Arc<Schema>, write: Write) -> Pending<Written>;
}

/// Everything else the runtime keeps: keys, audit, users' secrets, jobs,
/// schedules, surfaces, the request queue, grants, OAuth, approvals. Ours
/// alone, whatever holds an app's records.
pub trait Store: Records {
    /// Brings storage to `schema`: additive changes apply, destructive ones are
    /// refused unless `allow_destructive`.
    fn migrate(&self, schema: &Schema, allow_destructive: bool) -> Result<Migration, StoreError>;

    /// Audit entries stored after `since` (a wire-form time), oldest first.
    fn receipts(&self, since: &str, limit: u64) -> Result<Vec<AuditEntry>, StoreError>;

    /// Audit entries after the entry `after` (its `seq`) and stored after
    /// `since` (a wire-form time; empty: any), oldest first: the newest
    /// `limit` of them. A claim check's turn.
    fn audit_after(&self, after: i64, since: &str, limit: u64) -> Result<Vec<AuditEntry>, StoreError>;

    /// Keeps a write the app refused an agent, and at most `keep` of them (the oldest go).
    fn keep_refused(&self, refused: &RefusedWrite, keep: u64) -> Result<(), StoreError>;

    /// Refused writes after `after` (their `seq`) and stored after `since`
    /// (empty: any), oldest first: the newest `limit` of them.
    fn refused_writes(&self, after: i64, since: &str, limit: u64) -> Result<Vec<RefusedWrite>, StoreError>;

    /// Keeps a claim check, and at most `keep` of them (the oldest go).
    fn keep_check(&self, check: &ClaimCheck, keep: u64) -> Result<(), StoreError>;

    /// The newest `limit` claim checks, newest first.
    fn claim_checks(&self, limit: u64) -> Result<Vec<ClaimCheck>, StoreError>;

    /// The cursor the caller's last check ended at, if it made one.
    fn last_check(&self, caller: &str, agent: Option<&str>) -> Result<Option<String>, StoreError>;

    /// A named secret of the app (e.g. the token signing secret), created on first use.
    fn secret(&self, name: &str) -> Result<String, StoreError>;

    /// The id, password hash and token key of the user with this email.
    fn credentials(&self, schema: &Schema, email: &str) -> Result<Option<Credentials>, StoreError>;

    /// The current token key of a user (rotated with each password change).
    fn token_key(&self, user_id: &str) -> Result<Option<String>, StoreError>;

    /// Persists a new job. With an `Idempotency-Key`, the key is claimed for the
    /// operation in the same transaction; one already used in the last 24 h is
    /// `DuplicateRequest` naming the job it started.
    fn create_job(&self, job: &protocol::operation::Job, key: Option<&str>) -> Result<(), StoreError>;

    /// Replaces a job's persisted state (durable when this returns).
    fn put_job(&self, job: &protocol::operation::Job) -> Result<(), StoreError>;

    /// A job by id.
    fn job(&self, id: &str) -> Result<Option<protocol::operation::Job>, StoreError>;

    /// At startup: every `queued` or `running` job becomes `interrupted`, keeping
    /// its last progress. Returns how many. Such jobs are never re-run.
    fn interrupt_jobs(&self, now: &str) -> Result<u64, StoreError>;

    /// When a scheduled operation last ran (wire-form time), if ever.
    fn last_run(&self, operation: &str) -> Result<Option<String>, StoreError>;

    /// Records `at` as the operation's last run if the stored one is still
    /// `seen` (`None`: never ran): true when this caller claimed the run.
    /// Where several server nodes share the store, the one that claims a
    /// slot runs it, and the others see it taken.
    fn claim_run(&self, operation: &str, seen: Option<&str>, at: &str) -> Result<bool, StoreError>;

    /// Appends an audit entry that is not a record write (an operation run).
    fn audit(&self, receipt: &protocol::receipt::Receipt) -> Result<(), StoreError>;

    /// Applies checked A2UI messages to the surfaces they name, all or
    /// nothing, in one writer task (durable when this returns).
    fn render_surfaces(&self, messages: &[a2app_a2ui::Message], now: &str) -> Result<Rendered, StoreError>;

    /// One surface's state, if it exists.
    fn surface(&self, id: &str) -> Result<Option<a2app_a2ui::Surface>, StoreError>;

    /// Every surface's id and when it last changed, newest first.
    fn surfaces(&self) -> Result<Vec<(String, String)>, StoreError>;

    /// Adds a request to the app-to-agent queue (durable when this returns),
    /// unless `max_open` are pending or claimed (then `false`); beyond `keep`
    /// requests the oldest closed ones are dropped.
    /// `audit` is written in the same transaction when the request is added.
    fn ask(
        &self,
        request: &protocol::request::AgentRequest,
        max_open: u64,
        keep: u64,
        audit: &protocol::receipt::Receipt,
    ) -> Result<bool, StoreError>;

    /// One request, if it exists.
    fn request(&self, id: &str) -> Result<Option<protocol::request::AgentRequest>, StoreError>;

    /// A page of requests, newest first (claimable ones oldest first), and how
    /// many match the filter.
    fn requests(&self, filter: &RequestFilter) -> Result<(Vec<protocol::request::AgentRequest>, u64), StoreError>;

    /// Moves a request on (claim, answer, cancel), atomically against its
    /// stored state, with `audit` in the same transaction; durable when this returns.
    fn step_request(
        &self,
        id: &str,
        step: &RequestStep,
        now: &str,
        audit: &protocol::receipt::Receipt,
    ) -> Result<Result<protocol::request::AgentRequest, RequestConflict>, StoreError>;

    /// Adds a pending grant (with its audit entry) unless `max_pending` are
    /// waiting; false when full. Closed grants past `keep` go.
    fn ask_grant(
        &self,
        grant: &protocol::grant::Grant,
        limits: GrantLimits,
        audit: &protocol::receipt::Receipt,
        request: Option<&AuthRequest>,
    ) -> Result<GrantRoom, StoreError>;

    fn grant(&self, id: &str) -> Result<Option<protocol::grant::Grant>, StoreError>;

    /// The pending grants, oldest first: all, or those asked from `source`.
    fn pending_grants(&self, source: Option<&str>, limit: u64) -> Result<Vec<protocol::grant::Grant>, StoreError>;

    /// Newest first: all grants, or those acting for `acts_for`.
    fn grants(&self, acts_for: Option<&str>, limit: u64) -> Result<Vec<protocol::grant::Grant>, StoreError>;

    /// Approves, denies or revokes a grant if its stored state allows it,
    /// with its audit entry, in one transaction.
    fn step_grant(
        &self,
        id: &str,
        step: &GrantStep,
        now: &str,
        audit: &protocol::receipt::Receipt,
    ) -> Result<Result<protocol::grant::Grant, GrantConflict>, StoreError>;

    /// Spends a signed nonce and stores a token's hash for an active grant.
    fn issue_grant_token(
        &self,
        token: &IssuedToken,
        now: &str,
        max_tokens: u64,
    ) -> Result<Result<(), GrantConflict>, StoreError>;

    /// The active grant a live token (by its hash) belongs to, and when the token ends.
    fn grant_by_token(&self, hash: &str, now: &str) -> Result<Option<TokenGrant>, StoreError>;

    /// Registers an OAuth client, or stores it again with a new `used`; past
    /// `max` clients, the longest unused with no grant waiting or active go.
    fn register_client(&self, client: &OAuthClient, max: u64) -> Result<(), StoreError>;

    fn oauth_client(&self, id: &str) -> Result<Option<OAuthClient>, StoreError>;

    /// The authorization request behind an OAuth grant.
    fn auth_request(&self, grant_id: &str) -> Result<Option<AuthRequest>, StoreError>;

    /// Gives an approved OAuth grant its authorization code (by hash).
    fn set_auth_code(&self, grant_id: &str, code_hash: &str, expires: &str) -> Result<(), StoreError>;

    /// Spends an authorization code: the request it was issued for, once.
    /// Until it would have expired, the code is remembered as spent, so one
    /// presented again in that time is told apart from an unknown one.
    fn take_auth_code(&self, code_hash: &str, now: &str) -> Result<CodeUse, StoreError>;

    /// Stores an OAuth grant's access and refresh tokens if it is active;
    /// with `spent`, only if that refresh token is live and unused, which
    /// it then no longer is. A spent refresh token presented again ends the
    /// grant's tokens (a sign it was stolen).
    fn issue_oauth_tokens(
        &self,
        tokens: &OAuthTokens,
        spent: Option<&str>,
        now: &str,
        max_tokens: u64,
    ) -> Result<Result<(), GrantConflict>, StoreError>;

    /// The grant and audience a live refresh token belongs to (used or not:
    /// a used one is caught by [`Self::issue_oauth_tokens`]).
    fn refresh_grant(&self, hash: &str, now: &str) -> Result<Option<(String, String)>, StoreError>;

    /// The grant an access or refresh token (by its hash) was issued for,
    /// expired or not, while it is stored: what a revocation ends.
    fn token_grant(&self, hash: &str) -> Result<Option<String>, StoreError>;

    /// Stores a new approval key (durable when this returns). Expired keys
    /// are dropped first; past `max` pending keys, the ones expiring soonest go.
    fn issue_approval(&self, approval: &Approval, now: &str, max: usize) -> Result<(), StoreError>;

    /// Spends the key `key` for this call, atomically: it is marked used only
    /// if [`Approval::admits`] the call and it is unexpired at `now`.
    fn spend_approval(&self, key: &str, call: &ApprovedCall, now: &str) -> Result<Result<(), Refusal>, StoreError>;

    /// The unexpired approvals that wait for a person, oldest first.
    fn waiting_approvals(&self, now: &str) -> Result<Vec<Approval>, StoreError>;

    /// One unexpired, unused approval key (a person opens it to decide).
    fn approval(&self, key: &str, now: &str) -> Result<Option<Approval>, StoreError>;

    /// A person's decision on a waiting key, atomically: the key as decided,
    /// or `None` when it is unknown, expired, used or decided already.
    fn decide_approval(&self, key: &str, consent: &Consent, now: &str) -> Result<Option<Approval>, StoreError>;
}

/// Which requests to list: `None` is any.
#[derive(Debug, Clone, Default)]
pub struct RequestFilter {
    pub status: Option<protocol::request::RequestStatus>,
    pub capability: Option<String>,
    /// Only these capabilities (`None`: any): those a grant's scopes cover.
    pub capabilities: Option<Vec<String>>,
    pub requested_by: Option<String>,
    /// Only requests an agent may claim at this instant: pending, or claimed
    /// with the lease run out.
    pub claimable_at: Option<String>,
    pub limit: u64,
    pub offset: u64,
}

/// One change of a request's state.
#[derive(Debug, Clone)]
pub enum RequestStep {
    /// An agent takes a pending request, or one whose lease ran out.
    Claim { key_hash: String, agent: Option<String>, lease_until: String },
    /// The holder of the current claim answers: a result, or why it failed.
    Answer { key_hash: String, outcome: Result<Map<String, Value>, String> },
    /// The person takes it back; `by`: only if they asked it.
    Cancel { by: Option<String> },
}

/// How many grants may wait, and how many closed ones are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrantLimits {
    /// Pending grants in one pool: asks with a key, or sign-ins through OAuth,
    /// so a flood of the one kind leaves the other its room.
    pub pending: u64,
    pub pending_per_key: u64,
    /// Pending grants from one network source, both pools together.
    pub pending_per_source: u64,
    pub keep: u64,
}

/// Whether an ask was stored, or which bound it met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantRoom {
    Asked,
    /// This key has `pending_per_key` waiting already.
    KeyFull,
    /// This source has `pending_per_source` waiting already.
    SourceFull,
    /// `pending` grants wait in all.
    Full,
}

/// A person's decision on a grant, or its end.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantStep {
    /// The grant acts for `acts_for` with `scopes` (those asked, or fewer).
    Approve {
        acts_for: String,
        scopes: Vec<String>,
    },
    Deny,
    /// `acts_for`: only if the grant acts for them (a user revoking their own).
    Revoke {
        acts_for: Option<String>,
    },
}

/// Why a grant step or a token does not apply to the grant's stored state.
#[derive(Debug, Clone, PartialEq)]
pub enum GrantConflict {
    NotFound,
    /// Already decided (or ended): its status.
    Decided(protocol::grant::GrantStatus),
    /// The nonce was signed for a token before.
    Replayed,
}

/// A token to store: the hash of what the agent receives, and the nonce its
/// signature spent.
#[derive(Debug, Clone, PartialEq)]
pub struct IssuedToken {
    pub grant_id: String,
    pub hash: String,
    pub expires: String,
    pub nonce: String,
    pub nonce_expires: String,
}

/// What an access token stands for: its active grant, its end, and the
/// one resource it is good for (`None`: the whole app).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenGrant {
    pub grant: protocol::grant::Grant,
    pub expires: String,
    pub audience: Option<String>,
}

/// A client registered for OAuth (RFC 7591): public, no secret; it proves
/// itself by PKCE and by the redirect URIs it registered.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthClient {
    pub id: String,
    pub name: String,
    pub redirect_uris: Vec<String>,
    /// When it registered, or last began a sign-in: room for new clients is
    /// made from the longest unused.
    pub used: String,
}

/// What an authorization request pinned until its code is traded.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthRequest {
    pub grant_id: String,
    pub client_id: String,
    pub redirect_uri: String,
    /// The PKCE S256 challenge.
    pub challenge: String,
    pub state: Option<String>,
    /// The resource (RFC 8707) its tokens will be bound to.
    pub audience: String,
}

/// What presenting an authorization code found.
#[derive(Debug, Clone, PartialEq)]
pub enum CodeUse {
    /// A live code, spent now: the request it was issued for.
    Live(AuthRequest),
    /// A code traded before: the grant it was issued for.
    Replayed(String),
    /// An unknown or expired code.
    Unknown,
}

/// The hashes of an access token and its refresh token for an OAuth grant.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthTokens {
    pub grant_id: String,
    pub audience: String,
    pub access_hash: String,
    pub access_expires: String,
    pub refresh_hash: String,
    pub refresh_expires: String,
}

/// Why a step does not apply to a request's stored state.
#[derive(Debug, Clone, PartialEq)]
pub enum RequestConflict {
    NotFound,
    /// Claimed by another agent until this instant.
    Claimed(String),
    Closed(protocol::request::RequestStatus),
    /// Not the key of the request's current claim.
    WrongKey,
}

/// What rendering answers: each touched surface's id and state (`None`:
/// deleted), or every problem of the batch.
pub type Rendered = Result<Vec<(String, Option<a2app_a2ui::Surface>)>, Vec<protocol::Violation>>;

/// A person's approval of one call of a destructive operation, bound to who
/// asked (what the caller proved, not a self-asserted name), the operation and
/// its exact params. Stored, so a restart between the question and the
/// confirmed call loses nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub key: String,
    pub call: ApprovedCall,
    /// Wire-form instant after which the key is unknown.
    pub expires: String,
    pub used: bool,
    /// Whose yes the key waits for.
    pub consent: Consent,
    /// When it was asked (wire form), and the asking agent's name, for the
    /// person who decides.
    pub created: String,
    pub agent: String,
}

/// Where an approval key stands with the person of the app.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Consent {
    /// The caller's host asks its person: the key works at once.
    Host,
    /// A person of the app must approve first (`destructive_consent = "person"`).
    Waiting,
    /// Approved or denied, by whom (`owner`, `user:<id>`).
    Approved(String),
    Denied(String),
}

impl Consent {
    /// The stored form: `''`, `waiting`, `approved:<who>`, `denied:<who>`.
    pub fn as_stored(&self) -> String {
        match self {
            Consent::Host => String::new(),
            Consent::Waiting => "waiting".into(),
            Consent::Approved(who) => format!("approved:{who}"),
            Consent::Denied(who) => format!("denied:{who}"),
        }
    }

    pub fn from_stored(text: &str) -> Consent {
        match text.split_once(':') {
            Some(("approved", who)) => Consent::Approved(who.to_owned()),
            Some(("denied", who)) => Consent::Denied(who.to_owned()),
            _ if text == "waiting" => Consent::Waiting,
            // Written only by `as_stored`; anything else waits for a person.
            _ if text.is_empty() => Consent::Host,
            _ => Consent::Waiting,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovedCall {
    pub approver: String,
    pub operation: String,
    pub params: Map<String, Value>,
}

/// Why an approval key does not let a call through.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    UnknownOrExpired,
    Used,
    OtherCaller,
    /// Issued for another call: the operation it was issued for.
    OtherCall(String),
    /// A person of the app has not decided on the call yet.
    AwaitingPerson,
    /// A person of the app denied the call.
    DeniedByPerson,
}

impl Approval {
    /// Whether this key lets `call` through (ignoring expiry, which the store checks).
    pub fn admits(&self, call: &ApprovedCall) -> Result<(), Refusal> {
        if self.used {
            Err(Refusal::Used)
        } else if self.call.approver != call.approver {
            Err(Refusal::OtherCaller)
        } else if self.call.operation != call.operation || self.call.params != call.params {
            Err(Refusal::OtherCall(self.call.operation.clone()))
        } else {
            match self.consent {
                Consent::Host | Consent::Approved(_) => Ok(()),
                Consent::Waiting => Err(Refusal::AwaitingPerson),
                Consent::Denied(_) => Err(Refusal::DeniedByPerson),
            }
        }
    }
}

/// What a migration did (or would refuse to do).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Migration {
    pub applied: Vec<String>,
}

pub struct ListQuery<'a> {
    pub entity: &'a str,
    pub filter: Option<&'a Expr>,
    /// An extra condition ANDed with `filter` (a rule), never shown to the caller.
    pub rule: Option<&'a Expr>,
    pub sort: &'a [SortKey],
    pub page: u64,
    pub per_page: u64,
    pub skip_total: bool,
    pub ctx: &'a QueryContext,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ListResult {
    pub rows: Vec<Row>,
    /// `None` when the count was skipped.
    pub total: Option<u64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum WriteKind {
    Create { id: String },
    Update { id: String, if_match: Option<String> },
    Delete { id: String, if_match: Option<String> },
}

/// One write, already through the guard: `values` are normalized field values.
/// The store applies it, its idempotency record and its audit entry in one
/// transaction.
#[derive(Debug, Clone)]
pub struct Write {
    pub entity: String,
    pub kind: WriteKind,
    pub values: Map<String, Value>,
    /// The instant stamped into `created`/`updated` and the audit entry.
    pub now: jiff::Timestamp,
    /// The `Idempotency-Key`, scoped to the entity.
    pub key: Option<String>,
    /// Who wrote, for the receipt and the audit entry.
    pub agent: Option<String>,
    pub caller: String,
    /// The entities whose records the receipt may name by their label
    /// (`None`: all): a grant's receipt names others by id only, or pointing
    /// a card at any list would read that list's name.
    pub labels_from: Option<Arc<std::collections::BTreeSet<String>>>,
    /// The app's time zone, for dates in receipt text.
    pub timezone: String,
    /// A new password hash for a user (multi-user apps); rotates the token key.
    pub password_hash: Option<String>,
    /// A rule the record must satisfy (before an update or delete, after a create).
    pub rule: Option<RuleCheck>,
    /// Told of the write once it is durable, before its caller is answered.
    pub on_commit: Option<OnCommit>,
    /// An update's set modifiers (`points+`), resolved against the stored
    /// record inside the write's transaction and judged by the guard there
    /// (`a2app_definition::modifier::resolve`), so concurrent increments all count.
    pub modifiers: Vec<a2app_definition::modifier::Modifier>,
}

/// Called after the COMMIT that made a write durable, by the thread that ran
/// it while it still holds the write connection, and before the write's
/// caller is answered: whatever it publishes (the change feed) goes out in
/// commit order and without waiting for the caller's task to be scheduled.
/// It must be quick: the next group waits for it.
#[derive(Clone)]
pub struct OnCommit(pub Arc<dyn Fn(&Written) + Send + Sync>);

impl std::fmt::Debug for OnCommit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnCommit")
    }
}

/// A per-entity rule evaluated inside the write's transaction.
#[derive(Debug, Clone)]
pub struct RuleCheck {
    pub expr: Expr,
    pub ctx: QueryContext,
}

/// What a login needs from storage.
#[derive(Debug, Clone, PartialEq)]
pub struct Credentials {
    pub user_id: String,
    pub password_hash: String,
    pub token_key: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    /// The row read back after the write (the deleted row for a delete).
    pub row: Row,
    pub receipt: protocol::receipt::Receipt,
}

/// How long an `Idempotency-Key` is remembered.
pub const KEY_LIFETIME: jiff::SignedDuration = jiff::SignedDuration::from_hours(24);

/// A write the app refused an agent: what was tried and why it was refused.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RefusedWrite {
    pub seq: i64,
    pub at: String,
    /// As receipts name callers: `agent`, `grant:<id>`, ...
    pub caller: String,
    pub agent: Option<String>,
    /// `create`, `update`, `delete` or `run`.
    pub action: String,
    /// Empty for a `run`.
    pub entity: String,
    /// The record (empty for a create), or the operation run.
    pub id: String,
    /// The fields sent, or the operation's params.
    pub body: Map<String, Value>,
    pub violations: Vec<Violation>,
    /// One line for a person: "Refused an update of cards …: invalid_enum".
    pub text: String,
}

/// A check of an agent's message, as the dashboard lists them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClaimCheck {
    pub seq: i64,
    pub at: String,
    pub caller: String,
    pub agent: Option<String>,
    /// `pass` or `withheld`.
    pub verdict: String,
    /// The check's discrepancies, as the check answered them.
    pub discrepancies: Value,
    /// Where the caller's next turn starts.
    pub cursor: String,
}

/// One audit entry, as `receipts` lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    pub seq: i64,
    pub receipt: protocol::receipt::Receipt,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no such record")]
    NotFound,
    #[error("a record with this id already exists")]
    DuplicateId,
    #[error("the write names records that do not exist")]
    MissingRefs(Vec<Violation>),
    #[error("values did not land")]
    NotStored(Vec<Violation>),
    #[error("the entity's rule does not allow this")]
    Denied,
    /// Values this store cannot hold (PostgreSQL's text, a U+0000), each named.
    #[error("values this store cannot hold")]
    Unstorable(Vec<Violation>),
    #[error("a unique value is already taken")]
    NotUnique(Vec<Violation>),
    #[error("this Idempotency-Key was already used")]
    DuplicateRequest { id: String },
    #[error("the record changed since the given version")]
    VersionConflict(Box<Row>),
    #[error("the record is still referenced by {entity}.{field}")]
    InUse { entity: String, field: String },
    #[error("invalid filter: {0}")]
    Filter(#[from] a2app_filter::FilterError),
    #[error("migration refused: {}", .0.join("; "))]
    MigrationRefused(Vec<String>),
    /// The stored data cannot take the new schema at all, destructive or not.
    #[error("{0}")]
    Unmigratable(String),
    #[error("storage failure: {0}")]
    Internal(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Internal(e.to_string())
    }
}

impl From<StoreError> for Error {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => Error::NotFound,
            StoreError::DuplicateId => Error::DuplicateId(String::new()),
            StoreError::MissingRefs(v) | StoreError::Unstorable(v) => Error::Invalid(v),
            StoreError::NotStored(v) => Error::NotStored(v),
            StoreError::VersionConflict(row) => Error::VersionConflict(row),
            StoreError::DuplicateRequest { id } => Error::DuplicateRequest { id },
            StoreError::NotUnique(v) => Error::NotUnique(v),
            StoreError::Denied => Error::Forbidden("the entity's rules do not allow this".into()),
            StoreError::InUse { entity, field } => Error::InUse { entity, field },
            StoreError::Filter(f) => Error::InvalidFilter(f),
            StoreError::MigrationRefused(what) => Error::Internal(what.join("; ")),
            StoreError::Unmigratable(why) => Error::Internal(why),
            StoreError::Internal(detail) => Error::Internal(detail),
        }
    }
}
