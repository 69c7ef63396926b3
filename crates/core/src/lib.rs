//! The a2app runtime: what an app does, independent of any transport.
//!
//! It ties the crates below it together: the app's definition and guard
//! (`a2app-definition`), its storage (`a2app-store`) and who may do what
//! (`a2app-access`), into a running [`App`] and the paths every transport
//! calls: records read and written (`records`), the app's verbs
//! (`operations`, `approvals`, `jobs`, `schedule`), the app-to-agent queue
//! (`requests`), A2UI surfaces (`surfaces`) and stored files (`files`). It
//! does not know HTTP, axum, JSON-RPC or MCP: the server's handlers and MCP
//! tools are thin adapters over the functions here.

pub mod app;
pub mod approvals;
pub mod claims;
pub mod files;
pub mod handlers;
pub mod jobs;
pub mod operations;
pub mod records;
pub mod refusals;
pub mod requests;
pub mod schedule;
pub mod surfaces;
pub mod token;

pub use app::{App, AppDefinition, OpenOptions};

// The crates the runtime stands on, under the names transports reach them
// by (`a2app_core::grants`): one dependency for a transport, and each name
// leads to the crate that owns it.
pub use a2app_access::{access, audit, auth, caller, grants, limits, oauth, rules, users};
pub use a2app_definition::{
    Error, clock, datetime, describe, document, error, guard, id, modifier, number, problem, receipt, record, schema,
};
pub use a2app_filter as filter;
pub use a2app_store::{self as store, realtime};
