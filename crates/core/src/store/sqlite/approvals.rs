//! Approval keys of destructive operations (`_a2app_approvals`). Issuing and
//! spending run on the writer, so a key is spent at most once even when two
//! calls race with it.

use crate::store::{Approval, ApprovedCall, Refusal, StoreError};
use rusqlite::{Connection, OptionalExtension};

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
    conn.prepare_cached(
        "INSERT INTO _a2app_approvals (key, approver, operation, params, expires, used) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(rusqlite::params![
        approval.key,
        approval.call.approver,
        approval.call.operation,
        params,
        approval.expires,
        approval.used
    ])?;
    Ok(())
}

pub fn spend(conn: &Connection, key: &str, call: &ApprovedCall, now: &str) -> Result<Result<(), Refusal>, StoreError> {
    let row = conn
        .prepare_cached(
            "SELECT approver, operation, params, expires, used FROM _a2app_approvals WHERE key = ?1 AND expires > ?2",
        )?
        .query_row([key, now], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get(3)?, r.get(4)?))
        })
        .optional()?;
    let Some((approver, operation, params, expires, used)) = row else {
        return Ok(Err(Refusal::UnknownOrExpired));
    };
    // Written by `issue` from a JSON object; anything else admits nothing.
    let params = serde_json::from_str(&params).map_err(|e| StoreError::Internal(format!("approval params: {e}")))?;
    let stored = Approval { key: key.to_owned(), call: ApprovedCall { approver, operation, params }, expires, used };
    if let Err(refusal) = stored.admits(call) {
        return Ok(Err(refusal));
    }
    conn.prepare_cached("UPDATE _a2app_approvals SET used = 1 WHERE key = ?1")?.execute([key])?;
    Ok(Ok(()))
}
