//! Users' secrets: password hashes and PocketBase-compatible auth tokens.
//!
//! Tokens are HS256 JWTs with PocketBase's claims (`id`, `collectionId`,
//! `type: "auth"`, `refreshable`, `exp`), signed with the app's secret plus the
//! user's token key, so changing a password (which rotates the key) revokes
//! every token of that user at once. Passwords are hashed with Argon2id and
//! never returned, logged or put in a receipt.

pub use a2app_definition::users::ENTITY;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};

/// PocketBase's token lifetime for auth collections: 5 days.
pub const TOKEN_SECONDS: i64 = 432_000;

pub fn hash_password(password: &str) -> Result<String, String> {
    use argon2::PasswordHasher;
    argon2::Argon2::default().hash_password(password.as_bytes()).map(|h| h.to_string()).map_err(|e| e.to_string())
}

pub fn password_matches(hash: &str, password: &str) -> bool {
    use argon2::PasswordVerifier;
    argon2::PasswordHash::new(hash)
        .is_ok_and(|h| argon2::Argon2::default().verify_password(password.as_bytes(), &h).is_ok())
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claims {
    pub id: String,
    pub collection_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub refreshable: bool,
    pub exp: i64,
}

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

fn signature(secret: &str, token_key: &str, signing_input: &str) -> Vec<u8> {
    // Any key length is valid for HMAC, so this cannot fail.
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(format!("{token_key}{secret}").as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts keys of any length"));
    mac.update(signing_input.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// Issues a token for `user_id`, valid until `now + TOKEN_SECONDS`.
pub fn issue(secret: &str, token_key: &str, user_id: &str, now: jiff::Timestamp) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let claims = Claims {
        id: user_id.to_owned(),
        collection_id: a2app_definition::schema::collection_id(ENTITY),
        kind: "auth".into(),
        refreshable: true,
        exp: now.as_second() + TOKEN_SECONDS,
    };
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap_or_default());
    let input = format!("{header}.{payload}");
    let sig = URL_SAFE_NO_PAD.encode(signature(secret, token_key, &input));
    format!("{input}.{sig}")
}

/// Reads a token's claims without trusting them (to find whose key signs it).
pub fn peek(token: &str) -> Option<Claims> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}

/// Verifies signature, type and expiry; returns the claims.
pub fn verify(secret: &str, token_key: &str, token: &str, now: jiff::Timestamp) -> Option<Claims> {
    let (input, sig) = token.rsplit_once('.')?;
    let header: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(input.split('.').next()?).ok()?).ok()?;
    if header["alg"] != "HS256" {
        return None;
    }
    let given = URL_SAFE_NO_PAD.decode(sig).ok()?;
    let mut mac = <HmacSha256 as KeyInit>::new_from_slice(format!("{token_key}{secret}").as_bytes()).ok()?;
    mac.update(input.as_bytes());
    mac.verify_slice(&given).ok()?;
    let claims = peek(token)?;
    (claims.kind == "auth" && claims.exp > now.as_second()).then_some(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_verify_until_they_expire_or_the_key_rotates() {
        let now: jiff::Timestamp = "2026-07-30T09:00:00Z".parse().unwrap();
        let token = issue("secret", "key1", "u1", now);
        assert_eq!(verify("secret", "key1", &token, now).map(|c| c.id), Some("u1".into()));
        assert_eq!(peek(&token).map(|c| c.collection_id), Some(a2app_definition::schema::collection_id("users")));
        assert!(verify("secret", "key2", &token, now).is_none(), "a rotated key revokes");
        assert!(verify("other", "key1", &token, now).is_none());
        let later = now.checked_add(jiff::SignedDuration::from_secs(TOKEN_SECONDS)).unwrap();
        assert!(verify("secret", "key1", &token, later).is_none(), "expired");
        let mut forged = token.clone();
        forged.push('x');
        assert!(verify("secret", "key1", &forged, now).is_none());
        assert!(verify("secret", "key1", "not.a.token", now).is_none());
    }

    #[test]
    fn passwords_hash_and_match() {
        let hash = hash_password("correct horse").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(password_matches(&hash, "correct horse"));
        assert!(!password_matches(&hash, "wrong horse"));
        assert!(!password_matches("garbage", "x"));
    }
}
