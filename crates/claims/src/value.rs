//! Values as a message says them: dates ("Friday", "31 Jul", "2026-07-31"),
//! amounts ("€42.50", "40 EUR"), and words ("Done", "high").
//!
//! Day words are read with `protocol::calendar::relative_date`, the coercion
//! the client applies before it writes, so "due Friday" in a claim is the
//! date "due=friday" was written as.

use crate::token::{Kind, Token};
use crate::vocabulary::{CURRENCIES, MONTHS};
use jiff::civil::Date;
use protocol::calendar::{relative_date, weekday};

/// How a value was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Reading {
    Date(Date),
    Number(f64),
    /// Words, normalized: a label, an enum value, a name.
    Words(String),
    /// A boolean: true for "done", false for "not done".
    Flag(bool),
}

/// A date said at `tokens[i..]`: the date and how many tokens it takes.
pub fn date_at(tokens: &[Token], i: usize, today: Date) -> Option<(Date, usize)> {
    let word = |k: usize| tokens.get(i + k).and_then(Token::word);
    let first = word(0)?;
    // "Fri 31 Jul", as receipts write dates: the weekday is decoration.
    if weekday(first.trim_end_matches(',')).is_some()
        && let Some((date, len)) = explicit(tokens, i + 1, today)
    {
        return Some((date, len + 1));
    }
    if let Some(found) = explicit(tokens, i, today) {
        return Some(found);
    }
    match first {
        "today" | "tomorrow" | "yesterday" => relative_date(first, today).map(|d| (d, 1)),
        "this" | "next" => {
            let day = word(1)?;
            weekday(day)?;
            relative_date(&format!("{first} {day}"), today).map(|d| (d, 2))
        }
        "in" => {
            let (n, unit) = (word(1)?, word(2)?);
            relative_date(&format!("in {n} {unit}"), today).map(|d| (d, 3))
        }
        _ if weekday(first).is_some() => relative_date(first, today).map(|d| (d, 1)),
        _ if first.len() == 10 => relative_date(first, today).map(|d| (d, 1)),
        _ => None,
    }
}

/// "31 Jul", "31st July 2026", "July 31", "Jul 31, 2027".
fn explicit(tokens: &[Token], i: usize, today: Date) -> Option<(Date, usize)> {
    let word = |k: usize| tokens.get(i + k).and_then(Token::word);
    let (day, month, mut len) = if let Some(day) = word(0).and_then(day_number) {
        (day, month(word(1)?)?, 2)
    } else {
        let month = month(word(0)?)?;
        (word(1).and_then(day_number)?, month, 2)
    };
    let mut year = today.year();
    let mut k = len;
    if tokens.get(i + k).is_some_and(|t| t.is_punct(',')) {
        k += 1;
    }
    if let Some(y) = word(k).filter(|w| w.len() == 4).and_then(|w| w.parse::<i16>().ok()) {
        year = y;
        len = k + 1;
    }
    Date::new(year, month, day).ok().map(|d| (d, len))
}

