//! Text from an app, made safe to print on a person's terminal or in a host's
//! dialog: control characters (C0, DEL, C1) and the characters that reorder
//! or hide text (`protocol::text::is_hidden`) become visible escapes
//! (`\u{1b}`), so an app's words cannot move the cursor, recolour, erase or
//! reorder what the person reads, least of all a consent question.

/// `text` with every control character and every character that reorders
/// or hides text (`protocol::text::is_hidden`) escaped, line breaks too:
/// for one value inside a line.
pub fn printable(text: &str) -> String {
    escape(text, |_| false)
}

/// [`printable`], keeping line breaks and tabs: for whole texts the client
/// composed, on their way to the terminal.
pub fn terminal(text: &str) -> String {
    escape(text, |c| c == '\n' || c == '\t')
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if (c.is_control() || protocol::text::is_hidden(c)) && !keep(c) {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
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
        assert_eq!(printable("hid\u{e0041}den"), "hid\\u{e0041}den");
        assert_eq!(terminal("line\n\tnext\u{1b}[8m"), "line\n\tnext\\u{1b}[8m");
    }
}
