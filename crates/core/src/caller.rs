//! Who is calling: established by a transport, decided upon in core.

/// The kind of caller, as `whoami` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallerKind {
    /// The app's own web UI, from its own loopback origin.
    OwnUi,
    /// A program holding the agent token.
    Agent,
    /// A signed-in user of a multi-user app.
    User { id: String },
    /// Nobody in particular (reads on a single-user app).
    Anonymous,
}

/// A caller: its kind and the self-asserted agent name used for attribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub kind: CallerKind,
    pub agent: Option<String>,
}

impl CallerKind {
    /// The name used in receipts and `whoami`.
    pub fn as_str(&self) -> &'static str {
        match self {
            CallerKind::OwnUi => "own_ui",
            CallerKind::Agent => "agent",
            CallerKind::User { .. } => "user",
            CallerKind::Anonymous => "anonymous",
        }
    }
}

impl Caller {
    pub fn anonymous() -> Caller {
        Caller { kind: CallerKind::Anonymous, agent: None }
    }

    pub fn agent(name: Option<String>) -> Caller {
        Caller { kind: CallerKind::Agent, agent: name }
    }
}
