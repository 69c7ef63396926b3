//! The command-line shells over the library crates. `agent-app` acts on an
//! app's files; it never talks to a remote app.

pub mod starter;
