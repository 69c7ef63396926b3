//! Splits a filter into tokens with their char offsets, following fexpr's scanner:
//! whitespace is only space, tab and newline; texts are single or double quoted and
//! the only escape is a backslash before the same quote; numbers have an optional
//! leading `-` and at most one `.`; identifiers start with a letter, `_`, `@` or `#`.

use super::FilterError;
use super::syntax::CompareOp;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum TokenKind {
    Identifier(String),
    Number(f64),
    Text(String),
    Sign { op: CompareOp, any: bool },
    And,
    Or,
    OpenParen,
    CloseParen,
    Comma,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub kind: TokenKind,
    /// Char offset of the first char.
    pub start: usize,
    /// Char offset just past the last char.
    pub end: usize,
}

pub(super) fn tokenize(input: &str) -> Result<Vec<Token>, FilterError> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let start = i;
        let kind = match c {
            ' ' | '\t' | '\n' => {
                i += 1;
                continue;
            }
            '/' if chars.get(i + 1) == Some(&'/') => {
                // A comment runs to the end of the line.
                while chars.get(i).is_some_and(|&c| c != '\n') {
                    i += 1;
                }
                continue;
            }
            '(' => {
                i += 1;
                TokenKind::OpenParen
            }
            ')' => {
                i += 1;
                TokenKind::CloseParen
            }
            ',' => {
                i += 1;
                TokenKind::Comma
            }
            '\'' | '"' => {
                let (text, next) = scan_text(&chars, i)?;
                i = next;
                TokenKind::Text(text)
            }
            c if c.is_ascii_alphabetic() || matches!(c, '_' | '@' | '#') => {
                while chars.get(i).is_some_and(|&c| is_identifier_char(c)) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                if !is_valid_identifier(&word) {
                    return Err(FilterError::new(format!("invalid identifier {word:?}"), start));
                }
                TokenKind::Identifier(word)
            }
            c if c == '-' || c.is_ascii_digit() => {
                i += 1;
                while chars.get(i).is_some_and(|&c| c.is_ascii_digit() || c == '.') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                TokenKind::Number(
                    parse_number(&word).ok_or_else(|| FilterError::new(format!("invalid number {word:?}"), start))?,
                )
            }
            '=' | '?' | '!' | '<' | '>' | '~' => {
                // Like fexpr, take the whole run of sign chars, then validate it: `=!`
                // is one invalid operator, not `=` followed by `!`.
                while chars.get(i).is_some_and(|&c| matches!(c, '=' | '?' | '!' | '<' | '>' | '~')) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let (op, any) = parse_sign(&word).ok_or_else(|| {
                    FilterError::new(
                        format!(
                            "invalid operator {word:?}; expected one of = != > >= < <= ~ !~, optionally prefixed with ?"
                        ),
                        start,
                    )
                })?;
                TokenKind::Sign { op, any }
            }
            '&' | '|' => {
                while chars.get(i).is_some_and(|&c| matches!(c, '&' | '|')) {
                    i += 1;
                }
                match chars[start..i] {
                    ['&', '&'] => TokenKind::And,
                    ['|', '|'] => TokenKind::Or,
                    _ => {
                        let word: String = chars[start..i].iter().collect();
                        return Err(FilterError::new(
                            format!("invalid join operator {word:?}; expected && or ||"),
                            start,
                        ));
                    }
                }
            }
            other => {
                let hint = if other == '\r' { " (only space, tab and newline separate tokens)" } else { "" };
                return Err(FilterError::new(format!("unexpected character {other:?}{hint}"), start));
            }
        };
        tokens.push(Token { kind, start, end: i });
    }
    Ok(tokens)
}

/// Chars fexpr lets an identifier continue with. `@` and `#` are taken here and then
/// rejected by [`is_valid_identifier`] unless they lead, as fexpr does.
fn is_identifier_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '@' | '#' | '.' | ':')
}

