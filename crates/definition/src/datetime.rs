//! The wire forms of time: PocketBase's datetime and the day key.
//!
//! Stored and sent datetimes are always `YYYY-MM-DD HH:MM:SS.mmmZ` in UTC, so
//! they sort and compare correctly as text (PocketBase compares them as text).

use jiff::Timestamp;
use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;

/// Formats an instant in the wire form, millisecond precision, UTC.
pub fn format(ts: Timestamp) -> String {
    ts.strftime("%Y-%m-%d %H:%M:%S%.3fZ").to_string()
}

/// Parses any ISO 8601 date or datetime an author or agent may send:
/// `2026-07-30`, `2026-07-30 10:00:00.000Z`, `2026-07-30T10:00:00+02:00`,
/// and a zone-less datetime (read as UTC, as PocketBase does).
/// Relative words and numbers are not dates; they return `None`.
pub fn parse(text: &str) -> Option<Timestamp> {
    let text = text.trim();
    if text.len() < 10 || !text.as_bytes()[..4].iter().all(u8::is_ascii_digit) {
        return None;
    }
    if text.len() == 10 {
        let date: Date = text.parse().ok()?;
        return TimeZone::UTC.to_timestamp(DateTime::from(date)).ok();
    }
    if let Ok(ts) = text.parse::<Timestamp>() {
        return Some(ts);
    }
    // jiff's Timestamp needs an offset; a `Z` after a space-separated time is
    // PocketBase's own form and is covered above. What is left is zone-less.
    let naive = text.strip_suffix('Z').unwrap_or(text);
    let dt: DateTime = naive.parse().ok()?;
    TimeZone::UTC.to_timestamp(dt).ok()
}

/// A day key is exactly `YYYY-MM-DD` and a real calendar date.
pub fn is_day_key(text: &str) -> bool {
    text.len() == 10 && text.as_bytes()[4] == b'-' && text.as_bytes()[7] == b'-' && text.parse::<Date>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_iso_form_to_the_wire_form() {
        let rows = [
            ("2026-07-30", "2026-07-30 00:00:00.000Z"),
            ("2026-07-30 10:00:00.000Z", "2026-07-30 10:00:00.000Z"),
            ("2026-07-30 10:00:00Z", "2026-07-30 10:00:00.000Z"),
            ("2026-07-30T10:00:00Z", "2026-07-30 10:00:00.000Z"),
            ("2026-07-30T12:00:00+02:00", "2026-07-30 10:00:00.000Z"),
            ("2026-07-30T10:00:00.1234Z", "2026-07-30 10:00:00.123Z"),
            ("2026-07-30 10:00:00", "2026-07-30 10:00:00.000Z"),
            ("2026-07-30T10:00", "2026-07-30 10:00:00.000Z"),
        ];
        for (input, want) in rows {
            assert_eq!(parse(input).map(format).as_deref(), Some(want), "{input}");
        }
    }

    #[test]
    fn refuses_what_is_not_a_date() {
        for input in ["tomorrow", "not-a-date", "1700000000", "2026-02-30", "2026-13-01", "", "2026-07-30X"] {
            assert_eq!(parse(input), None, "{input}");
        }
    }

    #[test]
    fn day_keys_are_strict() {
        assert!(is_day_key("2026-07-31"));
        for bad in ["2026-7-31", "2026-02-30", "31-07-2026", "2026-07-31T00:00:00Z", "tomorrow"] {
            assert!(!is_day_key(bad), "{bad}");
        }
    }
}
