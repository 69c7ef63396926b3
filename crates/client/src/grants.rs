//! Grants this client holds: a person's approval for this agent's key
//! (`agent_key`) to act at one app, within scopes, and the short-lived access
//! tokens a signature buys.
//!
//! A grant is kept per origin with the app id pinned when it was asked
//! (`grants.json`, mode 0600), so a new app on an old origin inherits
//! nothing. Only a grant this client has seen `active` is used. Its access
//! token is cached with its expiry, in memory and in the same file, and
//! traded for a new one when less than [`REFRESH_SECONDS`] remain or when
//! the app refuses it (`api` retries that request once).
//!
//! Where a grant stands among the other credentials is the session's call
//! (`session`): an explicit agent token comes first.

use crate::agent_key::AgentKey;
use crate::config::{ConfigDir, ConfigError};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use protocol::grant::{AccessToken, GrantStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Mutex;

/// A token with less than this many seconds left is traded for a new one
/// before use: the request still has to travel, and clocks differ.
pub const REFRESH_SECONDS: i64 = 60;

/// What signing takes from the world, given by the binary: this library
/// reads no clock and makes no randomness of its own.
#[derive(Clone, Copy)]
pub struct World {
    /// Unix seconds, now.
    pub now: fn() -> i64,
    /// 32 fresh random bytes: a new key's seed, a nonce.
    pub random: fn() -> [u8; 32],
}

/// A grant this client asked for, as it last saw it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Held {
    /// The app id pinned for the origin when the grant was asked.
    pub app_id: String,
    pub id: String,
    /// `pending` until this client saw it `active`; only an active one is used.
    pub status: GrantStatus,
    pub scopes: Vec<String>,
    pub agent: String,
    /// The fingerprint of the key it was asked with.
    pub fingerprint: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token: Option<Cached>,
}

impl Held {
    pub fn new(app_id: &str, grant: &protocol::grant::Grant) -> Held {
        Held {
            app_id: app_id.to_owned(),
            id: grant.id.clone(),
            status: grant.status,
            scopes: grant.scopes.clone(),
            agent: grant.agent.clone(),
            fingerprint: grant.fingerprint.clone(),
            token: None,
        }
    }
}

#[derive(Clone, PartialEq, Serialize, Deserialize)]
struct Cached {
    token: String,
    /// Unix seconds by this client's clock (now + `expiresIn` when traded):
    /// the app's own `expires` is on the app's clock, which may differ.
    expires: i64,
}

impl std::fmt::Debug for Cached {
    // Never print a token, even in a debug dump.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cached").field("token", &"…").field("expires", &self.expires).finish()
    }
}

type File = BTreeMap<String, Held>;

/// The grant held for `origin`, if it was asked of the app `app_id`.
pub fn held(config: &ConfigDir, origin: &str, app_id: &str) -> Result<Option<Held>, ConfigError> {
    let path = config.grants();
    let mut file: File = config.read(&path)?.unwrap_or_default();
    if exposed(&path) {
        // Others could read the file, so its cached tokens may have leaked:
        // they are dropped (the next call trades a fresh one) and the file is
        // written back for its owner only. The grants themselves are no
        // secret: using one takes the key.
        file.values_mut().for_each(|h| h.token = None);
        config.write(&path, &file)?;
    }
    Ok(file.get(origin).filter(|h| h.app_id == app_id).cloned())
}

/// Whether anyone but the owner may read `path`.
fn exposed(path: &std::path::Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o077 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// Keeps `held` for `origin`, replacing whatever was held there.
pub fn keep(config: &ConfigDir, origin: &str, held: &Held) -> Result<(), ConfigError> {
    let path = config.grants();
    let mut file: File = config.read(&path)?.unwrap_or_default();
    file.insert(origin.to_owned(), held.clone());
    config.write(&path, &file)
}

/// Forgets the grant held for `origin`; true if there was one.
pub fn forget(config: &ConfigDir, origin: &str) -> Result<bool, ConfigError> {
    config.remove_key::<Held>(&config.grants(), origin)
}

/// A nonce from 32 random bytes: 43 characters of `[A-Za-z0-9_-]`.
pub fn nonce(random: [u8; 32]) -> String {
    URL_SAFE_NO_PAD.encode(random)
}

/// The body that trades a signature for an access token: `key`'s signature
/// over `protocol::grant::token_message`, bound to this app, grant, time and nonce.
pub fn token_request(key: &AgentKey, app_id: &str, grant_id: &str, timestamp: i64, nonce: &str) -> Value {
    let message = protocol::grant::token_message(app_id, grant_id, timestamp, nonce);
    json!({"timestamp": timestamp, "nonce": nonce, "signature": key.sign(&message)})
}

/// An active grant a session acts with: signs for access tokens and keeps
/// the current one.
pub struct Access {
    config: ConfigDir,
    origin: String,
    app_id: String,
    grant_id: String,
    key: AgentKey,
    world: World,
    token: Mutex<Option<Cached>>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access").field("origin", &self.origin).field("grant", &self.grant_id).finish_non_exhaustive()
    }
}

