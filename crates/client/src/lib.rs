//! The A2App protocol client, shared by the `a2app` CLI and later transports
//! (the MCP gateway, discovery).
//!
//! It never reads an app's files: everything it knows about an app comes from
//! the app's URL. The only files it touches are its own, in the config
//! directory the caller passes in (`config`): the local app registry, the
//! credentials, the app.id pins, the schema cache, the agent's key and its grants. It reads no environment
//! variables and no clock; the binary resolves those and passes them down.
//!
//! A session starts with `session::connect`: address → identity `gate` →
//! `pins` → `credentials` (or a grant: `agent_key` signs for `grants`' access
//! tokens); then `api` makes typed calls, `cache` keeps the
//! describe document per `schemaVersion`, and `coerce` turns human input
//! ("tomorrow", "To Do") into values the app accepts.

pub mod address;
pub mod agent_key;
pub mod api;
pub mod cache;
pub mod coerce;
pub mod config;
pub mod connections;
pub mod consents;
pub mod credentials;
pub mod discovery;
pub mod display;
pub mod gate;
pub mod grants;
pub mod operations;
pub mod pins;
pub mod registry;
pub mod session;

/// The contract versions this client speaks, exactly (not a major number).
pub const SUPPORTED_PROTOCOLS: &[&str] = &["1.0"];

/// Installs ring as the process's TLS provider, once; later calls do nothing.
///
/// reqwest is built with `rustls-no-provider` (ring builds with a C compiler
/// alone; reqwest's default, aws-lc-rs, is a far larger C build), so every
/// process that builds a `reqwest::Client` must call this first or reqwest
/// panics. `api::Api::new` does; so do the test helpers that use reqwest.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
