//! PocketBase's filter grammar (fexpr v0.6.0, as pinned by PocketBase 0.40.6): lexer,
//! parser and syntax tree for `filter` and `sort` query parameters and API rules.
//!
//! This crate only answers "is this well formed, and what does it say?". It knows
//! nothing about the schema or SQL and depends on nothing: resolving identifiers
//! against entities and compiling to SQL live in the store (`a2app-store`). Every
//! error carries the char offset of the token it is about, so a caller can point at
//! the problem.

mod lexer;
mod parser;
mod syntax;

use std::fmt;

pub use syntax::{CompareOp, Comparison, Expr, Operand, OperandKind, SortKey, SortTarget};

/// The longest filter PocketBase accepts, in chars.
pub const MAX_FILTER_CHARS: usize = 3500;
/// The most comparison expressions one filter may hold.
pub const MAX_COMPARISONS: usize = 200;
/// The most keys one `sort` may hold.
pub const MAX_SORT_KEYS: usize = 8;
/// The longest single sort key, in chars.
pub const MAX_SORT_KEY_CHARS: usize = 255;

/// A filter or sort that cannot be parsed or compiled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError {
    /// What is wrong, in words an agent can act on.
    pub message: String,
    /// Char offset (not byte offset) in the input where the problem starts.
    pub position: usize,
}

impl FilterError {
    pub fn new(message: impl Into<String>, position: usize) -> Self {
        FilterError { message: message.into(), position }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at char {})", self.message, self.position)
    }
}

impl std::error::Error for FilterError {}

/// Parses a filter expression such as `title ~ "milk" && (done = false || due < @now)`.
///
/// `&&` binds tighter than `||`, as it does in the SQL PocketBase concatenates.
/// Enforces PocketBase's limits: at most [`MAX_FILTER_CHARS`] chars and
/// [`MAX_COMPARISONS`] comparison expressions. An empty (or comment-only) filter is an
/// error, as in PocketBase; a caller that means "no filter" should not call this.
pub fn parse(input: &str) -> Result<Expr, FilterError> {
    let chars = input.chars().count();
    if chars > MAX_FILTER_CHARS {
        return Err(FilterError::new(
            format!("filter is too long: {chars} chars, at most {MAX_FILTER_CHARS} are allowed"),
            MAX_FILTER_CHARS,
        ));
    }
    let tokens = lexer::tokenize(input)?;
    parser::parse_tokens(&tokens, chars)
}

/// Parses PocketBase's sort syntax: a comma-separated list of keys, each an optional
/// `-` (descending) or `+` (ascending) followed by a field path (`title`, `list.name`)
/// or one of `@random` and `@rowid`. An empty input yields no keys.
pub fn parse_sort(input: &str) -> Result<Vec<SortKey>, FilterError> {
    parser::parse_sort(input)
}

/// The grammar fuzzed on its own: any text, well formed or not, is answered
/// without a panic, and a refusal points inside what was sent.
#[cfg(test)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// Text made of the grammar's own pieces, so most cases get past the lexer.
    fn filterish() -> impl Strategy<Value = String> {
        let piece = prop::sample::select(vec![
            "title",
            "list.name",
            "cards_via_list.title",
            "@request.auth.id",
            "@now",
            "@todayStart",
            " = ",
            " != ",
            " ~ ",
            " !~ ",
            " ?= ",
            " >= ",
            " < ",
            " && ",
            " || ",
            "(",
            ")",
            "'x'",
            "\"y\"",
            "5",
            "-1.5",
            "true",
            "null",
            ":lower",
            ":length",
            ":each",
            "// c\n",
            " ",
            ",",
            "é",
            "\u{202e}",
            "'",
            "\\",
        ]);
        prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn any_text_is_answered_and_errors_point_inside_it(text in any::<String>()) {
            if let Err(e) = parse(&text) {
                prop_assert!(e.position <= text.chars().count().max(MAX_FILTER_CHARS));
            }
            let _ = parse_sort(&text);
        }

        #[test]
        fn grammar_shaped_text_is_answered_and_errors_point_inside_it(text in filterish()) {
            if let Err(e) = parse(&text) {
                prop_assert!(e.position <= text.chars().count(), "{e} for {text:?}");
            }
            if let Err(e) = parse_sort(&text) {
                prop_assert!(e.position <= text.chars().count(), "{e} for {text:?}");
            }
        }
    }
}