/// fexpr's identifier shape: an optional leading `@`, `#` or `_`, then word chars,
/// dots and colons, ending in a word char.
fn is_valid_identifier(word: &str) -> bool {
    let body = word.strip_prefix(['@', '#']).unwrap_or(word);
    !body.is_empty()
        && body.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':'))
        && body.chars().last().is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A sort key name: an identifier that is not `@`/`#`-prefixed (those resolve to
/// values, not columns, and PocketBase refuses them as "invalid sort field").
pub(super) fn is_valid_sort_name(name: &str) -> bool {
    name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':'))
        && is_valid_identifier(name)
}

/// Go's `strconv.ParseFloat` on `-?[0-9.]*` minus a trailing dot, which fexpr refuses.
fn parse_number(word: &str) -> Option<f64> {
    let digits = word.strip_prefix('-').unwrap_or(word);
    if digits.ends_with('.') || digits.matches('.').count() > 1 || !digits.chars().any(|c| c.is_ascii_digit()) {
        return None;
    }
    word.parse::<f64>().ok().filter(|v| v.is_finite())
}

fn parse_sign(word: &str) -> Option<(CompareOp, bool)> {
    let (any, rest) = match word.strip_prefix('?') {
        Some(rest) => (true, rest),
        None => (false, word),
    };
    let op = match rest {
        "=" => CompareOp::Eq,
        "!=" => CompareOp::Neq,
        "~" => CompareOp::Like,
        "!~" => CompareOp::NotLike,
        "<" => CompareOp::Lt,
        "<=" => CompareOp::Lte,
        ">" => CompareOp::Gt,
        ">=" => CompareOp::Gte,
        _ => return None,
    };
    Some((op, any))
}

