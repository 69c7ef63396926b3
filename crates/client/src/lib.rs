//! The A2App protocol client, shared by the `a2app` CLI and later transports.
//!
//! It never reads an app's files: everything it knows comes from the app's
//! URL. `gate` is the identity check every session starts with.

pub mod gate;

/// The contract versions this client speaks, exactly (not a major number).
pub const SUPPORTED_PROTOCOLS: &[&str] = &["1.0"];
