//! An index entry: a public card and the proof that its publisher lists it.
//!
//! One of three separate things a host keeps (the protocol's "app entry",
//! "index entry" and "user connection"): it holds no settings, sign-in or
//! token, belongs to no account, and is never read to reach an app a person
//! added. The card URL is its identity; two cards with one name are two
//! entries.

use crate::card::Card;
use serde::{Deserialize, Serialize};

/// How long a publisher's documents may fail to answer before its entry
/// goes: both this many failed checks in a row and this much time since the
/// first of them. One unreachable check is not a removal; a month of them is.
pub const REMOVE_AFTER_FAILURES: u32 = 5;
pub const REMOVE_AFTER_SECS: i64 = 7 * 24 * 60 * 60;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    /// The card's URL: the app's identity.
    pub card_url: String,
    /// The card URL's origin: who serves the card.
    pub origin: String,
    /// What the publisher says (unverified).
    pub card: Card,
    pub proof: Proof,
    /// When the entry was first indexed (unix seconds).
    pub indexed_at: i64,
    pub failures: Failures,
}

/// Where the publisher's own documents list the card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proof {
    pub source: Source,
    /// The catalog that lists the card.
    pub catalog: String,
    /// The last check that found it listed (unix seconds).
    pub checked_at: i64,
}

/// The three documents whose listing proves the publisher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// `/.well-known/ai-catalog.json` at the card's own origin.
    WellKnown,
    /// The catalog named by an `ai-catalog` `Link` header of the card's answer.
    CardLink,
    /// The catalog the page at the card's `websiteUrl` links (statically).
    WebsitePage,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::WellKnown => "well-known",
            Source::CardLink => "card-link",
            Source::WebsitePage => "website-page",
        }
    }

    pub fn parse(text: &str) -> Option<Source> {
        [Source::WellKnown, Source::CardLink, Source::WebsitePage].into_iter().find(|s| s.as_str() == text)
    }

    /// In words, for people.
    pub fn describe(self) -> &'static str {
        match self {
            Source::WellKnown => "the well-known catalog at the card's origin",
            Source::CardLink => "the catalog the card's Link header names",
            Source::WebsitePage => "the catalog linked from the card's website page",
        }
    }
}

/// Checks that could not reach the publisher's documents, since the last
/// one that did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct Failures {
    pub count: u32,
    /// The first failed check of this run of failures (unix seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl Failures {
    /// One more failed check at `now`; true when the entry should now go.
    pub fn add(&mut self, now: i64, why: &str) -> bool {
        self.count = self.count.saturating_add(1);
        let since = *self.since.get_or_insert(now);
        self.last_error = Some(why.chars().take(500).collect());
        self.count >= REMOVE_AFTER_FAILURES && now.saturating_sub(since) >= REMOVE_AFTER_SECS
    }
}

/// Unix seconds as RFC 3339 (UTC), for people and JSON.
pub fn time(secs: i64) -> String {
    jiff::Timestamp::from_second(secs).map(|t| t.to_string()).unwrap_or_else(|_| secs.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_goes_only_after_enough_failures_over_enough_time() {
        let mut f = Failures::default();
        let day = 24 * 60 * 60;
        // Five failures within a day: still kept.
        for i in 0..5 {
            assert!(!f.add(i * 60, "timeout"));
        }
        // Many more, but not yet a week since the first: kept.
        assert!(!f.add(6 * day, "timeout"));
        // A week after the first, with at least five: removed.
        assert!(f.add(7 * day, "timeout"));
        // A week of one failure is not enough either.
        let mut once = Failures::default();
        assert!(!once.add(0, "dns"));
        assert!(!once.add(30 * day, "dns"));
        assert_eq!(once.count, 2);
        assert_eq!(once.since, Some(0));
    }
}
