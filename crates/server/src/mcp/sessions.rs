//! Whose each legacy-era MCP session is. rmcp keeps the sessions and knows
//! them only by id; an id seen in a log or a proxy's trace must not let
//! someone else end the session (`DELETE /mcp`) or speak in it. The gate
//! notes who opened each session and refuses any request in it from anyone
//! else, as if the session did not exist.

use a2app_core::caller::{Caller, CallerKind};
use std::collections::VecDeque;
use std::sync::Mutex;

/// Sessions remembered at most; past it, the oldest is forgotten (rmcp ends
/// idle ones long before so many are open).
const MAX_SESSIONS: usize = 10_000;

#[derive(Default)]
pub struct Sessions(Mutex<VecDeque<(String, String)>>);

/// Who a caller is, as far as owning a session goes: the kind of credential
/// and whose it is. The agent's name is attribution, not identity.
pub fn owner(caller: &Caller) -> String {
    let user = caller.user.as_ref().map(|u| u.id.as_str()).unwrap_or_default();
    let grant = caller.grant.as_ref().map(|g| g.id.as_str()).unwrap_or_default();
    let kind = match caller.kind {
        CallerKind::OwnUi => "own_ui",
        CallerKind::Agent => "agent",
        CallerKind::Anonymous => "anonymous",
        CallerKind::Grant => "grant",
    };
    format!("{kind}:{user}:{grant}")
}

impl Sessions {
    pub fn opened(&self, id: &str, owner: String) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() >= MAX_SESSIONS {
            all.pop_front();
        }
        all.push_back((id.to_owned(), owner));
    }

    /// Whether `owner` may speak in session `id`: it opened it, or the
    /// session is not one this server remembers (rmcp then answers for it).
    pub fn allows(&self, id: &str, owner: &str) -> bool {
        let all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        all.iter().find(|(s, _)| s == id).is_none_or(|(_, o)| o == owner)
    }

    pub fn ended(&self, id: &str) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).retain(|(s, _)| s != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_its_openers_alone() {
        let sessions = Sessions::default();
        let agent = owner(&Caller::agent(Some("bot".into())));
        let stranger = owner(&Caller::anonymous());
        sessions.opened("s-1", agent.clone());
        assert!(sessions.allows("s-1", &agent));
        assert_eq!(agent, owner(&Caller::agent(Some("another name".into()))), "the name is no identity");
        assert!(!sessions.allows("s-1", &stranger));
        assert!(sessions.allows("s-unknown", &stranger));
        sessions.ended("s-1");
        assert!(sessions.allows("s-1", &stranger));
    }
}
