//! Deployed identity in SQLite: grants (`_a2app_grants`), the hashes of their
//! short-lived access tokens (`_a2app_grant_tokens`) and the nonces already
//! signed (`_a2app_grant_nonces`). Every change runs in one writer task that
//! reads the row and checks the step against it, so a grant revoked while a
//! token is being issued either issues before the revocation (and the token
//! is deleted with it) or not at all.

use crate::grants;
use crate::{AuthRequest, GrantConflict, GrantLimits, GrantRoom, GrantStep, IssuedToken, StoreError, TokenGrant};
use protocol::grant::{Grant, GrantStatus};
use protocol::receipt::Receipt;
use rusqlite::{Connection, OptionalExtension, Row};

const COLUMNS: &str =
    "id, agent, public_key, fingerprint, scopes, status, acts_for, created, updated, expires, client, source";

fn read(r: &Row<'_>) -> rusqlite::Result<Grant> {
    let scopes: String = r.get(4)?;
    let status: String = r.get(5)?;
    Ok(Grant {
        id: r.get(0)?,
        agent: r.get(1)?,
        public_key: r.get(2)?,
        fingerprint: r.get(3)?,
        scopes: serde_json::from_str(&scopes).unwrap_or_default(),
        // Written only from `GrantStatus::as_str`.
        status: GrantStatus::parse(&status).unwrap_or(GrantStatus::Revoked),
        acts_for: r.get(6)?,
        created: r.get(7)?,
        updated: r.get(8)?,
        expires: r.get(9)?,
        client: r.get::<_, Option<String>>(10)?.and_then(|text| serde_json::from_str(&text).ok()),
        source: r.get(11)?,
    })
}

fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Pending grants nobody answered in time become expired.
fn expire(conn: &Connection, now: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE _a2app_grants SET status = 'expired', updated = ?1 WHERE status = 'pending' AND expires <= ?1",
    )?
    .execute([now])?;
    Ok(())
}

/// Adds a pending grant unless its key, its source, or its pool (asks with a
/// key, or sign-ins through OAuth) have as many waiting as `limits` allow;
/// past `limits.keep` closed grants (denied, revoked, expired), the oldest
/// go. An OAuth grant keeps its authorization request beside it.
pub fn ask(
    conn: &Connection,
    g: &Grant,
    limits: GrantLimits,
    audit: &Receipt,
    request: Option<&AuthRequest>,
) -> Result<GrantRoom, StoreError> {
    expire(conn, &g.created)?;
    let count = |sql: &str, key: &dyn rusqlite::ToSql| -> Result<u64, StoreError> {
        let n: i64 = conn.prepare_cached(sql)?.query_row([key], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    };
    // The fingerprint stands for the key, or for an OAuth client.
    let mine = "SELECT COUNT(*) FROM _a2app_grants WHERE status = 'pending' AND fingerprint = ?1";
    if count(mine, &g.fingerprint)? >= limits.pending_per_key {
        return Ok(GrantRoom::KeyFull);
    }
    let from = "SELECT COUNT(*) FROM _a2app_grants WHERE status = 'pending' AND source = ?1";
    if count(from, &g.source)? >= limits.pending_per_source {
        return Ok(GrantRoom::SourceFull);
    }
    let pool = "SELECT COUNT(*) FROM _a2app_grants WHERE status = 'pending' AND (client IS NULL) = ?1";
    if count(pool, &g.client.is_none())? >= limits.pending {
        return Ok(GrantRoom::Full);
    }
    let scopes = serde_json::to_string(&g.scopes).map_err(|e| StoreError::Internal(e.to_string()))?;
    let client = match &g.client {
        Some(c) => Some(serde_json::to_string(c).map_err(|e| StoreError::Internal(e.to_string()))?),
        None => None,
    };
    conn.prepare_cached(&format!(
        "INSERT INTO _a2app_grants ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?9, ?10, ?11)"
    ))?
    .execute(rusqlite::params![
        g.id,
        g.agent,
        g.public_key,
        g.fingerprint,
        scopes,
        g.status.as_str(),
        g.acts_for,
        g.created,
        g.expires,
        client,
        g.source
    ])?;
    if let Some(request) = request {
        super::oauth::add_request(conn, request)?;
    }
    conn.prepare_cached(
        "DELETE FROM _a2app_grants WHERE id IN (SELECT id FROM _a2app_grants
         WHERE status IN ('denied', 'revoked', 'expired') ORDER BY updated DESC, id DESC LIMIT -1 OFFSET ?1)",
    )?
    .execute([as_i64(limits.keep)])?;
    super::oauth::forget_closed(conn)?;
    super::jobs::audit(conn, audit)?;
    Ok(GrantRoom::Asked)
}

pub fn get(conn: &Connection, id: &str) -> Result<Option<Grant>, StoreError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM _a2app_grants WHERE id = ?1"))?
        .query_row([id], read)
        .optional()?)
}

/// Grants newest first: all, or those acting for `acts_for`, at most `limit`.
/// A pending grant acts for nobody yet: only the app's owner lists it; the
/// person it is meant for opens it by the id its agent showed them.
pub fn list(conn: &Connection, acts_for: Option<&str>, limit: u64) -> Result<Vec<Grant>, StoreError> {
    let items = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM _a2app_grants WHERE ?1 IS NULL OR acts_for = ?1
             ORDER BY created DESC, id DESC LIMIT ?2"
        ))?
        .query_map(rusqlite::params![acts_for, as_i64(limit)], read)?
        .collect::<Result<_, _>>()?;
    Ok(items)
}

