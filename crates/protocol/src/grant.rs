//! Deployed identity: an agent's own keypair, a grant a person gives it, and
//! the scopes the grant carries.
//!
//! An agent names itself by an Ed25519 public key it generated (no registry:
//! identity is free). It asks an app for a grant with the scopes it wants; a
//! person approves or denies it; the agent then trades a signature for a
//! short-lived access token whenever it needs one. Scopes come from describe
//! (`data:<entity>:read`, `data:<entity>:write`, `op:<name>`), so what an
//! agent reads to learn the app is what the person is shown to consent to.

use serde::{Deserialize, Serialize};

/// The prefix of a grant's access token (`Authorization: Bearer a2g_…`).
pub const TOKEN_PREFIX: &str = "a2g_";

/// One permission a grant may carry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scope {
    /// List, view and follow (realtime) an entity's records.
    Read(String),
    /// Create, update and delete an entity's records.
    Write(String),
    /// Run one operation.
    Operation(String),
}

impl Scope {
    /// `data:<entity>:read`, `data:<entity>:write` or `op:<name>`; `None`
    /// for anything else.
    pub fn parse(text: &str) -> Option<Scope> {
        if let Some(name) = text.strip_prefix("op:") {
            return operation_name(name).then(|| Scope::Operation(name.to_owned()));
        }
        let rest = text.strip_prefix("data:")?;
        let (entity, access) = rest.rsplit_once(':')?;
        if !plain_name(entity) {
            return None;
        }
        match access {
            "read" => Some(Scope::Read(entity.to_owned())),
            "write" => Some(Scope::Write(entity.to_owned())),
            _ => None,
        }
    }

    /// The entity or operation the scope names.
    pub fn target(&self) -> &str {
        match self {
            Scope::Read(e) | Scope::Write(e) | Scope::Operation(e) => e,
        }
    }
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scope::Read(e) => write!(f, "data:{e}:read"),
            Scope::Write(e) => write!(f, "data:{e}:write"),
            Scope::Operation(o) => write!(f, "op:{o}"),
        }
    }
}

/// Entity names are identifiers: letters, digits and `_`.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 100 && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Operation names are what `operations.json` accepts: an identifier that may
/// also hold `.` and `-` (`archive-done`), so every operation has its scope.
fn operation_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 100 && name.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GrantStatus {
    /// Asked for; no person has decided yet.
    Pending,
    /// Approved: the key may trade signatures for access tokens.
    Active,
    /// A person said no.
    Denied,
    /// Taken back; its tokens stopped working at once.
    Revoked,
    /// Nobody decided in time.
    Expired,
}

impl GrantStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GrantStatus::Pending => "pending",
            GrantStatus::Active => "active",
            GrantStatus::Denied => "denied",
            GrantStatus::Revoked => "revoked",
            GrantStatus::Expired => "expired",
        }
    }

    pub fn parse(text: &str) -> Option<GrantStatus> {
        [Self::Pending, Self::Active, Self::Denied, Self::Revoked, Self::Expired]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// A grant as the app shows it (`/api/_a2app/grants/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub id: String,
    /// The name the agent gave itself: shown to the person, never trusted.
    pub agent: String,
    /// The agent's Ed25519 public key, base64url without padding.
    pub public_key: String,
    /// The first 16 hex digits of the key's SHA-256: what a person compares.
    pub fingerprint: String,
    /// What the agent asked for (and, once approved, holds).
    pub scopes: Vec<String>,
    pub status: GrantStatus,
    /// Whom the agent acts for: `user:<id>` in a multi-user app, `owner` in a
    /// single-user one; empty while pending.
    pub acts_for: String,
    pub created: String,
    pub updated: String,
    /// A pending grant expires unanswered at this time.
    pub expires: String,
    /// For a grant asked through OAuth (an MCP host signing in), the client
    /// that asked: it has no key, and its tokens come from `/oauth/token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<GrantClient>,
    /// Where the ask came from on the network (an address, or an IPv6 /64),
    /// so a person can tell a stranger's flood of asks from their own agent's
    /// and deny one source's asks at once; empty when not known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

/// The OAuth client behind a grant, as the person deciding is shown it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantClient {
    /// The `client_id` it registered with.
    pub id: String,
    /// The name it registered: shown to the person, never trusted.
    pub name: String,
    /// Where the person's browser returns after deciding.
    pub redirect_uri: String,
}

/// What trading a signature for a token answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccessToken {
    pub token: String,
    /// Seconds it is valid for from now.
    pub expires_in: u64,
    pub expires: String,
}

/// The bytes an agent signs to get an access token: bound to this app (its
/// pinned id), this grant, a time and a one-off nonce, so a signature is good
/// for one trade, at one app, for a few minutes.
pub fn token_message(app_id: &str, grant_id: &str, timestamp: i64, nonce: &str) -> String {
    format!("a2app-grant-token\n{app_id}\n{grant_id}\n{timestamp}\n{nonce}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_parse_and_print_back() {
        // Every name operations.json accepts has its scope (`.` and `-` too).
        for text in ["data:cards:read", "data:cards:write", "op:archive_done", "op:archive-done", "op:v2.sync"] {
            assert_eq!(Scope::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(Scope::parse("data:cards:read"), Some(Scope::Read("cards".into())));
        for bad in [
            "data:cards",
            "data:cards:delete",
            "op:",
            "data::read",
            "cards:read",
            "op:a b",
            "data:a/b:read",
            "data:a-b:read",
        ] {
            assert_eq!(Scope::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_signed_message_names_app_grant_time_and_nonce() {
        assert_eq!(token_message("kanban", "g1", 1700000000, "n1"), "a2app-grant-token\nkanban\ng1\n1700000000\nn1");
    }
}
