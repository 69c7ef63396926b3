//! The runtime's operation state in PostgreSQL, as the SQLite store keeps it
//! (`sqlite::jobs`, `sqlite::approvals`): jobs stored whole as JSON beside the
//! column queried on, the last run of each scheduled operation, audit entries
//! of operation runs, and approval keys, spent at most once even when two
//! nodes race with one (the key's row is locked while it is judged).
//!
//! A job runs on the node that started it, and only that node can tell it
//! is still running. So a job row names its node (`node`: the node's key),
//! and each node holds a session advisory lock on its key for as long as it
//! lives (`Liveness`). A node that stopped or lost its connection holds it
//! no more: its unfinished jobs are the ones a starting node interrupts.

use super::Fail;
use super::Tx;
use crate::{Approval, ApprovedCall, Refusal, StoreError};
use postgres::GenericClient;
use protocol::operation::Job;
use protocol::receipt::Receipt;

fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Internal(e.to_string()))
}

/// Persists a new job; with an `Idempotency-Key`, claimed in the same
/// transaction for the operation (scope `_ops/<name>`, a name no entity has).
pub fn create_job(tx: &mut Tx<'_>, job: &Job, key: Option<&str>, node: i64) -> Result<(), Fail> {
    if let Some(key) = key {
        let now = a2app_definition::datetime::parse(&job.created_at).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        super::records::claim_key(tx, &format!("_ops/{}", job.operation), key, &job.id, now)?;
    }
    put_job(tx.raw(), job, node)
}

/// Stores a job's state as the node running it (`node`) last saw it.
pub fn put_job(db: &mut impl GenericClient, job: &Job, node: i64) -> Result<(), Fail> {
    db.execute(
        "INSERT INTO _a2app_jobs (id, operation, state, job, created, updated, node) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, job = excluded.job, updated = excluded.updated, \
         node = excluded.node",
        &[&job.id, &job.operation, &job.state.as_str(), &json(job)?, &job.created_at, &job.updated_at, &node],
    )?;
    Ok(())
}

/// Every queued or running job of a node that is gone becomes interrupted,
/// keeping its last progress; the jobs of live nodes run on. How many.
pub fn interrupt_jobs(tx: &mut Tx<'_>, now: &str) -> Result<u64, Fail> {
    // A node's key is free when nobody holds it: taking it (and letting go
    // at once, in the same statement) tells a gone node from a live one.
    let stale = tx.query(
        "SELECT id, job, node FROM _a2app_jobs WHERE state IN ('queued', 'running') \
         AND (node IS NULL OR CASE WHEN pg_try_advisory_lock(node) THEN pg_advisory_unlock(node) ELSE false END) \
         FOR UPDATE",
        &[],
    )?;
    let mut n = 0;
    for row in &stale {
        let id: &str = row.get(0);
        let mut job: Job =
            serde_json::from_str(row.get::<_, &str>(1)).map_err(|e| StoreError::Internal(format!("job {id}: {e}")))?;
        job.state = protocol::operation::JobState::Interrupted;
        job.updated_at = now.to_owned();
        tx.execute(
            "UPDATE _a2app_jobs SET state = $2, job = $3, updated = $4 WHERE id = $1",
            &[&id, &job.state.as_str(), &json(&job)?, &job.updated_at],
        )?;
        n += 1;
    }
    Ok(n)
}

/// A node's hold on its key: a thread with a connection of its own holding
/// the session advisory lock for as long as the store lives. When that
/// connection is lost (a restart of the server, a network cut) the lock goes
/// with it, and the thread takes it again on a new connection within
/// [`LIVENESS_CHECK`]; a node starting in that gap takes this node for gone.
pub struct Liveness {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

/// How often the liveness connection is checked.
pub const LIVENESS_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

impl Liveness {
    /// Returns once the lock is held.
    pub fn hold(config: &postgres::Config, node: i64) -> Result<Liveness, Fail> {
        let mut config = config.clone();
        let name = format!("{} node", config.get_application_name().unwrap_or("a2app"));
        config.application_name(&name);
        let take = move |config: &postgres::Config| -> Result<postgres::Client, postgres::Error> {
            let mut session = config.connect(postgres::NoTls)?;
            session.execute("SELECT pg_advisory_lock($1)", &[&node])?;
            Ok(session)
        };
        let mut session = take(&config)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&stop);
        std::thread::Builder::new()
            .name("a2app-pg-liveness".into())
            .spawn(move || {
                while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                    std::thread::sleep(LIVENESS_CHECK);
                    if session.batch_execute("SELECT 1").is_ok() {
                        continue;
                    }
                    match take(&config) {
                        Ok(again) => session = again,
                        Err(e) => tracing::warn!(
                            "this node cannot hold its PostgreSQL liveness lock: {}",
                            super::describe(&e)
                        ),
                    }
                }
            })
            .map_err(|e| StoreError::Internal(format!("cannot start the liveness thread: {e}")))?;
        Ok(Liveness { stop })
    }
}