impl Access {
    pub fn new(config: &ConfigDir, origin: &str, held: &Held, key: AgentKey, world: World) -> Access {
        Access {
            config: config.clone(),
            origin: origin.to_owned(),
            app_id: held.app_id.clone(),
            grant_id: held.id.clone(),
            key,
            world,
            token: Mutex::new(held.token.clone()),
        }
    }

    pub fn grant_id(&self) -> &str {
        &self.grant_id
    }

    /// The current token, unless it has less than [`REFRESH_SECONDS`] left.
    pub fn current(&self) -> Option<String> {
        let now = (self.world.now)();
        let token = self.token.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        token.as_ref().filter(|t| t.expires - now >= REFRESH_SECONDS).map(|t| t.token.clone())
    }

    /// A fresh signed trade, and the time it was signed at.
    pub fn sign(&self) -> (Value, i64) {
        let now = (self.world.now)();
        let nonce = nonce((self.world.random)());
        (token_request(&self.key, &self.app_id, &self.grant_id, now, &nonce), now)
    }

    /// Keeps a token traded at `signed_at`, for this run and the next ones.
    pub fn remember(&self, got: &AccessToken, signed_at: i64) {
        let seconds = i64::try_from(got.expires_in).unwrap_or(i64::MAX);
        let cached = Cached { token: got.token.clone(), expires: signed_at.saturating_add(seconds) };
        *self.token.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(cached.clone());
        self.store(Some(cached));
    }

    /// Drops `token` after the app refused it, so the next use trades anew.
    pub fn refused(&self, token: &str) {
        let mut current = self.token.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.as_ref().is_some_and(|t| t.token == token) {
            *current = None;
            drop(current);
            self.store(None);
        }
    }

    /// Writes the cached token beside the grant, if this client still holds
    /// that grant (a concurrent `grant revoke` may have forgotten it; this
    /// must not bring it back). A failed write only costs a trade next run.
    fn store(&self, token: Option<Cached>) {
        let path = self.config.grants();
        let Ok(Some(mut file)) = self.config.read::<File>(&path) else { return };
        let Some(entry) = file.get_mut(&self.origin).filter(|h| h.id == self.grant_id && h.app_id == self.app_id)
        else {
            return;
        };
        entry.token = token;
        let _ = self.config.write(&path, &file);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, VerifyingKey};
    use std::sync::atomic::{AtomicI64, Ordering};

    static NOW: AtomicI64 = AtomicI64::new(1_785_000_000);
    const WORLD: World = World { now: || NOW.load(Ordering::SeqCst), random: || [9; 32] };

    fn grant(status: GrantStatus) -> protocol::grant::Grant {
        protocol::grant::Grant {
            id: "g1234567890abcd".into(),
            agent: "a2app-cli".into(),
            public_key: String::new(),
            fingerprint: "0123456789abcdef".into(),
            scopes: vec!["data:cards:read".into()],
            status,
            acts_for: "owner".into(),
            created: String::new(),
            updated: String::new(),
            expires: String::new(),
            client: None,
            source: String::new(),
        }
    }

