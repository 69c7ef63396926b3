//! Text from an app, made safe to print on a person's terminal or in a host's
//! dialog: control characters (C0, DEL, C1) and the bidirectional controls
//! become visible escapes (`\u{1b}`), so an app's words cannot move the
//! cursor, recolour, erase or reorder what the person reads — least of all
//! a consent question.

/// `text` with every control and bidirectional-control character escaped.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_bidi_control(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

/// The marks and overrides that change the order text is shown in.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_could_rewrite_a_line() {
        assert_eq!(printable("plain words, ünïcode ✓"), "plain words, ünïcode ✓");
        assert_eq!(printable("a\u{1b}[1A\u{1b}[2Kb"), "a\\u{1b}[1A\\u{1b}[2Kb");
        assert_eq!(printable("x\ny\r\u{7f}\u{9b}"), "x\\u{a}y\\u{d}\\u{7f}\\u{9b}");
        assert_eq!(printable("\u{202e}txt.exe"), "\\u{202e}txt.exe");
    }
}
