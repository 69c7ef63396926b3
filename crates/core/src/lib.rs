//! The a2app runtime: everything an app does, independent of any transport.
//!
//! `core` owns the app definition (`app`, `schema`), the guard (`guard`), the
//! filter grammar (`filter`), the records read and write paths (`records`),
//! the app's verbs (`operations`, `jobs`, `schedule`),
//! the realtime change feed (`realtime`) and storage (`store`, the only module
//! that contains SQL). It does not know HTTP, axum, JSON-RPC or MCP: the
//! server's handlers and MCP tools are thin adapters over the functions here.

pub mod access;
pub mod app;
pub mod approvals;
pub mod audit;
pub mod auth;
pub mod caller;
pub mod clock;
pub mod datetime;
pub mod describe;
pub mod document;
pub mod error;
pub mod files;
pub mod filter;
pub mod grants;
pub mod guard;
pub mod id;
pub mod jobs;
pub mod limits;
pub mod modifier;
pub mod number;
pub mod oauth;
pub mod operations;
pub mod problem;
pub mod realtime;
pub mod receipt;
pub mod records;
pub mod requests;
pub mod rules;
pub mod schedule;
pub mod schema;
pub mod store;
pub mod surfaces;
pub mod token;
pub mod users;

pub use app::{App, AppDefinition, OpenOptions};
pub use error::Error;
