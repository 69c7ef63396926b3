//! app.id pinned per origin on first contact.
//!
//! An origin that starts answering as a different app is refused, never
//! followed: requests to it would still "work", against something else.

use crate::config::{ConfigDir, ConfigError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Pin {
    /// Never seen: pinned now. The caller announces it.
    FirstContact,
    /// Seen before with this id.
    Known,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "{origin} now identifies as \"{now}\", but was pinned to \"{pinned}\"; refusing to operate a different app than the one this origin was known for"
)]
pub struct Changed {
    pub origin: String,
    pub pinned: String,
    pub now: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    app_id: String,
}

type File = BTreeMap<String, Entry>;

/// Compares `app_id` with the pin for `origin`, pinning it on first contact.
pub fn check(config: &ConfigDir, origin: &str, app_id: &str) -> Result<Result<Pin, Changed>, ConfigError> {
    let path = config.pins();
    let mut file: File = config.read(&path)?.unwrap_or_default();
    match file.get(origin) {
        Some(entry) if entry.app_id == app_id => Ok(Ok(Pin::Known)),
        Some(entry) => Ok(Err(Changed { origin: origin.into(), pinned: entry.app_id.clone(), now: app_id.into() })),
        None => {
            file.insert(origin.into(), Entry { app_id: app_id.into() });
            config.write(&path, &file)?;
            Ok(Ok(Pin::FirstContact))
        }
    }
}

/// Pins `app_id` for `origin` whatever was pinned before. Only for a local
/// app addressed by name: the registry, written by `agent-app serve` from the
/// app's own files on this machine, vouches for the id, and local ports are
/// reused by other apps all the time.
pub fn repin(config: &ConfigDir, origin: &str, app_id: &str) -> Result<Pin, ConfigError> {
    let path = config.pins();
    let mut file: File = config.read(&path)?.unwrap_or_default();
    let before = file.insert(origin.into(), Entry { app_id: app_id.into() });
    match before {
        Some(entry) if entry.app_id == app_id => Ok(Pin::Known),
        Some(_) => {
            config.write(&path, &file)?;
            Ok(Pin::Known)
        }
        None => {
            config.write(&path, &file)?;
            Ok(Pin::FirstContact)
        }
    }
}

/// Forgets the pin (and so accepts whatever the origin says next time).
pub fn forget(config: &ConfigDir, origin: &str) -> Result<bool, ConfigError> {
    config.remove_key::<Entry>(&config.pins(), origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_on_first_contact_and_refuses_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path());
        let o = "https://kanban.example.com:443";
        assert_eq!(check(&config, o, "kanban").unwrap(), Ok(Pin::FirstContact));
        assert_eq!(check(&config, o, "kanban").unwrap(), Ok(Pin::Known));
        let changed = check(&config, o, "not-kanban").unwrap().unwrap_err();
        assert_eq!(changed.pinned, "kanban");
        assert_eq!(check(&config, "http://127.0.0.1:8090", "not-kanban").unwrap(), Ok(Pin::FirstContact));
        assert!(forget(&config, o).unwrap());
        assert_eq!(check(&config, o, "not-kanban").unwrap(), Ok(Pin::FirstContact));
    }
}
