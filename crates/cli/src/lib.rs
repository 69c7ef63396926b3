//! The command-line shells over the library crates. `agent-app` acts on an
//! app's files and never talks to a remote app; `a2app` (module `a2app`)
//! drives an app by URL or local name and never reads an app's files.

pub mod a2app;
pub mod starter;

use std::path::PathBuf;

/// The client's config directory: `A2APP_CONFIG_DIR`, else the platform's
/// config directory + `a2app` (`$XDG_CONFIG_HOME/a2app` or `~/.config/a2app`
/// on Linux). Both binaries use it: `agent-app serve` registers there.
pub fn config_dir() -> Option<a2app_client::config::ConfigDir> {
    let dir = std::env::var_os("A2APP_CONFIG_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| dirs::config_dir().map(|d| d.join("a2app")))?;
    Some(a2app_client::config::ConfigDir::new(dir))
}

/// Unix seconds by this machine's clock (a grant's signing time); 0 for a
/// clock set before 1970, which the app then refuses as too far off.
pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// 24 random characters: an Idempotency-Key unique to one command or one
/// tool call, so the retries within it are recognized as one write.
pub fn fresh_key() -> String {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..24).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}
