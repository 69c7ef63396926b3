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
}

/// A signed-in user of a multi-user app (who the caller acts as).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub id: String,
    /// The user's record, as `@request.auth.*` sees it.
    pub record: Map<String, Value>,
}

/// A caller: how it may write, who it acts as, and the self-asserted agent
/// name used for attribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub kind: CallerKind,
    pub agent: Option<String>,
    pub user: Option<User>,
}

impl CallerKind {
    /// The name used in receipts and `whoami`.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallerKind::OwnUi => "own_ui",
            CallerKind::Agent => "agent",
            CallerKind::Anonymous => "anonymous",
        }
    }
}

impl Caller {
    pub fn anonymous() -> Caller {
        Caller { kind: CallerKind::Anonymous, agent: None, user: None }
    }

    pub fn agent(name: Option<String>) -> Caller {
        Caller { kind: CallerKind::Agent, agent: name, user: None }
    }
}

impl Caller {
    /// The app's owner: the agent token acting as nobody in particular. Like a
    /// PocketBase superuser, the owner is not bound by per-entity rules.
    pub fn is_owner(&self) -> bool {
        self.kind == CallerKind::Agent && self.user.is_none()
    }

    /// What `whoami` and receipts call this caller.
    pub fn label(&self) -> &'static str {
        if self.user.is_some() { "user" } else { self.kind.as_str() }
    }
}
