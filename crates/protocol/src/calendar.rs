//! Day words in an app's calendar: "tomorrow", "friday", "in 3 days".
//!
//! One reading for every place that meets them: the client coerces a person's
//! "due friday" into a date before it writes, and the claim checker reads the
//! same words in an agent's message to compare them with what was stored. Two
//! copies would drift, and a claim would then be judged by another calendar
//! than the write it claims. The caller supplies "today" in the app's zone;
//! nothing here reads a clock.

use jiff::ToSpan;
use jiff::civil::{Date, Weekday};

/// Relative day words, in the app's calendar:
/// `today`, `tomorrow`, `yesterday`; `friday` and `next friday` (the coming
/// Friday, 1–7 days ahead; "today" is said as `today`); `this friday` (today
/// if it is Friday); `in 3 days`, `in 2 weeks`; and plain `YYYY-MM-DD`.
pub fn relative_date(text: &str, today: Date) -> Option<Date> {
    let words: Vec<String> = text.split_whitespace().map(str::to_ascii_lowercase).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let days = |n: i64| today.checked_add(n.days()).ok();
    match words.as_slice() {
        ["today"] => Some(today),
        ["tomorrow"] => days(1),
        ["yesterday"] => days(-1),
        [day] | ["next", day] if weekday(day).is_some() => weekday(day).and_then(|w| days(ahead(today, w, false))),
        ["this", day] if weekday(day).is_some() => weekday(day).and_then(|w| days(ahead(today, w, true))),
        ["in", n, unit] => {
            let n: i64 = n.parse().ok().filter(|n| (0..=3650).contains(n))?;
            match *unit {
                "day" | "days" => days(n),
                "week" | "weeks" => days(n * 7),
                _ => None,
            }
        }
        _ => text.trim().parse::<Date>().ok().filter(|_| text.trim().len() == 10),
    }
}

/// Days from `today` to the next `target` weekday; 0 only when today counts.
fn ahead(today: Date, target: Weekday, today_counts: bool) -> i64 {
    let diff = i64::from(target.to_monday_zero_offset()) - i64::from(today.weekday().to_monday_zero_offset());
    let diff = diff.rem_euclid(7);
    if diff == 0 && !today_counts { 7 } else { diff }
}

/// A weekday's English name or its short form, lower-case.
pub fn weekday(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" | "mon" => Weekday::Monday,
        "tuesday" | "tue" | "tues" => Weekday::Tuesday,
        "wednesday" | "wed" => Weekday::Wednesday,
        "thursday" | "thu" | "thurs" => Weekday::Thursday,
        "friday" | "fri" => Weekday::Friday,
        "saturday" | "sat" => Weekday::Saturday,
        "sunday" | "sun" => Weekday::Sunday,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_words_count_from_the_given_today() {
        // Thursday 30 July 2026.
        let today = Date::constant(2026, 7, 30);
        let rows = [
            ("today", "2026-07-30"),
            ("Tomorrow", "2026-07-31"),
            ("yesterday", "2026-07-29"),
            ("fri", "2026-07-31"),
            ("next Friday", "2026-07-31"),
            ("thursday", "2026-08-06"),
            ("this thursday", "2026-07-30"),
            ("in 0 days", "2026-07-30"),
            ("in 1 week", "2026-08-06"),
            (" 2026-12-24 ", "2026-12-24"),
        ];
        for (text, want) in rows {
            assert_eq!(relative_date(text, today).map(|d| d.to_string()).as_deref(), Some(want), "{text}");
        }
        for text in ["", "someday", "in -1 days", "in 3651 days", "in 3 months", "2026-7-1", "this", "next next friday"]
        {
            assert_eq!(relative_date(text, today), None, "{text}");
        }
        // The last representable day has no tomorrow, and says so.
        assert_eq!(relative_date("tomorrow", Date::MAX), None);
    }
}
