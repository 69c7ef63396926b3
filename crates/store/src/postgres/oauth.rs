//! OAuth in PostgreSQL, as the SQLite store keeps it (`sqlite::oauth`):
//! registered clients, the authorization request behind each OAuth grant
//! with its one-time code, and refresh tokens; only hashes are stored.
//! Spending a code is one `UPDATE … RETURNING`, and a refresh token's row
//! is locked while it is judged, so each works once across every node.

use super::Fail;
use super::Tx;
use super::grants::{self, as_i64};
use crate::{AuthRequest, CodeUse, GrantConflict, OAuthClient, OAuthTokens, StoreError};
use postgres::{GenericClient, Row};
use protocol::grant::GrantStatus;

pub fn register(tx: &mut Tx<'_>, client: &OAuthClient, max: u64) -> Result<(), Fail> {
    // With grant asks: a client whose first grant another node is asking
    // for is not pruned as grantless meanwhile.
    super::lock(tx.raw(), super::Lock::Grants)?;
    let uris = serde_json::to_string(&client.redirect_uris).map_err(|e| StoreError::Internal(e.to_string()))?;
    // A metadata document's client is stored again each time it is read.
    tx.execute(
        "INSERT INTO _a2app_oauth_clients (client_id, name, redirect_uris, used) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, redirect_uris = excluded.redirect_uris, \
         used = excluded.used",
        &[&client.id, &client.name, &uris, &client.used],
    )?;
    // Registration is open to anyone: the longest unused clients that hold no
    // grant waiting or active make room, so a flood never grows the table past `max`.
    tx.execute(
        "DELETE FROM _a2app_oauth_clients WHERE client_id IN ( \
           SELECT c.client_id FROM _a2app_oauth_clients c \
           WHERE NOT EXISTS (SELECT 1 FROM _a2app_oauth_requests r JOIN _a2app_grants g ON g.id = r.grant_id \
                             WHERE r.client_id = c.client_id AND g.status IN ('pending', 'active')) \
           ORDER BY c.used DESC, c.client_id COLLATE \"C\" OFFSET $1)",
        &[&as_i64(max)],
    )?;
    Ok(())
}

pub fn client(db: &mut impl GenericClient, id: &str) -> Result<Option<OAuthClient>, Fail> {
    let sql = "SELECT client_id, name, redirect_uris, used FROM _a2app_oauth_clients WHERE client_id = $1";
    let Some(r) = db.query_opt(sql, &[&id])? else { return Ok(None) };
    Ok(Some(OAuthClient {
        id: r.try_get(0)?,
        name: r.try_get(1)?,
        redirect_uris: serde_json::from_str(r.try_get(2)?).unwrap_or_default(),
        used: r.try_get(3)?,
    }))
}

pub(super) fn add_request(tx: &mut Tx<'_>, r: &AuthRequest) -> Result<(), Fail> {
    tx.execute(
        "INSERT INTO _a2app_oauth_requests (grant_id, client_id, redirect_uri, challenge, state, audience) \
         VALUES ($1, $2, $3, $4, $5, $6)",
        &[&r.grant_id, &r.client_id, &r.redirect_uri, &r.challenge, &r.state, &r.audience],
    )?;
    Ok(())
}

/// Requests whose grant is gone (closed grants are pruned) go with it.
pub(super) fn forget_closed(tx: &mut Tx<'_>) -> Result<(), Fail> {
    tx.execute(
        "DELETE FROM _a2app_oauth_requests r WHERE NOT EXISTS (SELECT 1 FROM _a2app_grants g WHERE g.id = r.grant_id)",
        &[],
    )?;
    Ok(())
}

const REQUEST_COLUMNS: &str = "grant_id, client_id, redirect_uri, challenge, state, audience";

fn read_request(r: &Row) -> Result<AuthRequest, Fail> {
    Ok(AuthRequest {
        grant_id: r.try_get(0)?,
        client_id: r.try_get(1)?,
        redirect_uri: r.try_get(2)?,
        challenge: r.try_get(3)?,
        state: r.try_get(4)?,
        audience: r.try_get(5)?,
    })
}

pub fn request(db: &mut impl GenericClient, grant_id: &str) -> Result<Option<AuthRequest>, Fail> {
    let sql = format!("SELECT {REQUEST_COLUMNS} FROM _a2app_oauth_requests WHERE grant_id = $1");
    db.query_opt(&sql, &[&grant_id])?.map(|r| read_request(&r)).transpose()
}

