//! Who is calling: established by a transport, decided upon in core.

use serde_json::{Map, Value};

/// How the caller may write at all (the Origin rule's answer).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerKind {
    /// The app's own web UI, from its own loopback origin.
    OwnUi,
    /// A program holding the agent token.
    Agent,
    /// Nobody in particular: may read where reads are open, never write.
    Anonymous,
    /// An agent holding an access token of a grant a person approved: it may
    /// do what the grant's scopes allow, as the person it acts for.
    Grant,
}

/// What a grant caller holds: which grant, its scopes, and the token it
/// came with (a long-lived stream checks that it still holds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrantAccess {
    pub id: String,
    /// The fingerprint of the agent's key.
    pub fingerprint: String,
    pub scopes: std::collections::BTreeSet<protocol::grant::Scope>,
    /// The SHA-256 of the access token, and when it ends (wire form).
    pub token_hash: String,
    pub token_expires: String,
    /// The one resource the token was issued for (RFC 8707: an OAuth
    /// token names `<base>/mcp`); `None` for a signature's token, good for
    /// the whole app.
    pub audience: Option<String>,
}

/// A signed-in user of a multi-user app (who the caller acts as).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: String,
    /// The user's record, as `@request.auth.*` sees it.
    pub record: Map<String, Value>,
}

/// What filters and rules may read of a request besides who made it, as
/// PocketBase shows it: `@request.headers.*` (names lower-cased, `-` as `_`,
/// the first value of each) and `@request.query.*` (the first value of each
/// query parameter).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestParts {
    pub headers: Map<String, Value>,
    pub query: Map<String, Value>,
}

/// What a request means to do: read, or write (which needs more of a caller).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Intent {
    Read,
    Write,
}

/// A caller: how it may write, who it acts as, and the self-asserted agent
/// name used for attribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub kind: CallerKind,
    pub agent: Option<String>,
    pub user: Option<User>,
    /// Set for [`CallerKind::Grant`] only.
    pub grant: Option<std::sync::Arc<GrantAccess>>,
    /// The request's headers and query, when a filter or rule may read
    /// them (see `rules::reads_request_parts`); `None` reads as empty.
    pub request: Option<std::sync::Arc<RequestParts>>,
}

impl CallerKind {
    /// The name used in receipts and `whoami`.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallerKind::OwnUi => "own_ui",
            CallerKind::Agent => "agent",
            CallerKind::Anonymous => "anonymous",
            CallerKind::Grant => "grant",
        }
    }
}

impl Caller {
    pub fn anonymous() -> Caller {
        Caller { kind: CallerKind::Anonymous, agent: None, user: None, grant: None, request: None }
    }

    pub fn agent(name: Option<String>) -> Caller {
        Caller { kind: CallerKind::Agent, agent: name, user: None, grant: None, request: None }
    }
}

impl Caller {
    /// The app's owner: the agent token acting as nobody in particular. Like a
    /// PocketBase superuser, the owner is not bound by per-entity rules.
    pub fn is_owner(&self) -> bool {
        self.kind == CallerKind::Agent && self.user.is_none()
    }

    /// What `whoami` and receipts call this caller: `grant:<id>` for a
    /// grant, so every write it makes names the grant that allowed it.
    pub fn label(&self) -> String {
        match (&self.grant, &self.user) {
            (Some(grant), _) => format!("grant:{}", grant.id),
            (None, Some(_)) => "user".to_owned(),
            (None, None) => self.kind.as_str().to_owned(),
        }
    }

    /// Whether the caller may act within `scope`: every caller but a grant's
    /// (whose other limits are decided elsewhere), and a grant holding it.
    /// Writing an entity includes reading it: a write answers with the
    /// record as stored, read back, so a write-only grant would read anyway.
    pub fn holds(&self, scope: &protocol::grant::Scope) -> bool {
        use protocol::grant::Scope;
        self.grant.as_ref().is_none_or(|g| {
            g.scopes.contains(scope) || matches!(scope, Scope::Read(e) if g.scopes.contains(&Scope::Write(e.clone())))
        })
    }

    /// [`Self::holds`], or `insufficient_scope` naming the scope.
    pub fn require(&self, scope: protocol::grant::Scope) -> Result<(), a2app_definition::Error> {
        if self.holds(&scope) { Ok(()) } else { Err(a2app_definition::Error::InsufficientScope(scope.to_string())) }
    }
}
