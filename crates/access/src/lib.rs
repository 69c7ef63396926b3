//! Identity and access: who a caller is and what it may do.
//!
//! A request's credentials become a [`caller::Caller`] (`access`: Host,
//! Origin, the agent token; `users`: a user's token; `grants`: an agent's own
//! key and its scopes; `oauth`: MCP hosts signing in), within the caller's
//! rate limit (`limits`); `rules` says what a caller may read and write of an
//! entity. Transports only establish who is calling; every decision is made
//! here, from an explicit caller value. No HTTP, no SQL (the store's).

pub mod access;
pub mod audit;
pub mod auth;
pub mod caller;
pub mod context;
pub mod grants;
pub mod limits;
pub mod oauth;
pub mod rules;
pub mod users;

pub use context::Context;