pub fn set_code(db: &mut impl GenericClient, grant_id: &str, code_hash: &str, expires: &str) -> Result<(), Fail> {
    db.execute(
        "UPDATE _a2app_oauth_requests SET code_hash = $2, code_expires = $3 WHERE grant_id = $1",
        &[&grant_id, &code_hash, &expires],
    )?;
    Ok(())
}

/// The request a live code was issued for, spent in the same statement that
/// finds it; until the code would have expired it is kept as `spent_code`,
/// and presenting it again is a replay (see `sqlite::oauth::take_code`).
pub fn take_code(tx: &mut Tx<'_>, code_hash: &str, now: &str) -> Result<CodeUse, Fail> {
    let spent = tx.query_opt(
        &format!(
            "UPDATE _a2app_oauth_requests SET code_hash = NULL, spent_code = $1 \
             WHERE code_hash = $1 AND code_expires > $2 RETURNING {REQUEST_COLUMNS}"
        ),
        &[&code_hash, &now],
    )?;
    if let Some(row) = spent {
        return Ok(CodeUse::Live(read_request(&row)?));
    }
    // An expired code is dropped, not counted as spent: a slow client is no thief.
    tx.execute(
        "UPDATE _a2app_oauth_requests SET code_hash = NULL, code_expires = NULL WHERE code_hash = $1",
        &[&code_hash],
    )?;
    let replayed = tx.query_opt(
        "SELECT grant_id FROM _a2app_oauth_requests WHERE spent_code = $1 AND code_expires > $2",
        &[&code_hash, &now],
    )?;
    Ok(replayed.map_or(CodeUse::Unknown, |r| CodeUse::Replayed(r.get(0))))
}

/// Stores an access and a refresh token for an active grant. With `spent`,
/// the refresh token traded for them must be live and unused; one used
/// before ends all of the grant's tokens.
pub fn issue(
    tx: &mut Tx<'_>,
    t: &OAuthTokens,
    spent: Option<&str>,
    now: &str,
    max_tokens: u64,
) -> Result<Result<(), GrantConflict>, Fail> {
    let Some(g) = grants::locked(tx, &t.grant_id, "FOR NO KEY UPDATE")? else {
        return Ok(Err(GrantConflict::NotFound));
    };
    if g.status != GrantStatus::Active {
        return Ok(Err(GrantConflict::Decided(g.status)));
    }
    if let Some(old) = spent {
        let used = tx.query_opt(
            "SELECT used FROM _a2app_refresh_tokens WHERE hash = $1 AND grant_id = $2 AND expires > $3 FOR UPDATE",
            &[&old, &t.grant_id, &now],
        )?;
        match used.map(|r| r.get::<_, i32>(0) != 0) {
            None => return Ok(Err(GrantConflict::NotFound)),
            Some(true) => {
                grants::end_tokens(tx, &t.grant_id)?;
                return Ok(Err(GrantConflict::Replayed));
            }
            Some(false) => {
                tx.execute("UPDATE _a2app_refresh_tokens SET used = 1 WHERE hash = $1", &[&old])?;
            }
        }
    }
    tx.execute("DELETE FROM _a2app_refresh_tokens WHERE expires <= $1", &[&now])?;
    tx.execute(
        "INSERT INTO _a2app_refresh_tokens (hash, grant_id, audience, created, expires) VALUES ($1, $2, $3, $4, $5)",
        &[&t.refresh_hash, &t.grant_id, &t.audience, &now, &t.refresh_expires],
    )?;
    grants::add_token(tx, &t.grant_id, &t.access_hash, &t.access_expires, Some(&t.audience), now, max_tokens)?;
    Ok(Ok(()))
}

/// The grant and audience of a live refresh token, used or not.
pub fn refresh_grant(db: &mut impl GenericClient, hash: &str, now: &str) -> Result<Option<(String, String)>, Fail> {
    let sql = "SELECT grant_id, audience FROM _a2app_refresh_tokens WHERE hash = $1 AND expires > $2";
    Ok(db.query_opt(sql, &[&hash, &now])?.map(|r| (r.get(0), r.get(1))))
}

/// The grant of a stored access or refresh token, expired or not.
pub fn token_grant(db: &mut impl GenericClient, hash: &str) -> Result<Option<String>, Fail> {
    let sql = "SELECT grant_id FROM _a2app_grant_tokens WHERE hash = $1 \
               UNION ALL SELECT grant_id FROM _a2app_refresh_tokens WHERE hash = $1 LIMIT 1";
    Ok(db.query_opt(sql, &[&hash])?.map(|r| r.get(0)))
}
