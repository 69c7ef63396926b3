//! The agent's own Ed25519 keypair: its name at every app it asks for a grant.
//!
//! One key per config directory, made on first need and kept in `agent-key`
//! (the 32-byte secret seed, base64url, mode 0600). The secret never leaves
//! this module: callers get the public key, its fingerprint and signatures,
//! and neither `Debug` nor any error prints it. The seed comes from the
//! caller, since this library takes no randomness or clock of its own.

use crate::config::{ConfigDir, ConfigError};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signer, SigningKey};
use sha2::{Digest, Sha256};

pub struct AgentKey(SigningKey);

impl std::fmt::Debug for AgentKey {
    // Only what is public: a debug dump must never carry the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentKey").field("fingerprint", &self.fingerprint()).finish_non_exhaustive()
    }
}

impl AgentKey {
    pub fn from_seed(seed: &[u8; 32]) -> AgentKey {
        AgentKey(SigningKey::from_bytes(seed))
    }

    /// The key kept in `config`, if one was made.
    pub fn load(config: &ConfigDir) -> Result<Option<AgentKey>, ConfigError> {
        let path = config.agent_key();
        let err = |kind, why: &str| ConfigError { path: path.clone(), source: std::io::Error::new(kind, why) };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(ConfigError { path, source }),
        };
        #[cfg(unix)]
        {
            // Like ssh with a private key: a secret others could read is no
            // longer this agent's alone, so it is refused, not used.
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).map_err(|source| ConfigError { path: path.clone(), source })?;
            if mode.permissions().mode() & 0o077 != 0 {
                return Err(err(
                    std::io::ErrorKind::PermissionDenied,
                    "the agent's secret key is readable by others; make it private (chmod 600) or remove it to make a new one",
                ));
            }
        }
        let seed: [u8; 32] = URL_SAFE_NO_PAD
            .decode(text.trim())
            .ok()
            .and_then(|bytes| bytes.try_into().ok())
            .ok_or_else(|| err(std::io::ErrorKind::InvalidData, "not a 32-byte Ed25519 seed in base64url"))?;
        Ok(Some(AgentKey::from_seed(&seed)))
    }

    /// The key kept in `config`, made from `seed()` when there is none yet.
    pub fn load_or_create(config: &ConfigDir, seed: impl FnOnce() -> [u8; 32]) -> Result<AgentKey, ConfigError> {
        if let Some(key) = AgentKey::load(config)? {
            return Ok(key);
        }
        let text = format!("{}\n", URL_SAFE_NO_PAD.encode(seed()));
        // Another process may have made one meanwhile: then theirs is the key.
        config.create_once(&config.agent_key(), text.as_bytes())?;
        AgentKey::load(config)?.ok_or_else(|| ConfigError {
            path: config.agent_key(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "the agent key vanished as it was made"),
        })
    }

    /// The 32-byte public key, base64url without padding (how an app takes it).
    pub fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.0.verifying_key().as_bytes())
    }

    /// The first 16 hex digits of the public key's SHA-256: what the app shows
    /// the person approving, to compare with what the agent printed.
    pub fn fingerprint(&self) -> String {
        Sha256::digest(self.0.verifying_key().as_bytes()).iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// The Ed25519 signature of `message`'s UTF-8 bytes, base64url without padding.
    pub fn sign(&self, message: &str) -> String {
        URL_SAFE_NO_PAD.encode(self.0.sign(message.as_bytes()).to_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signature, VerifyingKey};

    #[test]
    fn a_signature_verifies_strictly_with_the_public_key_as_sent() {
        let key = AgentKey::from_seed(&[7; 32]);
        let message = protocol::grant::token_message("kanban", "abcdefghij12345", 1_785_000_000, "n0nce-n0nce-n0nce");
        let public: [u8; 32] = URL_SAFE_NO_PAD.decode(key.public_key()).unwrap().try_into().unwrap();
        let signature: [u8; 64] = URL_SAFE_NO_PAD.decode(key.sign(&message)).unwrap().try_into().unwrap();
        let verifying = VerifyingKey::from_bytes(&public).unwrap();
        let signature = Signature::from_bytes(&signature);
        assert!(verifying.verify_strict(message.as_bytes(), &signature).is_ok());
        // Bound to every part of the message: another app, grant, time or nonce fails.
        for other in [
            protocol::grant::token_message("other", "abcdefghij12345", 1_785_000_000, "n0nce-n0nce-n0nce"),
            protocol::grant::token_message("kanban", "abcdefghij12346", 1_785_000_000, "n0nce-n0nce-n0nce"),
            protocol::grant::token_message("kanban", "abcdefghij12345", 1_785_000_001, "n0nce-n0nce-n0nce"),
            protocol::grant::token_message("kanban", "abcdefghij12345", 1_785_000_000, "n0nce-n0nce-n0ncf"),
        ] {
            assert!(verifying.verify_strict(other.as_bytes(), &signature).is_err(), "{other}");
        }
        // RFC 8032, section 7.1, test 1: the seed, its public key, the signature of "".
        let seed = hex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
        let rfc = AgentKey::from_seed(&seed.try_into().unwrap());
        assert_eq!(
            URL_SAFE_NO_PAD.decode(rfc.public_key()).unwrap(),
            hex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
        );
        assert_eq!(
            URL_SAFE_NO_PAD.decode(rfc.sign("")).unwrap(),
            hex(
                "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
            )
        );
    }

    #[test]
    fn the_fingerprint_is_the_first_16_hex_digits_of_the_keys_sha256() {
        let key = AgentKey::from_seed(&[7; 32]);
        let public = URL_SAFE_NO_PAD.decode(key.public_key()).unwrap();
        let full: String = Sha256::digest(&public).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(key.fingerprint(), full[..16]);
        assert!(!format!("{key:?}").contains(&URL_SAFE_NO_PAD.encode([7; 32])));
    }

    #[test]
    fn made_once_private_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path().join("a2app"));
        assert!(AgentKey::load(&config).unwrap().is_none());
        let made = AgentKey::load_or_create(&config, || [1; 32]).unwrap();
        let again = AgentKey::load_or_create(&config, || [2; 32]).unwrap();
        assert_eq!(made.fingerprint(), again.fingerprint());
        assert_eq!(made.fingerprint(), AgentKey::from_seed(&[1; 32]).fingerprint());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let path = config.agent_key();
            assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
            let refused = AgentKey::load(&config).unwrap_err();
            assert_eq!(refused.source.kind(), std::io::ErrorKind::PermissionDenied);
        }
    }

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
    }
}
