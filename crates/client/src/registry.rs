//! The per-user registry of local apps: `agent-app serve` writes an entry when
//! it starts, so `a2app kanban` finds the app whatever port it got today.
//!
//! The registry is the client's own file. It records where the app's token
//! file is, and the token is sent only to the loopback URL registered with it,
//! and only after that URL identified as the registered app id.

use crate::config::{ConfigDir, ConfigError};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// One local app, as `agent-app serve` last announced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalApp {
    /// The app id (`app.toml` `id`); the registry's key.
    pub id: String,
    /// The display name.
    pub name: String,
    /// The URL it serves on, e.g. `http://127.0.0.1:8090`.
    pub url: String,
    /// Its `.agent-token` file: the loopback write credential.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_path: Option<PathBuf>,
}

/// Entries keyed by app id, in a stable (sorted) order on disk.
type Apps = std::collections::BTreeMap<String, LocalApp>;

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    #[serde(default)]
    apps: Apps,
}

/// Adds or replaces the entry for `app.id`.
pub fn register(config: &ConfigDir, app: LocalApp) -> Result<(), ConfigError> {
    let path = config.registry();
    let mut file: File = config.read(&path)?.unwrap_or_default();
    file.apps.insert(app.id.clone(), app);
    config.write(&path, &file)
}

/// Every registered app, sorted by id.
pub fn list(config: &ConfigDir) -> Result<Vec<LocalApp>, ConfigError> {
    let file: File = config.read(&config.registry())?.unwrap_or_default();
    Ok(file.apps.into_values().collect())
}

/// Finds an app by id, or else by display name (case-insensitive, exactly one).
pub fn lookup(config: &ConfigDir, name: &str) -> Result<Option<LocalApp>, ConfigError> {
    let apps = list(config)?;
    if let Some(app) = apps.iter().find(|a| a.id == name) {
        return Ok(Some(app.clone()));
    }
    let mut by_name = apps.into_iter().filter(|a| a.name.eq_ignore_ascii_case(name));
    Ok(match (by_name.next(), by_name.next()) {
        (Some(one), None) => Some(one),
        _ => None,
    })
}

/// The registered app serving at `origin`, if any.
pub fn at_origin(config: &ConfigDir, origin: &str) -> Result<Option<LocalApp>, ConfigError> {
    Ok(list(config)?
        .into_iter()
        .find(|a| reqwest::Url::parse(&a.url).map(|u| crate::address::origin(&u) == origin).unwrap_or(false)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_port_replaces_the_old_entry() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path());
        let app = |url: &str| LocalApp {
            id: "kanban".into(),
            name: "Kanban Board".into(),
            url: url.into(),
            token_path: None,
        };
        register(&config, app("http://127.0.0.1:8090")).unwrap();
        register(&config, app("http://127.0.0.1:9001")).unwrap();
        assert_eq!(list(&config).unwrap().len(), 1);
        assert_eq!(lookup(&config, "kanban").unwrap().unwrap().url, "http://127.0.0.1:9001");
        assert_eq!(lookup(&config, "kanban board").unwrap().unwrap().id, "kanban");
        assert_eq!(lookup(&config, "other").unwrap(), None);
        assert_eq!(at_origin(&config, "http://127.0.0.1:9001").unwrap().unwrap().id, "kanban");
    }
}
