//! The a2app runtime: everything an app does, independent of any transport.
//!
//! `core` owns the app definition (`app`, `schema`), the filter grammar
//! (`filter`), the records write and read paths (`records`), the realtime change
//! feed (`realtime`) and storage (`store`, the only module that contains SQL).
//! It does not know HTTP, axum, JSON-RPC or MCP: the server's handlers and MCP
//! tools are thin adapters that call the same functions here.

pub mod filter;
pub mod store;