fn day_number(word: &str) -> Option<i8> {
    let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let suffix = &word[digits.len()..];
    if !matches!(suffix, "" | "st" | "nd" | "rd" | "th") || digits.is_empty() || digits.len() > 2 {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

fn month(word: &str) -> Option<i8> {
    let word = word.trim_end_matches('.');
    if word.len() < 3 {
        return None;
    }
    let full = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let index = MONTHS.iter().position(|m| word.starts_with(m))?;
    let ok = full.get(index).is_some_and(|f| f.starts_with(word)) || word == "sept";
    ok.then(|| i8::try_from(index + 1).ok()).flatten()
}

/// An amount said at `tokens[i..]`: "€42.50", "$5", "40 EUR", "EUR 40", "40eur".
/// Returns the number, the currency code (lower case) if one was said, and
/// how many tokens it takes. A bare number is an amount only when `bare`.
pub fn amount_at(tokens: &[Token], i: usize, bare: bool) -> Option<(f64, Option<String>, usize)> {
    let t = tokens.get(i).filter(|t| t.kind == Kind::Word)?;
    let next = tokens.get(i + 1).and_then(Token::word);
    // "EUR 40"
    if let Some(code) = currency_code(&t.norm)
        && let Some(n) = next.and_then(number)
    {
        return Some((n, Some(code), 2));
    }
    let mut text = t.norm.as_str();
    let mut code = None;
    for (sign, c) in CURRENCIES {
        if let Some(rest) = text.strip_prefix(sign) {
            text = rest;
            code = Some((*c).to_owned());
            break;
        }
        if let Some(rest) = text.strip_suffix(sign).filter(|r| r.starts_with(|ch: char| ch.is_ascii_digit())) {
            text = rest;
            code = Some((*c).to_owned());
            break;
        }
    }
    if code.is_none() {
        // "40eur"
        let digits = text.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        if digits.len() < text.len()
            && let Some(c) = currency_code(&text[digits.len()..])
        {
            code = Some(c);
            text = digits;
        }
    }
    let n = number(text)?;
    if code.is_none()
        && let Some(c) = next.and_then(currency_code)
    {
        return Some((n, Some(c), 2));
    }
    (code.is_some() || bare).then_some((n, code, 1))
}

fn number(text: &str) -> Option<f64> {
    let t = text.trim_end_matches(['.', ',']);
    if t.is_empty() || !t.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
        return None;
    }
    // "5,000" is five thousand: a comma between digits groups them.
    t.replace(['_', ','], "").parse::<f64>().ok().filter(|n| n.is_finite())
}

/// Three-letter currency codes, and the words people use for them.
fn currency_code(word: &str) -> Option<String> {
    let w = word.trim_end_matches('.');
    match w {
        "eur" | "euro" | "euros" => Some("eur".into()),
        "usd" | "dollar" | "dollars" => Some("usd".into()),
        "gbp" | "pound" | "pounds" => Some("gbp".into()),
        "chf" | "jpy" | "cad" | "aud" | "sek" | "nok" | "dkk" | "pln" | "czk" => Some(w.to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tokens;

    #[test]
    fn dates_as_people_and_receipts_say_them() {
        let today = Date::constant(2026, 7, 30);
        let rows = [
            ("Friday", "2026-07-31", 1),
            ("next friday", "2026-07-31", 2),
            ("tomorrow", "2026-07-31", 1),
            ("in 2 weeks", "2026-08-13", 3),
            ("2026-08-03", "2026-08-03", 1),
            ("Fri 31 Jul", "2026-07-31", 3),
            ("Sat 2 Jan 2027", "2027-01-02", 4),
            ("31st July", "2026-07-31", 2),
            ("August 3, 2026", "2026-08-03", 4),
        ];
        for (text, want, len) in rows {
            let t = tokens(text);
            assert_eq!(date_at(&t, 0, today).map(|(d, l)| (d.to_string(), l)), Some((want.to_owned(), len)), "{text}");
        }
        for text in ["someday", "32 Jul", "may", "Done", "30 Febr"] {
            assert_eq!(date_at(&tokens(text), 0, today), None, "{text}");
        }
    }

    #[test]
    fn amounts_with_and_without_currency() {
        let rows = [
            ("€42.50", Some((42.5, Some("eur"), 1))),
            ("42.50 EUR", Some((42.5, Some("eur"), 2))),
            ("USD 12", Some((12.0, Some("usd"), 2))),
            ("$5", Some((5.0, Some("usd"), 1))),
            ("18chf", Some((18.0, Some("chf"), 1))),
            ("17", None),
            ("v1.2", None),
        ];
        for (text, want) in rows {
            let got = amount_at(&tokens(text), 0, false);
            let got = got.as_ref().map(|(n, c, l)| (*n, c.as_deref(), *l));
            assert_eq!(got, want, "{text}");
        }
        assert_eq!(amount_at(&tokens("17"), 0, true), Some((17.0, None, 1)));
    }
}
