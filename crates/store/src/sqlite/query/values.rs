//! Values that become bound parameters: datetime macros computed from the injected
//! clock, `@request.*` values, and the ISO 8601 literal normalisation (our one
//! deliberate divergence from PocketBase's string-compared dates).

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use rusqlite::types::Value;
use serde_json::Value as Json;

/// Every macro PocketBase 0.40.6 knows, for "unknown macro" messages.
pub(super) const MACROS: &[&str] = &[
    "@now",
    "@yesterday",
    "@tomorrow",
    "@todayStart",
    "@todayEnd",
    "@monthStart",
    "@monthEnd",
    "@yearStart",
    "@yearEnd",
    "@second",
    "@minute",
    "@hour",
    "@day",
    "@month",
    "@weekday",
    "@year",
];

/// The value of a datetime macro at `now` (UTC), or `None` for an unknown name.
/// Datetimes are wire-format strings, the parts are integers, as in PocketBase.
pub(super) fn macro_value(name: &str, now: Timestamp) -> Option<Value> {
    let utc = now.to_zoned_datetime(TimeZone::UTC).datetime();
    let day = utc.date();
    let text = |s: String| Some(Value::Text(s));
    let int = |n: i64| Some(Value::Integer(n));
    match name {
        "@now" => text(wire_datetime(utc)),
        // Out-of-range shifts cannot happen for any clock a server runs with; fall
        // back to `now` rather than fail.
        "@yesterday" => text(wire_timestamp(now.checked_sub(SignedDuration::from_hours(24)).unwrap_or(now))),
        "@tomorrow" => text(wire_timestamp(now.checked_add(SignedDuration::from_hours(24)).unwrap_or(now))),
        "@todayStart" => text(day_start(day)),
        "@todayEnd" => text(day_end(day)),
        "@monthStart" => text(day_start(day.first_of_month())),
        "@monthEnd" => text(day_end(day.last_of_month())),
        "@yearStart" => text(day_start(day.first_of_year())),
        "@yearEnd" => text(day_end(day.last_of_year())),
        "@second" => int(i64::from(utc.second())),
        "@minute" => int(i64::from(utc.minute())),
        "@hour" => int(i64::from(utc.hour())),
        "@day" => int(i64::from(utc.day())),
        "@month" => int(i64::from(utc.month())),
        "@weekday" => int(i64::from(utc.weekday().to_sunday_zero_offset())),
        "@year" => int(i64::from(utc.year())),
        _ => None,
    }
}

fn day_start(d: Date) -> String {
    format!("{:04}-{:02}-{:02} 00:00:00.000Z", d.year(), d.month(), d.day())
}

fn day_end(d: Date) -> String {
    format!("{:04}-{:02}-{:02} 23:59:59.999Z", d.year(), d.month(), d.day())
}

fn wire_timestamp(ts: Timestamp) -> String {
    wire_datetime(ts.to_zoned_datetime(TimeZone::UTC).datetime())
}

/// PocketBase's stored datetime form, `YYYY-MM-DD HH:MM:SS.mmmZ` (milliseconds truncated).
fn wire_datetime(dt: DateTime) -> String {
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}Z",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second(),
        dt.subsec_nanosecond() / 1_000_000
    )
}

/// The stored form of an ISO 8601 datetime written with a `T`
/// (`2026-07-30T12:00:00+02:00` → `2026-07-30 10:00:00.000Z`), or `None` when the
/// text is not one. A missing offset means UTC, as PocketBase's own parser assumes.
pub(super) fn normalize_iso_datetime(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    if bytes.len() < 16 || !matches!(bytes.get(10), Some(b'T' | b't')) {
        return None;
    }
    if let Ok(ts) = text.parse::<Timestamp>() {
        return Some(wire_timestamp(ts));
    }
    let civil = text.parse::<DateTime>().ok()?;
    Some(wire_timestamp(civil.to_zoned_datetime(TimeZone::UTC).ok()?.timestamp()))
}

