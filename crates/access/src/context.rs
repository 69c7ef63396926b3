//! What identity and access read of an open app: its definition, its store,
//! its clock, the agent token, the rate limiter and the agent log.
//!
//! The runtime's `App` holds one and dereferences to it, so an `&App` is an
//! `&Context` wherever a function of this crate asks for one; nothing here
//! reaches the runtime's own parts (operations, jobs, the change feed).

use crate::audit::AgentLog;
use crate::limits::Limiter;
use a2app_definition::AppDefinition;
use a2app_definition::clock::Clock;
use a2app_store::Store;
use std::sync::Arc;

pub struct Context {
    pub definition: AppDefinition,
    pub store: Arc<dyn Store>,
    pub clock: Arc<dyn Clock>,
    /// The loopback write credential (`.agent-token`).
    pub agent_token: String,
    /// `logs/agent-actions.jsonl`.
    pub agent_log: AgentLog,
    pub limiter: Limiter,
    /// Whether a rule reads `@request.query.*` or `@request.headers.*`, so
    /// transports hand them on (`rules::reads_request_parts`), judged once.
    pub rules_read_request: bool,
}
