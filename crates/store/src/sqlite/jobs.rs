//! The runtime's operation state in SQLite: jobs (`_a2app_jobs`), the last run
//! of each scheduled operation (`_a2app_schedule`), and audit entries for
//! operation runs (`_a2app_audit`, beside the record writes).
//!
//! A job is stored whole as JSON next to the columns queried on (`state`), so
//! what `GET /api/_jobs/{id}` answers is exactly what was last persisted.

use crate::StoreError;
use protocol::operation::{Job, JobState};
use protocol::receipt::Receipt;
use rusqlite::{Connection, OptionalExtension};

fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Internal(e.to_string()))
}

pub fn create(conn: &Connection, job: &Job, key: Option<&str>) -> Result<(), StoreError> {
    if let Some(key) = key {
        // Keys share `_a2app_keys` with record writes, scoped by a name no
        // entity can have (entity names never start with `_`).
        let scope = format!("_ops/{}", job.operation);
        let now = a2app_definition::datetime::parse(&job.created_at).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        let cutoff = a2app_definition::datetime::format(now.checked_sub(crate::KEY_LIFETIME).unwrap_or(now));
        let first: Option<String> = conn
            .prepare_cached("SELECT record_id FROM _a2app_keys WHERE entity = ?1 AND key = ?2 AND created >= ?3")?
            .query_row([&scope, key, &cutoff], |r| r.get(0))
            .optional()?;
        if let Some(id) = first {
            return Err(StoreError::DuplicateRequest { id });
        }
        conn.prepare_cached(
            "INSERT OR REPLACE INTO _a2app_keys (entity, key, record_id, created) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute([&scope, key, &job.id, &job.created_at])?;
    }
    put(conn, job)
}

pub fn put(conn: &Connection, job: &Job) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO _a2app_jobs (id, operation, state, job, created, updated) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(id) DO UPDATE SET state = excluded.state, job = excluded.job, updated = excluded.updated",
    )?
    .execute(rusqlite::params![
        job.id,
        job.operation,
        job.state.as_str(),
        json(job)?,
        job.created_at,
        job.updated_at
    ])?;
    Ok(())
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<Job>, StoreError> {
    let text: Option<String> =
        conn.prepare_cached("SELECT job FROM _a2app_jobs WHERE id = ?1")?.query_row([id], |r| r.get(0)).optional()?;
    text.map(|t| serde_json::from_str(&t).map_err(|e| StoreError::Internal(format!("job {id}: {e}")))).transpose()
}

pub fn interrupt(conn: &Connection, now: &str) -> Result<u64, StoreError> {
    let stale: Vec<String> = conn
        .prepare_cached("SELECT job FROM _a2app_jobs WHERE state IN ('queued', 'running')")?
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut n = 0;
    for text in stale {
        let mut job: Job = serde_json::from_str(&text).map_err(|e| StoreError::Internal(format!("a job: {e}")))?;
        job.state = JobState::Interrupted;
        job.updated_at = now.to_owned();
        put(conn, &job)?;
        n += 1;
    }
    Ok(n)
}

pub fn last_run(conn: &Connection, operation: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT last_run FROM _a2app_schedule WHERE operation = ?1")?
        .query_row([operation], |r| r.get(0))
        .optional()?)
}

/// Stores `at` as the last run if the stored one is still `seen`.
pub fn claim_run(conn: &Connection, operation: &str, seen: Option<&str>, at: &str) -> Result<bool, StoreError> {
    let changed = conn
        .prepare_cached(
            "INSERT INTO _a2app_schedule (operation, last_run) VALUES (?1, ?3)
             ON CONFLICT(operation) DO UPDATE SET last_run = excluded.last_run WHERE last_run IS ?2",
        )?
        .execute(rusqlite::params![operation, seen, at])?;
    Ok(changed == 1)
}

pub fn audit(conn: &Connection, receipt: &Receipt) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO _a2app_audit (at, entity, record_id, action, agent, caller, receipt) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(rusqlite::params![
        receipt.at,
        receipt.entity,
        receipt.id,
        receipt.action,
        receipt.agent,
        receipt.caller,
        json(receipt)?
    ])?;
    Ok(())
}
