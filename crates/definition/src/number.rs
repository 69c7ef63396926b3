//! Numbers as a JSON text writes them, and which of them cannot be kept.
//!
//! A body is parsed into `serde_json::Value`, whose numbers are 64-bit
//! integers or doubles: `18446744073709551617` or `9007199254740993.0`
//! become a neighbouring double, and a store given that double would answer
//! 200 with a number the caller never sent. The parse keeps no text, so the
//! text is read again here: [`inexact`] finds every number that would not
//! read back as written, with where it sits, for the guard to refuse by name.
//! "As written" is the decimal value: `1.50` reads back as `1.5` and is
//! kept; `0.1` reads back as `0.1` although no double is exactly a tenth.

use serde_json::Value;

/// A number that would be read back as another number, and where it is:
/// the object keys and array indexes from the document's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inexact {
    pub path: Vec<String>,
    /// The number as it was written.
    pub text: String,
}

impl Inexact {
    /// `meta.totals[2]`-style, for a person to find it.
    pub fn place(&self) -> String {
        let mut out = String::new();
        for (i, part) in self.path.iter().enumerate() {
            match part.parse::<u64>() {
                Ok(_) if i > 0 => out.push_str(&format!("[{part}]")),
                _ if i == 0 => out.push_str(part),
                _ => {
                    out.push('.');
                    out.push_str(part);
                }
            }
        }
        out
    }
}

/// One `out_of_range` per number found, by the top-level name it sits under:
/// for bodies that are not records (operation params, requests, grants),
/// whose values no field type reads.
pub fn violations(found: &[Inexact]) -> Vec<protocol::Violation> {
    found
        .iter()
        .map(|n| {
            let v = protocol::Violation::new(
                protocol::ErrorCode::OutOfRange,
                format!(
                    "{} is {}, a number that would be read as another one; send at most 15 significant digits, or a whole number within ±2^53",
                    if n.path.is_empty() { "the body".to_owned() } else { format!("\"{}\"", n.place()) },
                    n.text
                ),
            )
            .expected("a number that is kept exactly as written")
            .got(Value::String(n.text.clone()));
            match n.path.first() {
                Some(name) => v.field(name.clone()),
                None => v,
            }
        })
        .collect()
}

