//! The data both servers hold. Every record is a pure function of its index,
//! ids included, so ours (seeded through `a2app_core`) and PocketBase (seeded
//! into its database file) hold the same records, and the load generator can
//! pick existing ids without asking either server.
//!
//! Cards belong to lists in blocks of [`CARDS_PER_LIST`]: the indexed filter
//! `list = "…"` always matches about the same number of records, however large
//! the table grows, so its latency measures index use and nothing else.

use serde_json::{Map, Value, json};

/// Seeded cards per list.
pub const CARDS_PER_LIST: u64 = 50;
/// Seeded members (the targets of `cards.assignees`).
pub const MEMBERS: u64 = 10;

const PRIORITIES: [&str; 5] = ["none", "low", "medium", "high", "urgent"];
const LABELS: [&[&str]; 4] = [&[], &["bug"], &["feature", "docs"], &["chore"]];
const COLORS: [&str; 5] = ["gray", "blue", "green", "yellow", "red"];

/// splitmix64's finalizer: a bijection on u64, so distinct indexes give distinct ids.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A small deterministic generator for the load generator's random choices.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(mix(seed))
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }

    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A record id: a prefix letter and 14 base-36 characters of a mixed index
/// (15 characters of `[a-z0-9]`, the form both servers require).
fn record_id(prefix: char, salt: u64, index: u64) -> String {
    const DIGITS: &[u8] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut v = mix(index ^ (salt << 56));
    let mut tail = [b'0'; 14];
    for slot in tail.iter_mut().rev() {
        *slot = DIGITS[(v % 36) as usize];
        v /= 36;
    }
    let mut id = String::with_capacity(15);
    id.push(prefix);
    id.extend(tail.iter().map(|&b| b as char));
    id
}

pub fn card_id(index: u64) -> String {
    record_id('c', 1, index)
}

pub fn list_id(index: u64) -> String {
    record_id('l', 2, index)
}

pub fn member_id(index: u64) -> String {
    record_id('m', 3, index)
}

/// How many lists hold `cards` seeded cards.
pub fn lists_for(cards: u64) -> u64 {
    cards.div_ceil(CARDS_PER_LIST)
}

/// How many lists are full (hold exactly [`CARDS_PER_LIST`] seeded cards).
pub fn full_lists(cards: u64) -> u64 {
    cards / CARDS_PER_LIST
}

/// The seeded card at `index`, without its id.
pub fn card(index: u64) -> Map<String, Value> {
    let month = 1 + index % 12;
    let day = 1 + index % 28;
    let fields = json!({
        "title": format!("Card {index}"),
        "description": "Seeded by the benchmark.",
        "list": list_id(index / CARDS_PER_LIST),
        "due_date": format!("2026-{month:02}-{day:02} 09:30:00.000Z"),
        "due_day": format!("2026-{month:02}-{day:02}"),
        "priority": PRIORITIES[(index % 5) as usize],
        "labels": LABELS[(index % 4) as usize],
        "assignees": [member_id(index % MEMBERS)],
        "points": index % 101,
        "estimate": (index % 17) as f64 * 0.5,
        "done": index.is_multiple_of(3),
        "position": index % CARDS_PER_LIST,
        "meta": { "seq": index },
    });
    into_map(fields)
}

/// A card the create workload sends: valid, in an existing list.
pub fn new_card(seq: u64, list: u64) -> Map<String, Value> {
    into_map(json!({
        "title": format!("Bench card {seq}"),
        "description": "Created by the benchmark's load generator.",
        "list": list_id(list),
        "due_date": "2026-12-01 10:00:00.000Z",
        "priority": "high",
        "labels": ["bug", "docs"],
        "points": 3,
        "done": false,
    }))
}

/// The seeded list at `index`, without its id.
pub fn list(index: u64) -> Map<String, Value> {
    into_map(json!({
        "name": format!("List {index}"),
        "position": index,
        "color": COLORS[(index % 5) as usize],
    }))
}

/// The seeded member at `index`, without its id.
pub fn member(index: u64) -> Map<String, Value> {
    into_map(json!({
        "name": format!("Member {index}"),
        "email": format!("member{index}@example.com"),
        "website": format!("https://example.com/members/{index}"),
    }))
}

fn into_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_have_the_record_form_and_are_distinct() {
        let mut seen = HashSet::new();
        for i in 0..10_000 {
            for id in [card_id(i), list_id(i), member_id(i)] {
                assert_eq!(id.len(), 15);
                assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()), "{id}");
                assert!(seen.insert(id));
            }
        }
    }

    #[test]
    fn cards_fill_lists_in_blocks() {
        assert_eq!(lists_for(0), 0);
        assert_eq!(lists_for(1), 1);
        assert_eq!(lists_for(120), 3);
        assert_eq!(full_lists(120), 2);
        assert_eq!(card(49)["list"], Value::String(list_id(0)));
        assert_eq!(card(50)["list"], Value::String(list_id(1)));
    }
}
