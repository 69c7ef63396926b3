//! The A2App wire vocabulary, shared by the server and the client.
//!
//! Everything here is plain data with serde derives: the field type vocabulary
//! (`schema`), the identity document (`identity`), the error-code table and the
//! error envelope (`error`), and the list page shape (`page`). This crate knows
//! nothing of HTTP servers, SQL or MCP; changing a type here is a contract change.

pub mod arguments;
pub mod calendar;
pub mod claim;
pub mod describe;
pub mod error;
pub mod grant;
pub mod identity;
pub mod operation;
pub mod page;
pub mod receipt;
pub mod request;
pub mod schema;
pub mod text;

pub use error::{ErrorBody, ErrorCode, Violation};

/// The contract version this implementation speaks (`protocol` in identity).
pub const PROTOCOL_VERSION: &str = "1.0";

/// The PocketBase release whose records API and filter dialect we reproduce.
pub const PB_VERSION: &str = "0.40.6";
