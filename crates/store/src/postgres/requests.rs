//! The app-to-agent queue in PostgreSQL (`_a2app_requests`), as the SQLite
//! store keeps it. A step locks the request's row before `store::requests`
//! judges it, so two agents claiming at once from two nodes get one claim
//! and one refusal; asks hold an advisory lock, so the open-request bounds
//! count what the node before stored.

use super::Tx;
use super::{Fail, operations};
use crate::requests;
use crate::{RequestConflict, RequestFilter, RequestStep, StoreError};
use postgres::{GenericClient, Row};
use protocol::receipt::Receipt;
use protocol::request::{AgentRequest, RequestStatus};
use serde_json::{Map, Value};

const COLUMNS: &str =
    "id, capability, params, status, requested_by, created, updated, claimed_by, lease_until, result, failure";

fn read(r: &Row) -> Result<AgentRequest, Fail> {
    let json = |i: usize| -> Result<Option<Map<String, Value>>, Fail> {
        let text: Option<&str> = r.try_get(i)?;
        Ok(text.and_then(|t| serde_json::from_str(t).ok()))
    };
    let status: &str = r.try_get(3)?;
    Ok(AgentRequest {
        id: r.try_get(0)?,
        capability: r.try_get(1)?,
        params: json(2)?.unwrap_or_default(),
        // Written only from `RequestStatus::as_str`.
        status: RequestStatus::parse(status).unwrap_or(RequestStatus::Failed),
        requested_by: r.try_get(4)?,
        created: r.try_get(5)?,
        updated: r.try_get(6)?,
        claimed_by: r.try_get(7)?,
        lease_until: r.try_get(8)?,
        result: json(9)?,
        failure: r.try_get(10)?,
    })
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn encode(map: &Map<String, Value>) -> Result<String, StoreError> {
    serde_json::to_string(map).map_err(|e| StoreError::Internal(e.to_string()))
}

/// Adds a request unless its asker has too many open; past `keep`
/// requests, the oldest closed ones go.
pub fn ask(tx: &mut Tx<'_>, r: &AgentRequest, max_open: u64, keep: u64, audit: &Receipt) -> Result<bool, Fail> {
    super::lock(tx.raw(), super::Lock::Requests)?;
    let open: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM _a2app_requests WHERE status IN ('pending', 'claimed') AND requested_by = $1",
            &[&r.requested_by],
        )?
        .get(0);
    let all: i64 =
        tx.query_one("SELECT COUNT(*) FROM _a2app_requests WHERE status IN ('pending', 'claimed')", &[])?.get(0);
    if !requests::room(open, all, max_open) {
        return Ok(false);
    }
    tx.execute(
        "INSERT INTO _a2app_requests (id, capability, params, status, requested_by, created, updated) \
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
        &[&r.id, &r.capability, &encode(&r.params)?, &r.status.as_str(), &r.requested_by, &r.created],
    )?;
    tx.execute(
        "DELETE FROM _a2app_requests WHERE id IN (SELECT id FROM _a2app_requests \
         WHERE status IN ('done', 'failed', 'cancelled') ORDER BY created DESC, id COLLATE \"C\" DESC OFFSET $1)",
        &[&as_i64(keep)],
    )?;
    operations::audit(tx.raw(), audit)?;
    Ok(true)
}

pub fn get(db: &mut impl GenericClient, id: &str) -> Result<Option<AgentRequest>, Fail> {
    db.query_opt(&format!("SELECT {COLUMNS} FROM _a2app_requests WHERE id = $1"), &[&id])?.map(|r| read(&r)).transpose()
}

/// A page of requests, newest first (claimable ones oldest first), and how many match.
pub fn list(db: &mut impl GenericClient, f: &RequestFilter) -> Result<(Vec<AgentRequest>, u64), Fail> {
    // Fixed SQL with NULL meaning "any": no value is spliced into the text.
    let filter = "($1::text IS NULL OR status = $1) AND ($2::text IS NULL OR capability = $2) \
        AND ($3::text IS NULL OR requested_by = $3) \
        AND ($4::text IS NULL OR status = 'pending' OR (status = 'claimed' AND lease_until <= $4)) \
        AND ($5::text[] IS NULL OR capability = ANY($5))";
    let (status, cap, by) = (f.status.map(|s| s.as_str()), f.capability.as_deref(), f.requested_by.as_deref());
    let (at, only) = (f.claimable_at.as_deref(), f.capabilities.as_deref());
    // Claimable requests are a queue: oldest first, so a flood of new ones
    // never pushes earlier ones out of an agent's page.
    // Ids in byte order, as SQLite sorts them, whatever the database's collation.
    let order = if at.is_some() { "created, id COLLATE \"C\"" } else { "created DESC, id COLLATE \"C\" DESC" };
    let total: i64 = db
        .query_one(&format!("SELECT COUNT(*) FROM _a2app_requests WHERE {filter}"), &[&status, &cap, &by, &at, &only])?
        .get(0);
    let rows = db.query(
        &format!("SELECT {COLUMNS} FROM _a2app_requests WHERE {filter} ORDER BY {order} LIMIT $6 OFFSET $7"),
        &[&status, &cap, &by, &at, &only, &as_i64(f.limit), &as_i64(f.offset)],
    )?;
    let items = rows.iter().map(read).collect::<Result<_, _>>()?;
    Ok((items, total.max(0) as u64))
}

/// Applies one step to request `id` if its state allows it.
pub fn step(
    tx: &mut Tx<'_>,
    id: &str,
    step: &RequestStep,
    now: &str,
    audit: &Receipt,
) -> Result<Result<AgentRequest, RequestConflict>, Fail> {
    let sql = format!("SELECT {COLUMNS}, claim_hash FROM _a2app_requests WHERE id = $1 FOR UPDATE");
    let Some(row) = tx.query_opt(&sql, &[&id])? else { return Ok(Err(RequestConflict::NotFound)) };
    let (mut r, claim_hash): (AgentRequest, Option<String>) = (read(&row)?, row.try_get(11)?);
    let new_hash = match requests::next(&mut r, claim_hash.as_deref(), step, now) {
        Ok(hash) => hash,
        Err(conflict) => return Ok(Err(conflict)),
    };
    let result = r.result.as_ref().map(encode).transpose()?;
    tx.execute(
        "UPDATE _a2app_requests SET status = $2, updated = $3, claimed_by = $4, lease_until = $5, result = $6, \
         failure = $7, claim_hash = $8 WHERE id = $1",
        &[&r.id, &r.status.as_str(), &r.updated, &r.claimed_by, &r.lease_until, &result, &r.failure, &new_hash],
    )?;
    operations::audit(tx.raw(), audit)?;
    Ok(Ok(r))
}
