//! The client's own directory: small JSON files it alone writes.
//!
//! Every file is written whole to a temporary sibling and renamed over the old
//! one, so a crash never leaves half a file, and with mode 0600 from the start,
//! since the credentials live here and the others say which apps a user runs.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

/// Where the client keeps its files (e.g. `~/.config/a2app`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigDir(PathBuf);

#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct ConfigError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl ConfigDir {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        ConfigDir(path.into())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn credentials(&self) -> PathBuf {
        self.0.join("credentials.json")
    }

    pub fn registry(&self) -> PathBuf {
        self.0.join("apps.json")
    }

    pub fn pins(&self) -> PathBuf {
        self.0.join("pins.json")
    }

    /// The person's consents to apps' requests (`consents`).
    pub fn consents(&self) -> PathBuf {
        self.0.join("consents.json")
    }

    /// Keys of the requests this client claimed, to answer them.
    pub fn claims(&self) -> PathBuf {
        self.0.join("claims.json")
    }

    /// The agent's Ed25519 secret seed (`agent_key`), one per config directory.
    pub fn agent_key(&self) -> PathBuf {
        self.0.join("agent-key")
    }

    /// The grants this client holds, per origin (`grants`).
    pub fn grants(&self) -> PathBuf {
        self.0.join("grants.json")
    }

    pub fn connections(&self) -> PathBuf {
        self.0.join("connections.json")
    }

    /// One file per origin; the origin is flattened to a safe file name.
    pub fn schema(&self, origin: &str) -> PathBuf {
        let name: String = origin.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        self.0.join("schemas").join(format!("{name}.json"))
    }

    /// Reads a JSON file; a missing file is `None`, an unreadable one an error.
    pub fn read<T: DeserializeOwned>(&self, path: &Path) -> Result<Option<T>, ConfigError> {
        let err = |source| ConfigError { path: path.to_owned(), source };
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| err(std::io::Error::new(std::io::ErrorKind::InvalidData, e))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(err(e)),
        }
    }

    /// Writes a JSON file atomically, readable by its owner only.
    /// Removes `key` from the JSON object map stored at `path`; true if it was there.
    pub fn remove_key<V: Serialize + DeserializeOwned>(&self, path: &Path, key: &str) -> Result<bool, ConfigError> {
        let mut map: std::collections::BTreeMap<String, V> = self.read(path)?.unwrap_or_default();
        let had = map.remove(key).is_some();
        if had {
            self.write(path, &map)?;
        }
        Ok(had)
    }

    pub fn write<T: Serialize>(&self, path: &Path, value: &T) -> Result<(), ConfigError> {
        let err = |source| ConfigError { path: path.to_owned(), source };
        let dir = path.parent().unwrap_or(&self.0);
        create_private_dir(dir).map_err(err)?;
        let bytes = serde_json::to_vec_pretty(value)
            .map_err(|e| err(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        write_private(&tmp, &bytes).map_err(err)?;
        std::fs::rename(&tmp, path).map_err(err)
    }
}

impl ConfigDir {
    /// Writes `bytes` to `path` unless a file is there already; true if this
    /// call created it. Written whole to a private temporary sibling first,
    /// then linked into place, which fails if `path` exists: of two processes
    /// creating the same file at once, one wins and the other reads the
    /// winner's, and nobody ever reads half a file.
    pub fn create_once(&self, path: &Path, bytes: &[u8]) -> Result<bool, ConfigError> {
        let err = |source| ConfigError { path: path.to_owned(), source };
        let dir = path.parent().unwrap_or(&self.0);
        create_private_dir(dir).map_err(err)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        write_private(&tmp, bytes).map_err(err)?;
        let linked = std::fs::hard_link(&tmp, path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(err(e)),
        }
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}