/// Every number of the JSON text `json` that a parse into `Value` would not
/// keep as written. `json` must be valid JSON (it was parsed already);
/// anything else yields what was found before the text stopped making sense.
pub fn inexact(json: &[u8]) -> Vec<Inexact> {
    // Most bodies hold no run of 16 digits, the least that may not be kept:
    // those are passed over without tracking where anything is.
    if !has_long_number(json) {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut frames: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < json.len() {
        match json[i] {
            b'{' => frames.push(Frame::Object { key: None }),
            b'[' => frames.push(Frame::Array { index: 0 }),
            b'}' | b']' => {
                frames.pop();
            }
            b',' => {
                if let Some(Frame::Array { index }) = frames.last_mut() {
                    *index += 1;
                }
            }
            b'"' => {
                let end = string_end(json, i);
                // A string right after `{` or `,` in an object is a key.
                if let Some(Frame::Object { key }) = frames.last_mut()
                    && expecting_key(json, i)
                {
                    *key = serde_json::from_slice::<String>(&json[i..end]).ok();
                }
                i = end;
                continue;
            }
            b'-' | b'0'..=b'9' => {
                let end = i + json[i..]
                    .iter()
                    .take_while(|b| matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
                    .count();
                let text = String::from_utf8_lossy(&json[i..end]).into_owned();
                if !kept(&text) {
                    found.push(Inexact { path: frames.iter().map(Frame::part).collect(), text });
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Whether the number `text` (a JSON number) reads back as written.
pub fn kept(text: &str) -> bool {
    let integer = !text.contains(['.', 'e', 'E']);
    if integer && (text.parse::<i64>().is_ok() || text.parse::<u64>().is_ok()) {
        return true;
    }
    let Some(sent) = decimal(text) else { return false };
    // Fifteen significant digits always survive a double, in its normal range.
    if !integer && sent.digits.len() <= 15 && (-300..=300).contains(&sent.exponent) {
        return true;
    }
    let Ok(value) = serde_json::from_str::<Value>(text) else { return false };
    let Ok(back) = serde_json::to_string(&value) else { return false };
    decimal(&back).is_some_and(|b| b == sent)
}

#[derive(Debug, PartialEq, Eq)]
enum Frame {
    Object { key: Option<String> },
    Array { index: u64 },
}

impl Frame {
    fn part(&self) -> String {
        match self {
            Frame::Object { key } => key.clone().unwrap_or_default(),
            Frame::Array { index } => index.to_string(),
        }
    }
}

fn has_long_number(json: &[u8]) -> bool {
    // A run of 16 digits (the mantissa, or its digits about a point), or an
    // exponent of three digits, which may leave a double's range.
    let (mut run, mut exponent, mut in_exponent) = (0, 0, false);
    let mut previous = b' ';
    for &b in json {
        if b.is_ascii_digit() {
            if in_exponent {
                exponent += 1;
                if exponent >= 3 {
                    return true;
                }
            } else {
                run += 1;
                if run >= 16 {
                    return true;
                }
            }
        } else if matches!(b, b'e' | b'E') && previous.is_ascii_digit() {
            (in_exponent, exponent) = (true, 0);
        } else if !(b == b'.' || (matches!(b, b'+' | b'-') && in_exponent && exponent == 0)) {
            (run, exponent, in_exponent) = (0, 0, false);
        }
        previous = b;
    }
    false
}

/// The index just past the string that opens at `start`.
fn string_end(json: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < json.len() {
        match json[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    json.len()
}

/// Whether the string at `at` follows `{` or `,` (a key), not `:` (a value).
fn expecting_key(json: &[u8], at: usize) -> bool {
    json[..at].iter().rev().find(|b| !b.is_ascii_whitespace()).is_some_and(|b| matches!(b, b'{' | b','))
}

/// A decimal number as significant digits (no leading or trailing zeros)
/// and the power of ten of the first: `-1.50e3` is `-`, `15`, 3.
#[derive(Debug, PartialEq, Eq)]
struct Decimal {
    negative: bool,
    digits: String,
    exponent: i64,
}

fn decimal(text: &str) -> Option<Decimal> {
    let (negative, rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    let (mantissa, exp) = match rest.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let all: String = format!("{whole}{fraction}");
    let leading = all.bytes().take_while(|b| *b == b'0').count();
    let digits = all[leading..].trim_end_matches('0').to_owned();
    if digits.is_empty() {
        return Some(Decimal { negative: false, digits, exponent: 0 });
    }
    let exponent = exp.checked_add(whole.len() as i64)?.checked_sub(leading as i64 + 1)?;
    Some(Decimal { negative, digits, exponent })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(json: &str) -> Vec<(String, String)> {
        inexact(json.as_bytes()).into_iter().map(|i| (i.place(), i.text)).collect()
    }

    #[test]
    fn numbers_that_read_back_as_written_are_kept() {
        for text in [
            "0",
            "-0",
            "1",
            "1.50",
            "0.1",
            "-2.5e-3",
            "9007199254740993",
            "18446744073709551615",
            "-9223372036854775808",
            "1e300",
            "123456789012345",
            "0.30000000000000004",
            "1.7976931348623157e308",
        ] {
            assert!(kept(text), "{text}");
        }
    }

    #[test]
    fn numbers_a_double_would_change_are_found() {
        for text in [
            "18446744073709551617",
            "123456789012345678901234567890",
            "9007199254740993.0",
            "9007199254740993e0",
            "1.00000000000000000001",
            "-18446744073709551616",
            "1e400",
            "1e-400",
        ] {
            assert!(!kept(text), "{text}");
        }
    }

    #[test]
    fn each_is_found_where_it_sits() {
        let body = r#"{"title": "a 12345678901234567890 b", "estimate": 18446744073709551617,
            "meta": {"xs": [1, 9007199254740993.0], "k\"ey": 9007199254740993e0}, "ok": 9007199254740993}"#;
        assert_eq!(
            found(body),
            [
                ("estimate".to_owned(), "18446744073709551617".to_owned()),
                ("meta.xs[1]".to_owned(), "9007199254740993.0".to_owned()),
                ("meta.k\"ey".to_owned(), "9007199254740993e0".to_owned()),
            ]
        );
        assert_eq!(found(r#"{"a": 1.5, "b": [1, 2, 3]}"#), []);
        assert_eq!(found(r#"{"tiny": 1e-400}"#), [("tiny".to_owned(), "1e-400".to_owned())]);
        assert_eq!(
            found("123456789012345678901234567890"),
            [(String::new(), "123456789012345678901234567890".to_owned())]
        );
    }
}
