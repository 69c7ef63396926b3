//! The app-to-agent queue in SQLite (`_a2app_requests`). Every change of a
//! request's state runs in one writer task that reads the row and checks the
//! step against it, so two agents claiming at once get one claim and one
//! refusal, and an answer with a superseded claim key changes nothing.

use crate::requests;
use crate::{RequestConflict, RequestFilter, RequestStep, StoreError};
use protocol::receipt::Receipt;
use protocol::request::{AgentRequest, RequestStatus};
use rusqlite::{Connection, OptionalExtension, Row};
use serde_json::{Map, Value};

const COLUMNS: &str =
    "id, capability, params, status, requested_by, created, updated, claimed_by, lease_until, result, failure";

fn read(r: &Row<'_>) -> rusqlite::Result<(AgentRequest, Option<String>)> {
    let json = |i: usize| -> rusqlite::Result<Option<Map<String, Value>>> {
        let text: Option<String> = r.get(i)?;
        Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
    };
    let status: String = r.get(3)?;
    let request = AgentRequest {
        id: r.get(0)?,
        capability: r.get(1)?,
        params: json(2)?.unwrap_or_default(),
        // Written only from `RequestStatus::as_str`.
        status: RequestStatus::parse(&status).unwrap_or(RequestStatus::Failed),
        requested_by: r.get(4)?,
        created: r.get(5)?,
        updated: r.get(6)?,
        claimed_by: r.get(7)?,
        lease_until: r.get(8)?,
        result: json(9)?,
        failure: r.get(10)?,
    };
    Ok((request, r.get(11)?))
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn encode(map: &Map<String, Value>) -> Result<String, StoreError> {
    serde_json::to_string(map).map_err(|e| StoreError::Internal(e.to_string()))
}

/// Adds a request unless `max_open` of its asker's are pending or claimed; past
/// `keep` requests, the oldest closed ones go.
pub fn ask(conn: &Connection, r: &AgentRequest, max_open: u64, keep: u64, audit: &Receipt) -> Result<bool, StoreError> {
    let open: i64 = conn
        .prepare_cached(
            "SELECT COUNT(*) FROM _a2app_requests WHERE status IN ('pending', 'claimed') AND requested_by = ?1",
        )?
        .query_row([&r.requested_by], |row| row.get(0))?;
    let all: i64 = conn
        .prepare_cached("SELECT COUNT(*) FROM _a2app_requests WHERE status IN ('pending', 'claimed')")?
        .query_row([], |row| row.get(0))?;
    if !requests::room(open, all, max_open) {
        return Ok(false);
    }
    conn.prepare_cached(
        "INSERT INTO _a2app_requests (id, capability, params, status, requested_by, created, updated)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?
    .execute(rusqlite::params![
        r.id,
        r.capability,
        encode(&r.params)?,
        r.status.as_str(),
        r.requested_by,
        r.created
    ])?;
    conn.prepare_cached(
        "DELETE FROM _a2app_requests WHERE id IN (SELECT id FROM _a2app_requests
         WHERE status IN ('done', 'failed', 'cancelled') ORDER BY created DESC, id DESC LIMIT -1 OFFSET ?1)",
    )?
    .execute([as_i64(keep)])?;
    super::jobs::audit(conn, audit)?;
    Ok(true)
}

fn load(conn: &Connection, id: &str) -> Result<Option<(AgentRequest, Option<String>)>, StoreError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS}, claim_hash FROM _a2app_requests WHERE id = ?1"))?
        .query_row([id], read)
        .optional()?)
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<AgentRequest>, StoreError> {
    Ok(load(conn, id)?.map(|(r, _)| r))
}

/// A page of requests, newest first (claimable ones oldest first), and how many match.
pub fn list(conn: &Connection, f: &RequestFilter) -> Result<(Vec<AgentRequest>, u64), StoreError> {
    // Fixed SQL with NULL meaning "any": no value is spliced into the text.
    let filter = "(?1 IS NULL OR status = ?1) AND (?2 IS NULL OR capability = ?2) AND (?3 IS NULL OR requested_by = ?3)
        AND (?4 IS NULL OR status = 'pending' OR (status = 'claimed' AND lease_until <= ?4))
        AND (?5 IS NULL OR capability IN (SELECT value FROM json_each(?5)))";
    let (status, cap, by) = (f.status.map(|s| s.as_str()), f.capability.as_deref(), f.requested_by.as_deref());
    let only = f.capabilities.as_ref().map(|c| serde_json::Value::from(c.clone()).to_string());
    let at = f.claimable_at.as_deref();
    // Claimable requests are a queue: oldest first, so a flood of new ones
    // never pushes earlier ones out of an agent's page.
    let order = if at.is_some() { "created, id" } else { "created DESC, id DESC" };
    let total: i64 = conn
        .prepare_cached(&format!("SELECT COUNT(*) FROM _a2app_requests WHERE {filter}"))?
        .query_row(rusqlite::params![status, cap, by, at, only], |r| r.get(0))?;
    let items = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, NULL FROM _a2app_requests WHERE {filter} ORDER BY {order} LIMIT ?6 OFFSET ?7"
        ))?
        .query_map(rusqlite::params![status, cap, by, at, only, as_i64(f.limit), as_i64(f.offset)], |r| {
            read(r).map(|(r, _)| r)
        })?
        .collect::<Result<_, _>>()?;
    Ok((items, total.max(0) as u64))
}

/// Applies one step to request `id` if its state allows it.
pub fn step(
    conn: &Connection,
    id: &str,
    step: &RequestStep,
    now: &str,
    audit: &Receipt,
) -> Result<Result<AgentRequest, RequestConflict>, StoreError> {
    let Some((mut r, claim_hash)) = load(conn, id)? else { return Ok(Err(RequestConflict::NotFound)) };
    let new_hash = match requests::next(&mut r, claim_hash.as_deref(), step, now) {
        Ok(hash) => hash,
        Err(conflict) => return Ok(Err(conflict)),
    };
    let result = r.result.as_ref().map(encode).transpose()?;
    conn.prepare_cached(
        "UPDATE _a2app_requests SET status = ?2, updated = ?3, claimed_by = ?4, lease_until = ?5, result = ?6,
         failure = ?7, claim_hash = ?8 WHERE id = ?1",
    )?
    .execute(rusqlite::params![
        r.id,
        r.status.as_str(),
        r.updated,
        r.claimed_by,
        r.lease_until,
        result,
        r.failure,
        new_hash
    ])?;
    super::jobs::audit(conn, audit)?;
    Ok(Ok(r))
}
