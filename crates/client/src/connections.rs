//! The remote apps a person added (`a2app add`, found through discovery),
//! keyed by origin like the pins and the credentials. Adding is its own step,
//! apart from signing in (`a2app URL login`) and from running anything: an
//! added app is reachable by the gateway for reads at once, and for writes
//! once a token is stored for it.

use crate::config::{ConfigDir, ConfigError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// The app's base URL.
    pub url: String,
    /// The app id its identity gave when it was added (and pinned).
    pub id: String,
    pub name: String,
    /// The MCP server card it was found by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub card: Option<String>,
}

type File = BTreeMap<String, Connection>;

/// Adds or replaces the connection of `origin`.
pub fn add(config: &ConfigDir, origin: &str, connection: Connection) -> Result<(), ConfigError> {
    let path = config.connections();
    let mut file: File = config.read(&path)?.unwrap_or_default();
    file.insert(origin.to_owned(), connection);
    config.write(&path, &file)
}

/// Every added app, in the order of their origins.
pub fn list(config: &ConfigDir) -> Result<Vec<Connection>, ConfigError> {
    let file: File = config.read(&config.connections())?.unwrap_or_default();
    Ok(file.into_values().collect())
}

/// Removes the connection of `origin`; true if there was one.
pub fn remove(config: &ConfigDir, origin: &str) -> Result<bool, ConfigError> {
    config.remove_key::<Connection>(&config.connections(), origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_connection_per_origin() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path().join("a2app"));
        let c = |url: &str| Connection { url: url.into(), id: "kanban".into(), name: "Kanban".into(), card: None };
        add(&config, "https://a.example:443", c("https://a.example/one")).unwrap();
        add(&config, "https://a.example:443", c("https://a.example/two")).unwrap();
        add(&config, "https://b.example:443", c("https://b.example")).unwrap();
        let urls: Vec<String> = list(&config).unwrap().into_iter().map(|c| c.url).collect();
        assert_eq!(urls, ["https://a.example/two", "https://b.example"]);
        assert!(remove(&config, "https://a.example:443").unwrap());
        assert!(!remove(&config, "https://a.example:443").unwrap());
        assert_eq!(list(&config).unwrap().len(), 1);
    }
}
