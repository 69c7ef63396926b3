//! Approval keys of destructive operations (`_a2app_approvals`). Issuing,
//! spending and a person's decision run on the writer, so a key is spent at
//! most once even when two calls race with it, and never before a person it
//! waits for said yes.

use crate::{Approval, ApprovedCall, Consent, Refusal, StoreError};
use rusqlite::{Connection, OptionalExtension, Row};

const COLUMNS: &str = "key, approver, operation, params, expires, used, consent, created, agent";

fn read(r: &Row<'_>) -> rusqlite::Result<Approval> {
    let params: String = r.get(3)?;
    Ok(Approval {
        key: r.get(0)?,
        // Written by `issue` from a JSON object; anything else reads as no
        // params, which admits no call that has any.
        call: ApprovedCall {
            approver: r.get(1)?,
            operation: r.get(2)?,
            params: serde_json::from_str(&params).unwrap_or_default(),
        },
        expires: r.get(4)?,
        used: r.get(5)?,
        consent: Consent::from_stored(&r.get::<_, String>(6)?),
        created: r.get(7)?,
        agent: r.get(8)?,
    })
}

pub fn issue(conn: &Connection, approval: &Approval, now: &str, max: usize) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM _a2app_approvals WHERE expires <= ?1")?.execute([now])?;
    let pending: i64 = conn.prepare_cached("SELECT COUNT(*) FROM _a2app_approvals")?.query_row([], |r| r.get(0))?;
    let excess = pending.saturating_add(1).saturating_sub(i64::try_from(max).unwrap_or(i64::MAX));
    if excess > 0 {
        conn.prepare_cached(
            "DELETE FROM _a2app_approvals WHERE key IN (SELECT key FROM _a2app_approvals ORDER BY expires LIMIT ?1)",
        )?
        .execute([excess])?;
    }
    let params = serde_json::to_string(&approval.call.params).map_err(|e| StoreError::Internal(e.to_string()))?;
    conn.prepare_cached(&format!(
        "INSERT INTO _a2app_approvals ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
    ))?
    .execute(rusqlite::params![
        approval.key,
        approval.call.approver,
        approval.call.operation,
        params,
        approval.expires,
        approval.used,
        approval.consent.as_stored(),
        approval.created,
        approval.agent,
    ])?;
    Ok(())
}

pub fn spend(conn: &Connection, key: &str, call: &ApprovedCall, now: &str) -> Result<Result<(), Refusal>, StoreError> {
    let Some(stored) = get(conn, key, now)? else {
        return Ok(Err(Refusal::UnknownOrExpired));
    };
    if let Err(refusal) = stored.admits(call) {
        return Ok(Err(refusal));
    }
    conn.prepare_cached("UPDATE _a2app_approvals SET used = 1 WHERE key = ?1")?.execute([key])?;
    Ok(Ok(()))
}

/// The key, whatever its state, while it is unexpired.
pub fn get(conn: &Connection, key: &str, now: &str) -> Result<Option<Approval>, StoreError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM _a2app_approvals WHERE key = ?1 AND expires > ?2"))?
        .query_row([key, now], read)
        .optional()?)
}

pub fn waiting(conn: &Connection, now: &str) -> Result<Vec<Approval>, StoreError> {
    let items = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM _a2app_approvals WHERE consent = 'waiting' AND used = 0 AND expires > ?1
             ORDER BY created, key"
        ))?
        .query_map([now], read)?
        .collect::<Result<_, _>>()?;
    Ok(items)
}

pub fn decide(conn: &Connection, key: &str, consent: &Consent, now: &str) -> Result<Option<Approval>, StoreError> {
    let changed = conn
        .prepare_cached(
            "UPDATE _a2app_approvals SET consent = ?2 WHERE key = ?1 AND consent = 'waiting' AND used = 0 AND expires > ?3",
        )?
        .execute([key, &consent.as_stored(), now])?;
    if changed == 0 {
        return Ok(None);
    }
    get(conn, key, now)
}
