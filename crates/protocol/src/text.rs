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

/// `text` with every character that [`is_plain`] refuses written out as
/// `\u{…}`, so what reorders or hides text shows as what it is: a receipt
/// names `"a\u{202e}b"`, never a title a person reads backwards.
pub fn visible(text: &str) -> std::borrow::Cow<'_, str> {
    let shown = |c: char| !((c.is_control() && c != '\n' && c != '\t') || is_hidden(c));
    if text.chars().all(shown) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if shown(c) {
            out.push(c);
        } else {
            out.push_str(&format!("\\u{{{:04x}}}", u32::from(c)));
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The first C0 control character of `text` that a text field does not
/// take, with its place (counted in characters): anything below U+0020 but
/// a tab, a line feed, and a carriage return that ends a line (`\r\n`).
pub fn stray_control(text: &str) -> Option<(usize, char)> {
    let mut chars = text.chars().enumerate().peekable();
    while let Some((i, c)) = chars.next() {
        let ok = match c {
            '\t' | '\n' => true,
            '\r' => chars.peek().is_some_and(|(_, next)| *next == '\n'),
            c => (c as u32) >= 0x20,
        };
        if !ok {
            return Some((i, c));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_plain_is_shown_escaped() {
        assert_eq!(visible("Fix login"), "Fix login");
        assert_eq!(visible("a\u{202e}b\u{7}c"), "a\\u{202e}b\\u{0007}c");
        assert_eq!(visible("two\nlines\tand tab"), "two\nlines\tand tab");
    }

    #[test]
    fn text_fields_take_tabs_and_line_breaks_only() {
        assert_eq!(stray_control("a\tb\nc\r\nd"), None);
        assert_eq!(stray_control("a\u{0}b"), Some((1, '\u{0}')));
        assert_eq!(stray_control("ab\rc"), Some((2, '\r')));
        assert_eq!(stray_control("bell\u{7}"), Some((4, '\u{7}')));
        assert_eq!(stray_control("\u{202e} is no control"), None);
    }

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
