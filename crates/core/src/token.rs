//! The agent token: the loopback write credential in `.agent-token`.
//!
//! Created at launch with mode 0600 when missing. Handing it to an agent is a
//! deliberate act; it is never served to a browser.

use std::io::Write;
use std::path::Path;

/// Reads the token, creating it first when missing.
pub fn ensure(path: &Path) -> std::io::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
        Ok(_) => rotate(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => rotate(path),
        Err(e) => Err(e),
    }
}

/// Writes a fresh token (owner read/write only) and returns it.
pub fn rotate(path: &Path) -> std::io::Result<String> {
    let token = a2app_definition::secret::agent_token();
    let tmp = path.with_extension("tmp");
    {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&tmp)?;
        file.write_all(token.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    #[test]
    fn ensure_creates_once_with_owner_only_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".agent-token");
        let a = super::ensure(&path).unwrap();
        let b = super::ensure(&path).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.len(), 44);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        }
        let c = super::rotate(&path).unwrap();
        assert_ne!(a, c);
    }
}