/// The pending grants, oldest first: all, or those asked from `source`.
pub fn pending(conn: &Connection, source: Option<&str>, limit: u64) -> Result<Vec<Grant>, StoreError> {
    let items = conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM _a2app_grants WHERE status = 'pending' AND (?1 IS NULL OR source = ?1)
             ORDER BY created, id LIMIT ?2"
        ))?
        .query_map(rusqlite::params![source, as_i64(limit)], read)?
        .collect::<Result<_, _>>()?;
    Ok(items)
}

/// Applies one step to grant `id` if its state allows it.
pub fn step(
    conn: &Connection,
    id: &str,
    step: &GrantStep,
    now: &str,
    audit: &Receipt,
) -> Result<Result<Grant, GrantConflict>, StoreError> {
    expire(conn, now)?;
    let Some(mut g) = get(conn, id)? else { return Ok(Err(GrantConflict::NotFound)) };
    match grants::next(&mut g, step, now) {
        Ok(true) => end_tokens(conn, id)?,
        Ok(false) => {}
        Err(conflict) => return Ok(Err(conflict)),
    }
    let scopes = serde_json::to_string(&g.scopes).map_err(|e| StoreError::Internal(e.to_string()))?;
    conn.prepare_cached(
        "UPDATE _a2app_grants SET status = ?2, acts_for = ?3, scopes = ?4, updated = ?5 WHERE id = ?1",
    )?
    .execute(rusqlite::params![g.id, g.status.as_str(), g.acts_for, scopes, g.updated])?;
    super::jobs::audit(conn, audit)?;
    Ok(Ok(g))
}

/// Deletes every token of a grant: access, refresh, and a code not yet traded.
pub fn end_tokens(conn: &Connection, id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM _a2app_grant_tokens WHERE grant_id = ?1")?.execute([id])?;
    conn.prepare_cached("DELETE FROM _a2app_refresh_tokens WHERE grant_id = ?1")?.execute([id])?;
    conn.prepare_cached("UPDATE _a2app_oauth_requests SET code_hash = NULL, code_expires = NULL WHERE grant_id = ?1")?
        .execute([id])?;
    Ok(())
}

/// Records a signed nonce and stores a new token's hash, if the grant is
/// active and the nonce was not signed before. Expired tokens and nonces go;
/// past `max_tokens` live tokens of the grant, the oldest go.
pub fn issue(
    conn: &Connection,
    t: &IssuedToken,
    now: &str,
    max_tokens: u64,
) -> Result<Result<(), GrantConflict>, StoreError> {
    let Some(g) = get(conn, &t.grant_id)? else { return Ok(Err(GrantConflict::NotFound)) };
    if g.status != GrantStatus::Active {
        return Ok(Err(GrantConflict::Decided(g.status)));
    }
    conn.prepare_cached("DELETE FROM _a2app_grant_nonces WHERE expires <= ?1")?.execute([now])?;
    let fresh = conn
        .prepare_cached("INSERT OR IGNORE INTO _a2app_grant_nonces (grant_id, nonce, expires) VALUES (?1, ?2, ?3)")?
        .execute(rusqlite::params![t.grant_id, t.nonce, t.nonce_expires])?;
    if fresh == 0 {
        return Ok(Err(GrantConflict::Replayed));
    }
    add_token(conn, &t.grant_id, &t.hash, &t.expires, None, now, max_tokens)?;
    Ok(Ok(()))
}

/// The active grant whose live token hashes to `hash`, the token's end and audience.
pub fn by_token(conn: &Connection, hash: &str, now: &str) -> Result<Option<TokenGrant>, StoreError> {
    let columns: Vec<String> = COLUMNS.split(", ").map(|c| format!("g.{c}")).collect();
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {}, t.expires, t.audience FROM _a2app_grant_tokens t JOIN _a2app_grants g ON g.id = t.grant_id
             WHERE t.hash = ?1 AND t.expires > ?2 AND g.status = 'active'",
            columns.join(", ")
        ))?
        .query_row([hash, now], |r| {
            // The token's columns follow the grant's.
            let n = columns.len();
            Ok(TokenGrant { grant: read(r)?, expires: r.get(n)?, audience: r.get(n + 1)? })
        })
        .optional()?)
}

/// Stores an access token's hash for an active grant; past `max_tokens`
/// live tokens of the grant, the oldest go.
pub fn add_token(
    conn: &Connection,
    grant_id: &str,
    hash: &str,
    expires: &str,
    audience: Option<&str>,
    now: &str,
    max_tokens: u64,
) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM _a2app_grant_tokens WHERE expires <= ?1")?.execute([now])?;
    conn.prepare_cached(
        "INSERT INTO _a2app_grant_tokens (hash, grant_id, created, expires, audience) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(rusqlite::params![hash, grant_id, now, expires, audience])?;
    conn.prepare_cached(
        "DELETE FROM _a2app_grant_tokens WHERE hash IN (SELECT hash FROM _a2app_grant_tokens WHERE grant_id = ?1
         ORDER BY created DESC, hash LIMIT -1 OFFSET ?2)",
    )?
    .execute(rusqlite::params![grant_id, as_i64(max_tokens)])?;
    Ok(())
}
