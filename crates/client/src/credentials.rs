//! Which token to send to an origin, and where it came from.
//!
//! Precedence: the token the binary got from `A2APP_TOKEN` (one run), then the
//! credentials file keyed by origin (mode 0600), then, for a registered local
//! app, its own `.agent-token`. A credential is only ever sent to the origin it
//! is keyed by. There is no password exchange at all: a user's password is
//! never sent anywhere, least of all to a remote host.

use crate::config::{ConfigDir, ConfigError};
use crate::registry::LocalApp;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Source {
    /// `A2APP_TOKEN`, for this run.
    Env,
    /// The credentials file, for this origin.
    File,
    /// A local app's `.agent-token`.
    LocalApp { path: PathBuf },
    /// An active grant this client holds (`grants`): its access token, not
    /// an agent token. Chosen by `session`, never by [`resolve`].
    Grant { id: String },
    /// No credential: reads only.
    None,
}

#[derive(Clone, PartialEq)]
pub struct Credential {
    pub token: Option<String>,
    pub source: Source,
}

impl std::fmt::Debug for Credential {
    // Never print a token, even in a debug dump.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("token", &self.token.as_ref().map(|_| "…"))
            .field("source", &self.source)
            .finish()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Entry {
    token: String,
    /// The app's base URL as it was connected (with any path prefix), so the
    /// gateway can reach the app the token is for; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
}

type File = BTreeMap<String, Entry>;

/// Picks the credential for `origin`. `local` is the registered local app
/// already confirmed to be the one answering at `origin`.
pub fn resolve(
    config: &ConfigDir,
    origin: &str,
    env_token: Option<&str>,
    local: Option<&LocalApp>,
) -> Result<Credential, ConfigError> {
    if let Some(token) = env_token.map(str::trim).filter(|t| !t.is_empty()) {
        return Ok(Credential { token: Some(token.into()), source: Source::Env });
    }
    let file: File = config.read(&config.credentials())?.unwrap_or_default();
    if let Some(entry) = file.get(origin) {
        return Ok(Credential { token: Some(entry.token.clone()), source: Source::File });
    }
    if let Some(path) = local.and_then(|l| l.token_path.as_ref()) {
        match std::fs::read_to_string(path) {
            Ok(text) if !text.trim().is_empty() => {
                return Ok(Credential {
                    token: Some(text.trim().to_owned()),
                    source: Source::LocalApp { path: path.clone() },
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(ConfigError { path: path.clone(), source }),
        }
    }
    Ok(Credential { token: None, source: Source::None })
}

/// Stores a token for `origin`, the origin of the app at `url`, in the
/// credentials file (mode 0600). Storing one connects the app: `connected`
/// lists it.
pub fn save(config: &ConfigDir, origin: &str, url: &str, token: &str) -> Result<(), ConfigError> {
    let path = config.credentials();
    let mut file: File = config.read(&path)?.unwrap_or_default();
    file.insert(origin.into(), Entry { token: token.trim().into(), url: Some(url.trim_end_matches('/').into()) });
    config.write(&path, &file)
}

/// The base URLs of the apps a person connected by storing a token for them,
/// in the order of their origins: the remote apps the gateway drives besides the local ones. An
/// entry from before URLs were kept stands for its origin's root.
pub fn connected(config: &ConfigDir) -> Result<Vec<String>, ConfigError> {
    let file: File = config.read(&config.credentials())?.unwrap_or_default();
    Ok(file.into_iter().map(|(origin, entry)| entry.url.unwrap_or_else(|| origin_root(&origin))).collect())
}

/// `https://x:443` → `https://x`: the origin as a person writes it.
fn origin_root(origin: &str) -> String {
    for (scheme, port) in [("https://", ":443"), ("http://", ":80")] {
        if origin.starts_with(scheme)
            && let Some(root) = origin.strip_suffix(port)
        {
            return root.to_owned();
        }
    }
    origin.to_owned()
}

/// Removes the token for `origin`; true if there was one.
pub fn remove(config: &ConfigDir, origin: &str) -> Result<bool, ConfigError> {
    config.remove_key::<Entry>(&config.credentials(), origin)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_beats_file_beats_local_token_and_the_file_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path().join("a2app"));
        let origin = "http://127.0.0.1:8090";
        let token_path = dir.path().join(".agent-token");
        std::fs::write(&token_path, "local-token\n").unwrap();
        let local =
            LocalApp { id: "k".into(), name: "K".into(), url: origin.into(), token_path: Some(token_path.clone()) };

        let got = resolve(&config, origin, None, Some(&local)).unwrap();
        assert_eq!((got.token.as_deref(), got.source), (Some("local-token"), Source::LocalApp { path: token_path }));

        save(&config, origin, "http://127.0.0.1:8090/", "file-token").unwrap();
        assert_eq!(connected(&config).unwrap(), ["http://127.0.0.1:8090"]);
        let got = resolve(&config, origin, None, Some(&local)).unwrap();
        assert_eq!((got.token.as_deref(), got.source), (Some("file-token"), Source::File));

        let got = resolve(&config, origin, Some("env-token"), Some(&local)).unwrap();
        assert_eq!((got.token.as_deref(), got.source), (Some("env-token"), Source::Env));

        // Keyed by origin: another origin gets nothing from the file.
        let got = resolve(&config, "https://other.example:443", None, None).unwrap();
        assert_eq!(got.source, Source::None);

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(config.credentials()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(remove(&config, origin).unwrap());
        assert_eq!(resolve(&config, origin, None, None).unwrap().source, Source::None);
        assert!(connected(&config).unwrap().is_empty());
    }

    #[test]
    fn connected_apps_keep_their_path_and_old_entries_stand_for_the_origin_root() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path().join("a2app"));
        save(&config, "https://apps.example.com:443", "https://apps.example.com/kanban", "t1").unwrap();
        // A file written before URLs were kept.
        let mut file: File = config.read(&config.credentials()).unwrap().unwrap();
        file.insert("https://old.example:443".into(), Entry { token: "t2".into(), url: None });
        file.insert("http://other.example:8080".into(), Entry { token: "t3".into(), url: None });
        config.write(&config.credentials(), &file).unwrap();
        assert_eq!(
            connected(&config).unwrap(),
            ["http://other.example:8080", "https://apps.example.com/kanban", "https://old.example"]
        );
    }
}
