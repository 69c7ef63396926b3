//! Random secrets: the bodies of tokens and keys the app hands out or keeps.

use rand::RngExt;
use sha2::{Digest, Sha256};

const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// 40 random characters of `[A-Za-z0-9]` (about 238 bits): the body of a token.
pub fn secret() -> String {
    let mut rng = rand::rng();
    (0..40).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// A new random agent token (about 238 bits).
pub fn agent_token() -> String {
    format!("a2a_{}", secret())
}

/// The SHA-256 of a secret, in hex: all that is stored of a token, a code or
/// a claim's key, so a copy of the database holds none of them.
pub fn digest(key: &str) -> String {
    Sha256::digest(key.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}