    #[test]
    fn the_trade_is_signed_over_the_servers_message() {
        let key = AgentKey::from_seed(&[3; 32]);
        let public: [u8; 32] = URL_SAFE_NO_PAD.decode(key.public_key()).unwrap().try_into().unwrap();
        let body = token_request(&key, "kanban", "g1234567890abcd", 1_785_000_000, &nonce([9; 32]));
        let nonce = body["nonce"].as_str().unwrap();
        assert_eq!(nonce.len(), 43);
        assert!(nonce.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(body["timestamp"], 1_785_000_000);
        let signature: [u8; 64] =
            URL_SAFE_NO_PAD.decode(body["signature"].as_str().unwrap()).unwrap().try_into().unwrap();
        // What the app verifies, exactly: its message, the key as sent, strict verification.
        let message = protocol::grant::token_message("kanban", "g1234567890abcd", 1_785_000_000, nonce);
        let verified = VerifyingKey::from_bytes(&public)
            .unwrap()
            .verify_strict(message.as_bytes(), &Signature::from_bytes(&signature));
        assert!(verified.is_ok());
    }

    #[test]
    fn kept_per_origin_and_app_id_and_tokens_are_refreshed_a_minute_early() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path().join("a2app"));
        let origin = "http://127.0.0.1:8090";
        keep(&config, origin, &Held::new("kanban", &grant(GrantStatus::Active))).unwrap();
        assert!(held(&config, origin, "not-kanban").unwrap().is_none(), "a new app inherits nothing");
        let got = held(&config, origin, "kanban").unwrap().unwrap();
        assert_eq!((got.id.as_str(), got.status), ("g1234567890abcd", GrantStatus::Active));

        let access = Access::new(&config, origin, &got, AgentKey::from_seed(&[3; 32]), WORLD);
        assert_eq!(access.current(), None);
        let (_, at) = access.sign();
        let token = AccessToken { token: "a2g_one".into(), expires_in: 900, expires: String::new() };
        access.remember(&token, at);
        assert_eq!(access.current().as_deref(), Some("a2g_one"));
        // The next run finds it in the file, never in plain sight of a debug dump.
        let again = held(&config, origin, "kanban").unwrap().unwrap();
        assert!(!format!("{again:?}").contains("a2g_one"));
        let next = Access::new(&config, origin, &again, AgentKey::from_seed(&[3; 32]), WORLD);
        assert_eq!(next.current().as_deref(), Some("a2g_one"));

        NOW.fetch_add(900 - REFRESH_SECONDS, Ordering::SeqCst);
        assert_eq!(next.current().as_deref(), Some("a2g_one"), "exactly a minute left still serves");
        NOW.fetch_add(1, Ordering::SeqCst);
        assert_eq!(next.current(), None, "less than a minute left: trade again");

        access.refused("a2g_other");
        assert!(held(&config, origin, "kanban").unwrap().unwrap().token.is_some(), "another token is not dropped");
        access.refused("a2g_one");
        assert!(held(&config, origin, "kanban").unwrap().unwrap().token.is_none());

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(config.grants()).unwrap().permissions().mode() & 0o777, 0o600);
        }
        assert!(forget(&config, origin).unwrap());
        // A token traded after the grant was forgotten does not bring it back.
        access.remember(&token, at);
        assert!(held(&config, origin, "kanban").unwrap().is_none());
    }

    /// A grants file others could read loses its cached tokens (they may have
    /// leaked) and is made the owner's only again; the grant stays.
    #[cfg(unix)]
    #[test]
    fn an_exposed_grants_file_drops_its_tokens_and_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path().join("a2app"));
        let origin = "http://127.0.0.1:8090";
        keep(&config, origin, &Held::new("kanban", &grant(GrantStatus::Active))).unwrap();
        let got = held(&config, origin, "kanban").unwrap().unwrap();
        let access = Access::new(&config, origin, &got, AgentKey::from_seed(&[4; 32]), WORLD);
        let (_, at) = access.sign();
        access.remember(&AccessToken { token: "a2g_two".into(), expires_in: 900, expires: String::new() }, at);
        assert!(held(&config, origin, "kanban").unwrap().unwrap().token.is_some());
        std::fs::set_permissions(config.grants(), std::fs::Permissions::from_mode(0o644)).unwrap();
        let after = held(&config, origin, "kanban").unwrap().unwrap();
        assert_eq!((after.id.as_str(), after.token.is_none()), ("g1234567890abcd", true));
        assert_eq!(std::fs::metadata(config.grants()).unwrap().permissions().mode() & 0o777, 0o600);
        assert!(!std::fs::read_to_string(config.grants()).unwrap().contains("a2g_two"));
    }
}
