//! What counts as plain text where a person and an agent both read it (a
//! request's params, the words a person consents to): the characters that
//! change how text is shown or hide it are named here once, for the app that
//! refuses them and the client that escapes them.

/// Marks and overrides that reorder how text is shown, and characters that
/// are not shown at all (zero-width ones, the byte-order mark, the Unicode
/// tag block, which can carry text a person cannot see but a model reads),
/// and the line and paragraph separators.
pub fn is_hidden(c: char) -> bool {
    matches!(
        c,
        '\u{061c}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}'
            | '\u{e0000}'..='\u{e007f}'
    )
}

/// Text a person could type and read as it is: no control characters but
/// line breaks and tabs, and nothing [`is_hidden`].
pub fn is_plain(text: &str) -> bool {
    !text.chars().any(|c| (c.is_control() && c != '\n' && c != '\t') || is_hidden(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_is_what_shows_as_it_is() {
        assert!(is_plain("Two lines\nand\ta tab, ünïcode ✓ 日本"));
        for bad in
            ["\u{1b}[2K", "a\rb", "\u{202e}exe", "zero\u{200b}width", "\u{e0041}\u{e0042}", "\u{feff}x", "\u{2028}"]
        {
            assert!(!is_plain(bad), "{bad:?}");
        }
    }
}
