//! SQL for users of multi-user apps and the app's secrets.
//!
//! Password hashes and token keys live in `_a2app_auth`, outside the users
//! table, so no query of the records API, filter or expand can reach them.

use crate::{Credentials, StoreError};
use rusqlite::{Connection, OptionalExtension};

pub fn secret(conn: &Connection, name: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT value FROM _a2app_meta WHERE key = ?1")?
        .query_row([format!("secret:{name}")], |r| r.get(0))
        .optional()?)
}

pub fn create_secret(conn: &Connection, name: &str) -> Result<String, StoreError> {
    let value = a2app_definition::secret::agent_token();
    conn.prepare_cached("INSERT OR IGNORE INTO _a2app_meta (key, value) VALUES (?1, ?2)")?
        .execute([format!("secret:{name}"), value])?;
    // Another writer may have won the race; the stored one is the secret.
    secret(conn, name)?.ok_or_else(|| StoreError::Internal("the secret was not stored".into()))
}

pub fn credentials(conn: &Connection, email: &str) -> Result<Option<Credentials>, StoreError> {
    let sql = "SELECT u.\"id\", a.password_hash, a.token_key FROM \"users\" AS u \
               JOIN _a2app_auth AS a ON a.user_id = u.\"id\" WHERE u.\"email\" = ?1 COLLATE NOCASE";
    Ok(conn
        .prepare_cached(sql)?
        .query_row([email], |r| Ok(Credentials { user_id: r.get(0)?, password_hash: r.get(1)?, token_key: r.get(2)? }))
        .optional()?)
}

pub fn token_key(conn: &Connection, user_id: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT token_key FROM _a2app_auth WHERE user_id = ?1")?
        .query_row([user_id], |r| r.get(0))
        .optional()?)
}

/// Sets a user's password hash and rotates its token key (revoking its tokens).
pub fn set_password(conn: &Connection, user_id: &str, hash: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO _a2app_auth (user_id, password_hash, token_key) VALUES (?1, ?2, ?3) \
         ON CONFLICT(user_id) DO UPDATE SET password_hash = excluded.password_hash, token_key = excluded.token_key",
    )?
    .execute([user_id, hash, &a2app_definition::secret::agent_token()])?;
    Ok(())
}

pub fn forget(conn: &Connection, user_id: &str) -> Result<(), StoreError> {
    conn.prepare_cached("DELETE FROM _a2app_auth WHERE user_id = ?1")?.execute([user_id])?;
    Ok(())
}