impl Drop for Liveness {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

pub fn job(db: &mut impl GenericClient, id: &str) -> Result<Option<Job>, Fail> {
    let Some(row) = db.query_opt("SELECT job FROM _a2app_jobs WHERE id = $1", &[&id])? else { return Ok(None) };
    let job =
        serde_json::from_str(row.get::<_, &str>(0)).map_err(|e| StoreError::Internal(format!("job {id}: {e}")))?;
    Ok(Some(job))
}

pub fn last_run(db: &mut impl GenericClient, operation: &str) -> Result<Option<String>, Fail> {
    Ok(db.query_opt("SELECT last_run FROM _a2app_schedule WHERE operation = $1", &[&operation])?.map(|r| r.get(0)))
}

/// Stores `at` as the last run if the stored one is still `seen`: one
/// statement, so of two nodes claiming one slot, one changes the row and the
/// other, waiting for its lock, finds it changed.
pub fn claim_run(db: &mut impl GenericClient, operation: &str, seen: Option<&str>, at: &str) -> Result<bool, Fail> {
    let changed = db.execute(
        "INSERT INTO _a2app_schedule (operation, last_run) VALUES ($1, $3) \
         ON CONFLICT (operation) DO UPDATE SET last_run = excluded.last_run \
         WHERE _a2app_schedule.last_run IS NOT DISTINCT FROM $2",
        &[&operation, &seen, &at],
    )?;
    Ok(changed == 1)
}

/// An audit entry that is not a record write (an operation run).
pub fn audit(db: &mut impl GenericClient, receipt: &Receipt) -> Result<(), Fail> {
    db.execute(
        "INSERT INTO _a2app_audit (at, entity, record_id, action, agent, caller, receipt) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[&receipt.at, &receipt.entity, &receipt.id, &receipt.action, &receipt.agent, &receipt.caller, &json(receipt)?],
    )?;
    Ok(())
}

/// Stores a new approval key; expired keys go first, and past `max` pending
/// keys, the ones expiring soonest.
pub fn issue_approval(tx: &mut Tx<'_>, approval: &Approval, now: &str, max: usize) -> Result<(), Fail> {
    // The bound counts what the node before stored.
    super::lock(tx.raw(), super::Lock::Approvals)?;
    tx.execute("DELETE FROM _a2app_approvals WHERE expires <= $1", &[&now])?;
    let pending: i64 = tx.query_one("SELECT COUNT(*) FROM _a2app_approvals", &[])?.get(0);
    let excess = pending.saturating_add(1).saturating_sub(i64::try_from(max).unwrap_or(i64::MAX));
    if excess > 0 {
        tx.execute(
            "DELETE FROM _a2app_approvals WHERE key IN (SELECT key FROM _a2app_approvals ORDER BY expires LIMIT $1)",
            &[&excess],
        )?;
    }
    tx.execute(
        "INSERT INTO _a2app_approvals (key, approver, operation, params, expires, used, consent, created, agent) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        &[
            &approval.key,
            &approval.call.approver,
            &approval.call.operation,
            &json(&approval.call.params)?,
            &approval.expires,
            &i32::from(approval.used),
            &approval.consent.as_stored(),
            &approval.created,
            &approval.agent,
        ],
    )?;
    Ok(())
}

/// Spends the key for this call if it admits it and is unexpired at `now`.
pub fn spend_approval(tx: &mut Tx<'_>, key: &str, call: &ApprovedCall, now: &str) -> Result<Result<(), Refusal>, Fail> {
    let found = tx.query_opt(
        "SELECT approver, operation, params, expires, used, consent, created, agent FROM _a2app_approvals \
         WHERE key = $1 AND expires > $2 FOR UPDATE",
        &[&key, &now],
    )?;
    let Some(row) = found else { return Ok(Err(Refusal::UnknownOrExpired)) };
    // Written by `issue_approval` from a JSON object; anything else admits nothing.
    let params = serde_json::from_str(row.get::<_, &str>(2))
        .map_err(|e| StoreError::Internal(format!("approval params: {e}")))?;
    let stored = Approval {
        key: key.to_owned(),
        call: ApprovedCall { approver: row.get(0), operation: row.get(1), params },
        expires: row.get(3),
        used: row.get::<_, i32>(4) != 0,
        consent: crate::Consent::from_stored(row.get(5)),
        created: row.get(6),
        agent: row.get(7),
    };
    if let Err(refusal) = stored.admits(call) {
        return Ok(Err(refusal));
    }
    tx.execute("UPDATE _a2app_approvals SET used = 1 WHERE key = $1", &[&key])?;
    Ok(Ok(()))
}
