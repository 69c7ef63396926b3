//! Deployed identity in PostgreSQL, as the SQLite store keeps it
//! (`sqlite::grants`): grants, their access tokens' hashes and the nonces
//! already signed. Where the SQLite store's single writer orders a
//! revocation and a token being issued, here row locks do: a step locks the
//! grant (`FOR UPDATE`), and so does an issue (`FOR NO KEY UPDATE`), so a
//! token is either stored before the revocation, which then deletes it, or
//! refused.
//! Asks hold an advisory lock, so the pending bounds hold across nodes.

use super::Tx;
use super::{Fail, oauth, operations};
use crate::grants;
use crate::{AuthRequest, GrantConflict, GrantLimits, GrantRoom, GrantStep, IssuedToken, StoreError, TokenGrant};
use postgres::{GenericClient, Row};
use protocol::grant::{Grant, GrantStatus};
use protocol::receipt::Receipt;

pub(super) const COLUMNS: &str =
    "id, agent, public_key, fingerprint, scopes, status, acts_for, created, updated, expires, client, source";

pub(super) fn read(r: &Row) -> Result<Grant, Fail> {
    let scopes: &str = r.try_get(4)?;
    let status: &str = r.try_get(5)?;
    Ok(Grant {
        id: r.try_get(0)?,
        agent: r.try_get(1)?,
        public_key: r.try_get(2)?,
        fingerprint: r.try_get(3)?,
        scopes: serde_json::from_str(scopes).unwrap_or_default(),
        // Written only from `GrantStatus::as_str`.
        status: GrantStatus::parse(status).unwrap_or(GrantStatus::Revoked),
        acts_for: r.try_get(6)?,
        created: r.try_get(7)?,
        updated: r.try_get(8)?,
        expires: r.try_get(9)?,
        client: r.try_get::<_, Option<&str>>(10)?.and_then(|text| serde_json::from_str(text).ok()),
        source: r.try_get(11)?,
    })
}

pub(super) fn as_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Internal(e.to_string()))
}

/// Pending grants nobody answered in time become expired.
fn expire(tx: &mut Tx<'_>, now: &str) -> Result<(), Fail> {
    tx.execute(
        "UPDATE _a2app_grants SET status = 'expired', updated = $1 WHERE status = 'pending' AND expires <= $1",
        &[&now],
    )?;
    Ok(())
}

/// Adds a pending grant unless its key, or all keys together, have as many
/// waiting as `limits` allow; past `limits.keep` closed grants, the oldest go.
pub fn ask(
    tx: &mut Tx<'_>,
    g: &Grant,
    limits: GrantLimits,
    audit: &Receipt,
    request: Option<&AuthRequest>,
) -> Result<GrantRoom, Fail> {
    super::lock(tx.raw(), super::Lock::Grants)?;
    expire(tx, &g.created)?;
    // The fingerprint stands for the key, or for an OAuth client.
    let mine: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM _a2app_grants WHERE status = 'pending' AND fingerprint = $1",
            &[&g.fingerprint],
        )?
        .get(0);
    if mine.max(0) as u64 >= limits.pending_per_key {
        return Ok(GrantRoom::KeyFull);
    }
    let from: i64 = tx
        .query_one("SELECT COUNT(*) FROM _a2app_grants WHERE status = 'pending' AND source = $1", &[&g.source])?
        .get(0);
    if from.max(0) as u64 >= limits.pending_per_source {
        return Ok(GrantRoom::SourceFull);
    }
    let pool: i64 = tx
        .query_one(
            "SELECT COUNT(*) FROM _a2app_grants WHERE status = 'pending' AND (client IS NULL) = $1",
            &[&g.client.is_none()],
        )?
        .get(0);
    if pool.max(0) as u64 >= limits.pending {
        return Ok(GrantRoom::Full);
    }
    let client = g.client.as_ref().map(json).transpose()?;
    tx.execute(
        &format!("INSERT INTO _a2app_grants ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, $9, $10, $11)"),
        &[
            &g.id,
            &g.agent,
            &g.public_key,
            &g.fingerprint,
            &json(&g.scopes)?,
            &g.status.as_str(),
            &g.acts_for,
            &g.created,
            &g.expires,
            &client,
            &g.source,
        ],
    )?;
    if let Some(request) = request {
        oauth::add_request(tx, request)?;
    }
    tx.execute(
        "DELETE FROM _a2app_grants WHERE id IN (SELECT id FROM _a2app_grants \
         WHERE status IN ('denied', 'revoked', 'expired') ORDER BY updated DESC, id COLLATE \"C\" DESC OFFSET $1)",
        &[&as_i64(limits.keep)],
    )?;
    oauth::forget_closed(tx)?;
    operations::audit(tx.raw(), audit)?;
    Ok(GrantRoom::Asked)
}

pub fn get(db: &mut impl GenericClient, id: &str) -> Result<Option<Grant>, Fail> {
    db.query_opt(&format!("SELECT {COLUMNS} FROM _a2app_grants WHERE id = $1"), &[&id])?.map(|r| read(&r)).transpose()
}

/// The grant, locked as `lock` says until the transaction ends: `FOR UPDATE`
/// to change it; `FOR NO KEY UPDATE` to add a token under it, so a
/// revocation waits for the token (and deletes it) or comes first (and the
/// token is refused), and two tokens of one grant count each other against
/// its bound.
pub(super) fn locked(tx: &mut Tx<'_>, id: &str, lock: &str) -> Result<Option<Grant>, Fail> {
    let sql = format!("SELECT {COLUMNS} FROM _a2app_grants WHERE id = $1 {lock}");
    tx.query_opt(&sql, &[&id])?.map(|r| read(&r)).transpose()
}

