//! OAuth in SQLite: registered clients (`_a2app_oauth_clients`), the
//! authorization request behind each OAuth grant with its one-time code
//! (`_a2app_oauth_requests`), and refresh tokens (`_a2app_refresh_tokens`).
//! Access tokens are grant tokens (`_a2app_grant_tokens`) with an audience.
//! Only hashes of codes and tokens are stored.

use super::grants;
use crate::{AuthRequest, CodeUse, GrantConflict, OAuthClient, OAuthTokens, StoreError};
use protocol::grant::GrantStatus;
use rusqlite::{Connection, OptionalExtension, Row};

pub fn register(conn: &Connection, client: &OAuthClient, max: u64) -> Result<(), StoreError> {
    let uris = serde_json::to_string(&client.redirect_uris).map_err(|e| StoreError::Internal(e.to_string()))?;
    conn.prepare_cached(
        // A metadata document's client is stored again each time it is read.
        "INSERT OR REPLACE INTO _a2app_oauth_clients (client_id, name, redirect_uris, used) VALUES (?1, ?2, ?3, ?4)",
    )?
    .execute(rusqlite::params![client.id, client.name, uris, client.used])?;
    // Registration is open to anyone: the longest unused clients that hold no
    // grant waiting or active make room, so a flood never grows the table past `max`.
    conn.prepare_cached(
        "DELETE FROM _a2app_oauth_clients WHERE client_id IN (
           SELECT c.client_id FROM _a2app_oauth_clients c
           WHERE NOT EXISTS (SELECT 1 FROM _a2app_oauth_requests r JOIN _a2app_grants g ON g.id = r.grant_id
                             WHERE r.client_id = c.client_id AND g.status IN ('pending', 'active'))
           ORDER BY c.used DESC, c.client_id LIMIT -1 OFFSET ?1)",
    )?
    .execute([i64::try_from(max).unwrap_or(i64::MAX)])?;
    Ok(())
}

pub fn client(conn: &Connection, id: &str) -> Result<Option<OAuthClient>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT client_id, name, redirect_uris, used FROM _a2app_oauth_clients WHERE client_id = ?1")?
        .query_row([id], |r| {
            let uris: String = r.get(2)?;
            Ok(OAuthClient {
                id: r.get(0)?,
                name: r.get(1)?,
                redirect_uris: serde_json::from_str(&uris).unwrap_or_default(),
                used: r.get(3)?,
            })
        })
        .optional()?)
}

pub fn add_request(conn: &Connection, r: &AuthRequest) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO _a2app_oauth_requests (grant_id, client_id, redirect_uri, challenge, state, audience)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(rusqlite::params![r.grant_id, r.client_id, r.redirect_uri, r.challenge, r.state, r.audience])?;
    Ok(())
}

/// Requests whose grant is gone (closed grants are pruned) go with it.
pub fn forget_closed(conn: &Connection) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM _a2app_oauth_requests WHERE grant_id NOT IN (SELECT id FROM _a2app_grants)")?
        .execute([])?;
    Ok(())
}

const REQUEST_COLUMNS: &str = "grant_id, client_id, redirect_uri, challenge, state, audience";

fn read_request(r: &Row<'_>) -> rusqlite::Result<AuthRequest> {
    Ok(AuthRequest {
        grant_id: r.get(0)?,
        client_id: r.get(1)?,
        redirect_uri: r.get(2)?,
        challenge: r.get(3)?,
        state: r.get(4)?,
        audience: r.get(5)?,
    })
}

pub fn request(conn: &Connection, grant_id: &str) -> Result<Option<AuthRequest>, StoreError> {
    Ok(conn
        .prepare_cached(&format!("SELECT {REQUEST_COLUMNS} FROM _a2app_oauth_requests WHERE grant_id = ?1"))?
        .query_row([grant_id], read_request)
        .optional()?)
}

pub fn set_code(conn: &Connection, grant_id: &str, code_hash: &str, expires: &str) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE _a2app_oauth_requests SET code_hash = ?2, code_expires = ?3 WHERE grant_id = ?1")?
        .execute([grant_id, code_hash, expires])?;
    Ok(())
}

