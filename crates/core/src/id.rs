//! Record ids: 15 characters of `[a-z0-9]`, as PocketBase makes them.

use rand::RngExt;

pub const LEN: usize = 15;
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A fresh random id (about 77 bits of entropy).
pub fn generate() -> String {
    let mut rng = rand::rng();
    (0..LEN).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}

/// True when `id` has the record id form.
pub fn is_valid(id: &str) -> bool {
    id.len() == LEN && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let a = super::generate();
        let b = super::generate();
        assert!(super::is_valid(&a) && super::is_valid(&b));
        assert_ne!(a, b);
        assert!(!super::is_valid("ABCDEFGHIJKLMNO"));
        assert!(!super::is_valid("abc"));
    }
}