/// A JSON value from the request as a bound parameter, the way PocketBase's driver
/// binds the Go value: strings as text, booleans as 0/1, numbers as numbers, arrays
/// and objects as their JSON text. `None` means SQL NULL.
pub(super) fn json_to_param(value: &Json) -> Option<Value> {
    match value {
        Json::Null => None,
        Json::Bool(b) => Some(Value::Integer(i64::from(*b))),
        Json::Number(n) => Some(match n.as_i64() {
            Some(i) => Value::Integer(i),
            None => Value::Real(n.as_f64().unwrap_or(0.0)),
        }),
        Json::String(s) => Some(Value::Text(s.clone())),
        other => Some(Value::Text(other.to_string())),
    }
}

/// Go's `cast.ToString` of a bound value, used where PocketBase turns a value into
/// text (LIKE patterns, `:lower`).
pub(super) fn param_to_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Integer(i) => i.to_string(),
        // Rust's float Display never uses an exponent, like Go's FormatFloat(f, 'f', -1).
        Value::Real(f) => format!("{f}"),
        Value::Text(s) => s.clone(),
        Value::Blob(b) => String::from_utf8_lossy(b).into_owned(),
    }
}

/// Looks `path` up in a JSON object: map keys, or array indexes for numeric segments.
pub(super) fn lookup<'a>(root: &'a serde_json::Map<String, Json>, path: &[&str]) -> Option<&'a Json> {
    let (first, rest) = path.split_first()?;
    let mut current = root.get(*first)?;
    for segment in rest {
        current = match current {
            Json::Object(map) => map.get(*segment)?,
            Json::Array(items) => items.get(segment.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macros_from_the_injected_clock() {
        // A Sunday, late in a leap-year February.
        let now: Timestamp = "2028-02-27T13:14:15.678Z".parse().expect("valid timestamp");
        let cases: &[(&str, Value)] = &[
            ("@now", Value::Text("2028-02-27 13:14:15.678Z".into())),
            ("@yesterday", Value::Text("2028-02-26 13:14:15.678Z".into())),
            ("@tomorrow", Value::Text("2028-02-28 13:14:15.678Z".into())),
            ("@todayStart", Value::Text("2028-02-27 00:00:00.000Z".into())),
            ("@todayEnd", Value::Text("2028-02-27 23:59:59.999Z".into())),
            ("@monthStart", Value::Text("2028-02-01 00:00:00.000Z".into())),
            ("@monthEnd", Value::Text("2028-02-29 23:59:59.999Z".into())),
            ("@yearStart", Value::Text("2028-01-01 00:00:00.000Z".into())),
            ("@yearEnd", Value::Text("2028-12-31 23:59:59.999Z".into())),
            ("@second", Value::Integer(15)),
            ("@minute", Value::Integer(14)),
            ("@hour", Value::Integer(13)),
            ("@day", Value::Integer(27)),
            ("@month", Value::Integer(2)),
            ("@weekday", Value::Integer(0)),
            ("@year", Value::Integer(2028)),
        ];
        for (name, expected) in cases {
            assert_eq!(macro_value(name, now).as_ref(), Some(expected), "{name}");
        }
        assert_eq!(cases.len(), MACROS.len());
        assert_eq!(macro_value("@later", now), None);
    }

    #[test]
    fn iso_datetimes_are_normalised() {
        let cases = [
            ("2026-07-30T10:00:00Z", Some("2026-07-30 10:00:00.000Z")),
            ("2026-07-30T12:00:00+02:00", Some("2026-07-30 10:00:00.000Z")),
            ("2026-07-30T10:00:00.1234Z", Some("2026-07-30 10:00:00.123Z")),
            ("2026-07-30T10:00:00", Some("2026-07-30 10:00:00.000Z")),
            ("2026-07-30T10:00", Some("2026-07-30 10:00:00.000Z")),
            ("2026-07-30", None),
            ("2026-07-30 10:00:00.000Z", None),
            ("2026-07-30T", None),
            ("2026-07-30Tnonsense!", None),
            ("not a date at all", None),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_iso_datetime(input).as_deref(), expected, "{input}");
        }
    }
}