/// Grants newest first: all, or those acting for `acts_for`, at most `limit`.
pub fn list(db: &mut impl GenericClient, acts_for: Option<&str>, limit: u64) -> Result<Vec<Grant>, Fail> {
    let rows = db.query(
        &format!(
            "SELECT {COLUMNS} FROM _a2app_grants WHERE $1::text IS NULL OR acts_for = $1 \
             ORDER BY created DESC, id COLLATE \"C\" DESC LIMIT $2"
        ),
        &[&acts_for, &as_i64(limit)],
    )?;
    rows.iter().map(read).collect()
}

/// The pending grants, oldest first: all, or those asked from `source`.
pub fn pending(db: &mut impl GenericClient, source: Option<&str>, limit: u64) -> Result<Vec<Grant>, Fail> {
    let rows = db.query(
        &format!(
            "SELECT {COLUMNS} FROM _a2app_grants WHERE status = 'pending' AND ($1::text IS NULL OR source = $1) \
             ORDER BY created, id COLLATE \"C\" LIMIT $2"
        ),
        &[&source, &as_i64(limit)],
    )?;
    rows.iter().map(read).collect()
}

/// Applies one step to grant `id` if its state allows it.
pub fn step(
    tx: &mut Tx<'_>,
    id: &str,
    step: &GrantStep,
    now: &str,
    audit: &Receipt,
) -> Result<Result<Grant, GrantConflict>, Fail> {
    expire(tx, now)?;
    let Some(mut g) = locked(tx, id, "FOR UPDATE")? else { return Ok(Err(GrantConflict::NotFound)) };
    match grants::next(&mut g, step, now) {
        Ok(true) => end_tokens(tx, id)?,
        Ok(false) => {}
        Err(conflict) => return Ok(Err(conflict)),
    }
    tx.execute(
        "UPDATE _a2app_grants SET status = $2, acts_for = $3, scopes = $4, updated = $5 WHERE id = $1",
        &[&g.id, &g.status.as_str(), &g.acts_for, &json(&g.scopes)?, &g.updated],
    )?;
    operations::audit(tx.raw(), audit)?;
    Ok(Ok(g))
}

/// Deletes every token of a grant: access, refresh, and a code not yet traded.
pub(super) fn end_tokens(tx: &mut Tx<'_>, id: &str) -> Result<(), Fail> {
    tx.execute("DELETE FROM _a2app_grant_tokens WHERE grant_id = $1", &[&id])?;
    tx.execute("DELETE FROM _a2app_refresh_tokens WHERE grant_id = $1", &[&id])?;
    tx.execute("UPDATE _a2app_oauth_requests SET code_hash = NULL, code_expires = NULL WHERE grant_id = $1", &[&id])?;
    Ok(())
}

/// Records a signed nonce and stores a new token's hash, if the grant is
/// active and the nonce was not signed before.
pub fn issue(tx: &mut Tx<'_>, t: &IssuedToken, now: &str, max_tokens: u64) -> Result<Result<(), GrantConflict>, Fail> {
    let Some(g) = locked(tx, &t.grant_id, "FOR NO KEY UPDATE")? else { return Ok(Err(GrantConflict::NotFound)) };
    if g.status != GrantStatus::Active {
        return Ok(Err(GrantConflict::Decided(g.status)));
    }
    tx.execute("DELETE FROM _a2app_grant_nonces WHERE expires <= $1", &[&now])?;
    let fresh = tx.execute(
        "INSERT INTO _a2app_grant_nonces (grant_id, nonce, expires) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        &[&t.grant_id, &t.nonce, &t.nonce_expires],
    )?;
    if fresh == 0 {
        return Ok(Err(GrantConflict::Replayed));
    }
    add_token(tx, &t.grant_id, &t.hash, &t.expires, None, now, max_tokens)?;
    Ok(Ok(()))
}

/// The active grant whose live token hashes to `hash`, the token's end and audience.
pub fn by_token(db: &mut impl GenericClient, hash: &str, now: &str) -> Result<Option<TokenGrant>, Fail> {
    let columns: Vec<String> = COLUMNS.split(", ").map(|c| format!("g.{c}")).collect();
    let sql = format!(
        "SELECT {}, t.expires, t.audience FROM _a2app_grant_tokens t JOIN _a2app_grants g ON g.id = t.grant_id \
         WHERE t.hash = $1 AND t.expires > $2 AND g.status = 'active'",
        columns.join(", ")
    );
    let Some(r) = db.query_opt(&sql, &[&hash, &now])? else { return Ok(None) };
    // The token's columns follow the grant's.
    let n = columns.len();
    Ok(Some(TokenGrant { grant: read(&r)?, expires: r.try_get(n)?, audience: r.try_get(n + 1)? }))
}

/// Stores an access token's hash; past `max_tokens` live tokens of the
/// grant, the oldest go.
pub(super) fn add_token(
    tx: &mut Tx<'_>,
    grant_id: &str,
    hash: &str,
    expires: &str,
    audience: Option<&str>,
    now: &str,
    max_tokens: u64,
) -> Result<(), Fail> {
    tx.execute("DELETE FROM _a2app_grant_tokens WHERE expires <= $1", &[&now])?;
    tx.execute(
        "INSERT INTO _a2app_grant_tokens (hash, grant_id, created, expires, audience) VALUES ($1, $2, $3, $4, $5)",
        &[&hash, &grant_id, &now, &expires, &audience],
    )?;
    tx.execute(
        "DELETE FROM _a2app_grant_tokens WHERE hash IN (SELECT hash FROM _a2app_grant_tokens WHERE grant_id = $1 \
         ORDER BY created DESC, hash COLLATE \"C\" OFFSET $2)",
        &[&grant_id, &as_i64(max_tokens)],
    )?;
    Ok(())
}
