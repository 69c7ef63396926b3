//! What an app is, as its files say, and what a value must be to be stored.
//!
//! The app directory read and checked (`directory`, `config`, `schema`,
//! `operations`, `requests`, `presentation`), the guard that judges every
//! value before anything is stored (`guard`, `modifier`, `number`), the words
//! the app publishes (`describe`) and says of a write (`receipt`), and the one
//! error type every crate above refuses with (`error`). Pure: it reads the
//! app's files and nothing else; it knows no store, no HTTP, no clock but
//! the one it is handed (`clock`).

pub mod clock;
pub mod config;
pub mod datetime;
pub mod describe;
pub mod directory;
pub mod document;
pub mod error;
pub mod guard;
pub mod id;
pub mod modifier;
pub mod number;
pub mod operations;
pub mod presentation;
pub mod problem;
pub mod receipt;
pub mod record;
pub mod requests;
pub mod schedule;
pub mod schema;
pub mod secret;
pub mod users;

pub use config::{AppConfig, AuthMode};
pub use directory::{AppDefinition, load};
pub use error::Error;

/// Whether a filter fits the schema: `fits(schema, entity, filter, query)`
/// says what does not. The store's compiler is the judge (`a2app-store`); the
/// definition asks it of every rule and crud filter it reads, with `query`
/// standing for the values `@request.query.*` will hold.
pub type Fits = fn(
    &protocol::schema::Schema,
    &str,
    &a2app_filter::Expr,
    &serde_json::Map<String, serde_json::Value>,
) -> Result<(), a2app_filter::FilterError>;
