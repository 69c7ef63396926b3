//! What a claim check reads and keeps: the audit entries of a turn, the
//! writes the app refused an agent (`_a2app_refused`) and the checks made
//! (`_a2app_claim_checks`). Both kept lists are bounded: the oldest go.

use crate::{AuditEntry, ClaimCheck, RefusedWrite, StoreError};
use rusqlite::{Connection, Row};

fn count(limit: u64) -> i64 {
    i64::try_from(limit.max(1)).unwrap_or(i64::MAX)
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Internal(e.to_string()))
}

fn parsed<T: serde::de::DeserializeOwned>(table: &str, seq: i64, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Internal(format!("{table} {seq}: {e}")))
}

/// The newest `limit` audit entries after `after` and `since`, oldest first.
pub fn audit_after(conn: &Connection, after: i64, since: &str, limit: u64) -> Result<Vec<AuditEntry>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, receipt FROM (SELECT seq, receipt FROM _a2app_audit WHERE seq > ?1 AND at > ?2 \
         ORDER BY seq DESC LIMIT ?3) ORDER BY seq",
    )?;
    let rows = stmt.query_map(rusqlite::params![after, since, count(limit)], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (seq, text) = row?;
        out.push(AuditEntry { seq, receipt: parsed("audit entry", seq, &text)? });
    }
    Ok(out)
}

pub fn keep_refused(conn: &Connection, refused: &RefusedWrite, keep: u64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO _a2app_refused (at, caller, agent, action, entity, record_id, body, violations, text) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?
    .execute(rusqlite::params![
        refused.at,
        refused.caller,
        refused.agent,
        refused.action,
        refused.entity,
        refused.id,
        json(&refused.body)?,
        json(&refused.violations)?,
        refused.text,
    ])?;
    trim(conn, "_a2app_refused", keep)
}

/// Drops all but the newest `keep` rows of a kept list.
fn trim(conn: &Connection, table: &str, keep: u64) -> Result<(), StoreError> {
    conn.prepare_cached(&format!(
        "DELETE FROM {table} WHERE seq <= (SELECT seq FROM {table} ORDER BY seq DESC LIMIT 1 OFFSET ?1)"
    ))?
    .execute([count(keep)])?;
    Ok(())
}

fn refused(r: &Row<'_>) -> rusqlite::Result<(RefusedWrite, String, String)> {
    let write = RefusedWrite {
        seq: r.get(0)?,
        at: r.get(1)?,
        caller: r.get(2)?,
        agent: r.get(3)?,
        action: r.get(4)?,
        entity: r.get(5)?,
        id: r.get(6)?,
        body: serde_json::Map::new(),
        violations: Vec::new(),
        text: r.get(9)?,
    };
    Ok((write, r.get(7)?, r.get(8)?))
}

pub fn refused_writes(conn: &Connection, after: i64, since: &str, limit: u64) -> Result<Vec<RefusedWrite>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT * FROM (SELECT seq, at, caller, agent, action, entity, record_id, body, violations, text \
         FROM _a2app_refused WHERE seq > ?1 AND at > ?2 ORDER BY seq DESC LIMIT ?3) ORDER BY seq",
    )?;
    let rows = stmt.query_map(rusqlite::params![after, since, count(limit)], refused)?;
    let mut out = Vec::new();
    for row in rows {
        let (mut write, body, violations) = row?;
        write.body = parsed("refused write", write.seq, &body)?;
        write.violations = parsed("refused write", write.seq, &violations)?;
        out.push(write);
    }
    Ok(out)
}

pub fn keep_check(conn: &Connection, check: &ClaimCheck, keep: u64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO _a2app_claim_checks (at, caller, agent, verdict, discrepancies, cursor) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(rusqlite::params![
        check.at,
        check.caller,
        check.agent,
        check.verdict,
        json(&check.discrepancies)?,
        check.cursor,
    ])?;
    trim(conn, "_a2app_claim_checks", keep)
}

pub fn claim_checks(conn: &Connection, limit: u64) -> Result<Vec<ClaimCheck>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, at, caller, agent, verdict, discrepancies, cursor FROM _a2app_claim_checks \
         ORDER BY seq DESC LIMIT ?1",
    )?;
    let rows = stmt.query_map([count(limit)], |r| {
        let check = ClaimCheck {
            seq: r.get(0)?,
            at: r.get(1)?,
            caller: r.get(2)?,
            agent: r.get(3)?,
            verdict: r.get(4)?,
            discrepancies: serde_json::Value::Null,
            cursor: r.get(6)?,
        };
        Ok((check, r.get::<_, String>(5)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (mut check, discrepancies) = row?;
        check.discrepancies = parsed("claim check", check.seq, &discrepancies)?;
        out.push(check);
    }
    Ok(out)
}

pub fn last_check(conn: &Connection, caller: &str, agent: Option<&str>) -> Result<Option<String>, StoreError> {
    use rusqlite::OptionalExtension;
    Ok(conn
        .prepare_cached(
            "SELECT cursor FROM _a2app_claim_checks WHERE caller = ?1 AND agent IS ?2 ORDER BY seq DESC LIMIT 1",
        )?
        .query_row(rusqlite::params![caller, agent], |r| r.get(0))
        .optional()?)
}
