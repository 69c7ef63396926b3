//! Record ids: 15 characters of `[a-z0-9]`, as PocketBase makes them.
//!
//! Two kinds share that form. Random ids ([`generate`]) serve wherever an id
//! must not be guessed (approval keys, stored file names). Record and job ids
//! ([`ordered`]) lead with the time instead: each B-tree that indexes them
//! then takes a new id at its right edge rather than on a random leaf, so a
//! create dirties one page fewer per index keyed by id (the WAL writes those
//! pages, then the checkpoint copies them again).

use rand::RngExt;
use std::sync::Mutex;

pub const LEN: usize = 15;
/// The id alphabet, in byte order, so an ordered id's text sorts as its number does.
const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
/// The time part: milliseconds since [`EPOCH_MS`] in 8 digits (until 2113).
const TIME_LEN: usize = 8;
/// The rest: a random start, counted up within one millisecond.
const TAIL_LEN: usize = LEN - TIME_LEN;
/// 2024-01-01T00:00:00Z in Unix milliseconds.
const EPOCH_MS: u64 = 1_704_067_200_000;
/// The tail's range: 36^7.
const TAIL_RANGE: u64 = 36u64.pow(TAIL_LEN as u32);

/// A fresh random id (about 77 bits of entropy).
pub fn generate() -> String {
    let mut rng = rand::rng();
    (0..LEN).map(|_| DIGITS[rng.random_range(0..DIGITS.len())] as char).collect()
}

/// The last ordered id made: (milliseconds, tail).
static LAST: Mutex<(u64, u64)> = Mutex::new((0, 0));

/// A fresh id that sorts after every ordered id this process made before:
/// the milliseconds since 2024 in 8 digits, then 7 digits that start at a
/// random point in their lower half and count up while the millisecond
/// (or a clock that stepped back) stays the same.
pub fn ordered() -> String {
    let now = jiff::Timestamp::now().as_millisecond().max(0) as u64;
    let (ms, tail) = next(&LAST, now.saturating_sub(EPOCH_MS), || rand::rng().random_range(0..TAIL_RANGE / 2));
    let mut out = encode(ms, TIME_LEN);
    out.push_str(&encode(tail, TAIL_LEN));
    out
}

/// Moves `last` on to the id for `now` and returns it.
fn next(last: &Mutex<(u64, u64)>, now: u64, fresh: impl FnOnce() -> u64) -> (u64, u64) {
    let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
    *last = if now > last.0 {
        (now, fresh())
    } else if last.1 + 1 < TAIL_RANGE {
        (last.0, last.1 + 1)
    } else {
        // A whole tail used up in one millisecond: borrow the next one.
        (last.0 + 1, 0)
    };
    *last
}

/// `value` in base 36, `width` digits, zero-padded (the high digits beyond
/// `width` are dropped; the time part reaches them only after 2113).
fn encode(mut value: u64, width: usize) -> String {
    let mut digits = vec![b'0'; width];
    for d in digits.iter_mut().rev() {
        *d = DIGITS[(value % 36) as usize];
        value /= 36;
    }
    digits.into_iter().map(char::from).collect()
}

/// True when `id` has the record id form.
pub fn is_valid(id: &str) -> bool {
    id.len() == LEN && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_are_valid_and_distinct() {
        let a = generate();
        let b = generate();
        assert!(is_valid(&a) && is_valid(&b));
        assert_ne!(a, b);
        assert!(!is_valid("ABCDEFGHIJKLMNO"));
        assert!(!is_valid("abc"));
    }

    #[test]
    fn ordered_ids_are_valid_and_sort_in_the_order_they_were_made() {
        let ids: Vec<String> = (0..2_000).map(|_| ordered()).collect();
        assert!(ids.iter().all(|id| is_valid(id)), "{ids:?}");
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "not strictly increasing");
    }

    #[test]
    fn the_tail_counts_up_within_a_millisecond_and_after_the_clock_steps_back() {
        let last = Mutex::new((0, 0));
        assert_eq!(next(&last, 10, || 500), (10, 500));
        assert_eq!(next(&last, 10, || 7), (10, 501));
        assert_eq!(next(&last, 9, || 7), (10, 502), "a clock that stepped back");
        assert_eq!(next(&last, 11, || 7), (11, 7));
        *last.lock().expect("lock") = (11, TAIL_RANGE - 1);
        assert_eq!(next(&last, 11, || 7), (12, 0), "a used-up tail borrows the next millisecond");
        assert_eq!(next(&last, 12, || 7), (12, 1));
    }

    #[test]
    fn digits_are_base_36_in_byte_order() {
        assert_eq!(encode(0, 8), "00000000");
        assert_eq!(encode(35, 3), "00z");
        assert_eq!(encode(36, 3), "010");
        assert_eq!(TAIL_RANGE, 78_364_164_096);
        assert_eq!(encode(TAIL_RANGE - 1, TAIL_LEN), "zzzzzzz");
        // 2026-11-30 12:00 UTC, in milliseconds since 2024.
        let ms = 1_796_040_000_000 - EPOCH_MS;
        assert_eq!(encode(ms, TIME_LEN).len(), TIME_LEN);
        assert!(encode(ms, TIME_LEN) < encode(ms + 1, TIME_LEN));
    }
}
