//! The public App Index: a crawler that finds published apps (AI Catalogs
//! and MCP Server Cards), keeps a card only on its publisher's own proof and
//! drops it when the publisher does, and a search over what it kept.
//!
//! It must not hold or send any user's data or credential, reach an address
//! discovery would refuse, or mix its entries with a person's connections: it
//! is its own store, and nothing that reaches an app a person added reads it.
//! Everything fetched is hostile: bounded, never executed, never a panic.
//!
//! `robots` (RFC 9309) and `hosts` (per-host pacing, robots.txt before every
//! hop, `a2app_client::discovery`'s guarded fetches) are the crawler's manners;
//! `card` and `catalog` read the publisher's documents; `proof` decides
//! whether they prove the publisher; `crawl` runs seeds and rechecks into
//! `store` (SQLite, FTS5) as `entry` rows; `search` and `serve` answer queries.

pub mod card;
pub mod catalog;
pub mod clock;
pub mod crawl;
pub mod entry;
pub mod hosts;
pub mod proof;
pub mod robots;
pub mod search;
pub mod serve;
pub mod store;

/// The product token of the crawler's User-Agent, the one robots.txt names.
pub const TOKEN: &str = "OpenBot";

/// Where a publisher reads about the crawler (in its User-Agent).
pub const CONTACT: &str = "https://github.com/a2app/a2app/blob/main/docs/decisions/0106-app-index.md";

/// The crawler's User-Agent: `OpenBot/<version> (+<contact>)`.
pub fn user_agent(contact: &str) -> String {
    format!("{TOKEN}/{} (+{contact})", env!("CARGO_PKG_VERSION"))
}

/// The file name of the index in the client's config directory.
pub const FILE: &str = "index.sqlite";

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("the index store: {0}")]
    Store(#[from] rusqlite::Error),
    #[error("the index store holds a row this version cannot read: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Io(String),
    #[error("the crawler cannot start: {0}")]
    Setup(String),
}