/// The request a live code was issued for; the code is spent whatever the
/// trade's outcome, so a code works at most once. Until the code would have
/// expired it is kept as `spent_code`, and presenting it again is a replay;
/// after, it is as unknown as any expired code (a leaked old code cannot end
/// a sign-in weeks later).
pub fn take_code(conn: &Connection, code_hash: &str, now: &str) -> Result<CodeUse, StoreError> {
    let found = conn
        .prepare_cached(&format!(
            "SELECT {REQUEST_COLUMNS} FROM _a2app_oauth_requests WHERE code_hash = ?1 AND code_expires > ?2"
        ))?
        .query_row([code_hash, now], read_request)
        .optional()?;
    if let Some(request) = found {
        conn.prepare_cached("UPDATE _a2app_oauth_requests SET code_hash = NULL, spent_code = ?2 WHERE grant_id = ?1")?
            .execute([&request.grant_id, code_hash])?;
        return Ok(CodeUse::Live(request));
    }
    // An expired code is dropped, not counted as spent: a slow client is no thief.
    conn.prepare_cached("UPDATE _a2app_oauth_requests SET code_hash = NULL, code_expires = NULL WHERE code_hash = ?1")?
        .execute([code_hash])?;
    let replayed: Option<String> = conn
        .prepare_cached("SELECT grant_id FROM _a2app_oauth_requests WHERE spent_code = ?1 AND code_expires > ?2")?
        .query_row([code_hash, now], |r| r.get(0))
        .optional()?;
    Ok(replayed.map_or(CodeUse::Unknown, CodeUse::Replayed))
}

/// Stores an access and a refresh token for an active grant. With `spent`,
/// the refresh token traded for them must be live and unused; one used
/// before ends all of the grant's tokens.
pub fn issue(
    conn: &Connection,
    t: &OAuthTokens,
    spent: Option<&str>,
    now: &str,
    max_tokens: u64,
) -> Result<Result<(), GrantConflict>, StoreError> {
    let Some(g) = grants::get(conn, &t.grant_id)? else { return Ok(Err(GrantConflict::NotFound)) };
    if g.status != GrantStatus::Active {
        return Ok(Err(GrantConflict::Decided(g.status)));
    }
    if let Some(old) = spent {
        let used: Option<bool> = conn
            .prepare_cached(
                "SELECT used FROM _a2app_refresh_tokens WHERE hash = ?1 AND grant_id = ?2 AND expires > ?3",
            )?
            .query_row([old, &t.grant_id, now], |r| r.get(0))
            .optional()?;
        match used {
            None => return Ok(Err(GrantConflict::NotFound)),
            Some(true) => {
                grants::end_tokens(conn, &t.grant_id)?;
                return Ok(Err(GrantConflict::Replayed));
            }
            Some(false) => {
                conn.prepare_cached("UPDATE _a2app_refresh_tokens SET used = 1 WHERE hash = ?1")?.execute([old])?;
            }
        }
    }
    conn.prepare_cached("DELETE FROM _a2app_refresh_tokens WHERE expires <= ?1")?.execute([now])?;
    conn.prepare_cached(
        "INSERT INTO _a2app_refresh_tokens (hash, grant_id, audience, created, expires) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(rusqlite::params![t.refresh_hash, t.grant_id, t.audience, now, t.refresh_expires])?;
    grants::add_token(conn, &t.grant_id, &t.access_hash, &t.access_expires, Some(&t.audience), now, max_tokens)?;
    Ok(Ok(()))
}

/// The grant and audience of a live refresh token, used or not (a used one
/// presented again is caught when tokens are issued).
pub fn refresh_grant(conn: &Connection, hash: &str, now: &str) -> Result<Option<(String, String)>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT grant_id, audience FROM _a2app_refresh_tokens WHERE hash = ?1 AND expires > ?2")?
        .query_row([hash, now], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?)
}

/// The grant of a stored access or refresh token, expired or not (expired
/// ones stay until the next token of any grant is stored).
pub fn token_grant(conn: &Connection, hash: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT grant_id FROM _a2app_grant_tokens WHERE hash = ?1
             UNION ALL SELECT grant_id FROM _a2app_refresh_tokens WHERE hash = ?1 LIMIT 1",
        )?
        .query_row([hash], |r| r.get(0))
        .optional()?)
}
