//! The describe document cached per origin, keyed by `schemaVersion`.
//!
//! Identity is fetched at every start anyway (the gate); when it names the
//! cached `schemaVersion`, describe costs no request. A new version replaces
//! the entry.

use crate::config::{ConfigDir, ConfigError};
use protocol::describe::Describe;
use serde::{Deserialize, Serialize};

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    schema_version: String,
    describe: Describe,
}

/// The cached document, if it is for `schema_version`.
pub fn load(config: &ConfigDir, origin: &str, schema_version: &str) -> Option<Describe> {
    // An unreadable or stale cache is a miss, never an error: the app is the source.
    let entry: Entry = config.read(&config.schema(origin)).ok().flatten()?;
    (entry.schema_version == schema_version).then_some(entry.describe)
}

pub fn store(config: &ConfigDir, origin: &str, describe: &Describe) -> Result<(), ConfigError> {
    let entry = Entry { schema_version: describe.schema_version.clone(), describe: describe.clone() };
    config.write(&config.schema(origin), &entry)
}

pub fn clear(config: &ConfigDir, origin: &str) {
    let _ = std::fs::remove_file(config.schema(origin));
}