/// Scans a quoted text starting at `start` (the quote). A backslash escapes the
/// char after it, so the text ends at the first quote not escaped that way.
/// The value then decodes, as PocketBase 0.40.6 does (checked against it):
/// `\\` → `\`, `\"` → `"`, `\'` → `'`, `\n`, `\r`, `\t` → newline, carriage
/// return, tab; any other backslash is kept with the char after it.
fn scan_text(chars: &[char], start: usize) -> Result<(String, usize), FilterError> {
    let quote = chars[start];
    let mut i = start + 1;
    let mut text = String::new();
    loop {
        match chars.get(i) {
            None => {
                return Err(FilterError::new(
                    format!("unterminated text: the {quote} opened here is never closed"),
                    start,
                ));
            }
            Some('\\') => {
                match chars.get(i + 1) {
                    Some('\\') => text.push('\\'),
                    Some('"') => text.push('"'),
                    Some('\'') => text.push('\''),
                    Some('n') => text.push('\n'),
                    Some('r') => text.push('\r'),
                    Some('t') => text.push('\t'),
                    Some(&other) => {
                        text.push('\\');
                        text.push(other);
                    }
                    None => {
                        return Err(FilterError::new(
                            format!("unterminated text: the {quote} opened here is never closed"),
                            start,
                        ));
                    }
                }
                i += 2;
            }
            Some(&c) if c == quote => break,
            Some(&c) => {
                text.push(c);
                i += 1;
            }
        }
    }
    Ok((text, i + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(input: &str) -> Result<Vec<TokenKind>, FilterError> {
        tokenize(input).map(|t| t.into_iter().map(|t| t.kind).collect())
    }

    fn ident(s: &str) -> TokenKind {
        TokenKind::Identifier(s.to_string())
    }

    fn text(s: &str) -> TokenKind {
        TokenKind::Text(s.to_string())
    }

    fn sign(op: CompareOp, any: bool) -> TokenKind {
        TokenKind::Sign { op, any }
    }

    #[test]
    fn tokens() {
        use CompareOp::*;
        let cases: Vec<(&str, Vec<TokenKind>)> = vec![
            ("a=1", vec![ident("a"), sign(Eq, false), TokenKind::Number(1.0)]),
            ("a != -14", vec![ident("a"), sign(Neq, false), TokenKind::Number(-14.0)]),
            ("a>=10.50", vec![ident("a"), sign(Gte, false), TokenKind::Number(10.5)]),
            ("a ?!~ 'x'", vec![ident("a"), sign(NotLike, true), text("x")]),
            ("a?>b", vec![ident("a"), sign(Gt, true), ident("b")]),
            ("a<b", vec![ident("a"), sign(Lt, false), ident("b")]),
            ("a<=b", vec![ident("a"), sign(Lte, false), ident("b")]),
            ("a~b", vec![ident("a"), sign(Like, false), ident("b")]),
            ("a ?= b", vec![ident("a"), sign(Eq, true), ident("b")]),
            ("\"a \\\"b\\\"\"", vec![text("a \"b\"")]),
            ("'it\\'s'", vec![text("it's")]),
            // Escapes as PocketBase 0.40.6 decodes them (checked against it).
            ("'a\\\"b'", vec![text("a\"b")]),
            ("'back\\\\slash'", vec![text("back\\slash")]),
            ("\"\\\\\"", vec![text("\\")]),
            ("'C:\\temp'", vec![text("C:\temp")]),
            ("'l1\\nl2\\r'", vec![text("l1\nl2\r")]),
            ("'a\\b \\u0041 \\x'", vec![text("a\\b \\u0041 \\x")]),
            ("'50%'", vec![text("50%")]),
            ("''", vec![text("")]),
            ("@request.auth.id", vec![ident("@request.auth.id")]),
            ("tags:length", vec![ident("tags:length")]),
            ("@collection.news:alias.field", vec![ident("@collection.news:alias.field")]),
            ("#tag _x", vec![ident("#tag"), ident("_x")]),
            ("a && b || c", vec![ident("a"), TokenKind::And, ident("b"), TokenKind::Or, ident("c")]),
            ("(a)", vec![TokenKind::OpenParen, ident("a"), TokenKind::CloseParen]),
            (
                "f(a, 1,)",
                vec![
                    ident("f"),
                    TokenKind::OpenParen,
                    ident("a"),
                    TokenKind::Comma,
                    TokenKind::Number(1.0),
                    TokenKind::Comma,
                    TokenKind::CloseParen,
                ],
            ),
            ("a // comment = 'x'\n= 1", vec![ident("a"), sign(Eq, false), TokenKind::Number(1.0)]),
            ("// only a comment", vec![]),
            ("\t\n a", vec![ident("a")]),
            ("-.5", vec![TokenKind::Number(-0.5)]),
        ];
        for (input, expected) in cases {
            assert_eq!(kinds(input), Ok(expected), "input {input:?}");
        }
    }

    #[test]
    fn errors_point_at_the_bad_token() {
        let cases: &[(&str, usize, &str)] = &[
            ("a = 'x", 4, "unterminated text"),
            ("a = 'x\\'", 4, "unterminated text"),
            ("a =! b", 2, "invalid operator \"=!\""),
            ("a === b", 2, "invalid operator"),
            ("a ?? b", 2, "invalid operator"),
            ("a & b", 2, "invalid join operator \"&\""),
            ("a &&& b", 2, "invalid join operator"),
            ("a = 1.", 4, "invalid number \"1.\""),
            ("a = 1.2.3", 4, "invalid number"),
            ("a = -", 4, "invalid number \"-\""),
            ("a. = 1", 0, "invalid identifier \"a.\""),
            ("a: = 1", 0, "invalid identifier"),
            ("@ = 1", 0, "invalid identifier \"@\""),
            ("# = 1", 0, "invalid identifier"),
            ("a@b = 1", 0, "invalid identifier"),
            ("a = 1\r", 5, "unexpected character '\\r'"),
            ("a = $", 4, "unexpected character '$'"),
            ("é = 1", 0, "unexpected character"),
            ("'é' = x$", 7, "unexpected character '$'"),
            ("a / b", 2, "unexpected character '/'"),
        ];
        for (input, position, message) in cases {
            let err = tokenize(input).expect_err(input);
            assert_eq!(err.position, *position, "input {input:?}: {err}");
            assert!(err.message.contains(message), "input {input:?}: {err}");
        }
    }
}
