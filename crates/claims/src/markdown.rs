//! The Markdown a message may be written in, turned into paragraphs of plain
//! text, each with what its place in the document says about it.
//!
//! A bullet under "Not done:" or an unchecked task box is not a claim, a
//! blockquote is someone else's words, code blocks are output, and struck-out
//! text was taken back; bold, italics and links are only looks. Code spans
//! stay (the tokenizer reads them as names), as do underscores inside words
//! (`export_board` is an operation's name, not italics).

/// What a paragraph's place says about the statements in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mood {
    /// Plain statements: claims where they say so.
    Plain,
    /// Quoted (a blockquote): someone else's words.
    Quoted,
    /// Listed as not done, planned or failed (a section heading, a task box, ❌).
    NotDone,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    pub text: String,
    pub mood: Mood,
    /// A list item.
    pub bullet: bool,
    /// A short line ending with a colon that introduces what follows ("Moved to Done:").
    pub label: bool,
}

/// Words in a heading or label line that make the items under it not done.
const NOT_DONE_HEADINGS: &[&str] = &[
    "not done",
    "not yet",
    "couldn't",
    "could not",
    "can't",
    "cannot",
    "didn't",
    "did not",
    "failed",
    "unable",
    "pending",
    "next step",
    "todo",
    "to-do",
    "still to do",
    "remaining",
    "still open",
    "open question",
    "plan",
    "will",
    "proposed",
    "suggest",
    "not changed",
    "skipped",
    "untouched",
    "won't",
    "blocked",
    "refused",
    "errors",
    "problems",
    "would you",
    "shall i",
    "options",
    "ideas",
    "left to do",
    "not possible",
    "waiting",
];

/// Marks that open a list item saying it did not happen.
const FAILED_MARKS: &[char] = &['❌', '✗', '✖', '🚫', '⛔', '⚠', '❎'];

/// Marks that are only decoration.
const DECORATION: &[char] = &['✅', '✔', '☑', '✓', '🎉', '👍', '✨', '📝', '📌', '🗑', '➡', '\u{fe0f}'];

pub fn paragraphs(message: &str) -> Vec<Paragraph> {
    let mut out = Vec::new();
    let mut current: Option<Paragraph> = None;
    let mut fence: Option<&str> = None;
    let mut section = Mood::Plain;
    for raw in message.lines() {
        let trimmed = raw.trim();
        if let Some(marker) = fence {
            if trimmed.starts_with(marker) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            flush(&mut out, &mut current);
            fence = Some(if trimmed.starts_with("```") { "```" } else { "~~~" });
            continue;
        }
        if trimmed.is_empty() {
            flush(&mut out, &mut current);
            continue;
        }
        let (quoted, line) = strip_blockquote(trimmed);
        if let Some(heading) = heading(line) {
            flush(&mut out, &mut current);
            let text = inline(heading);
            section = section_mood(&text);
            out.push(Paragraph {
                text,
                mood: if quoted { Mood::Quoted } else { Mood::Plain },
                bullet: false,
                label: true,
            });
            continue;
        }
        if line.starts_with('|') {
            flush(&mut out, &mut current);
            if let Some(row) = table_row(line) {
                let mood = if quoted { Mood::Quoted } else { section };
                out.push(Paragraph { text: inline(&row), mood, bullet: true, label: false });
            }
            continue;
        }
        if let Some(item) = bullet(line) {
            flush(&mut out, &mut current);
            let (mut mood, item) = task_box(item);
            let item = item.trim_start();
            if item.starts_with(FAILED_MARKS) {
                mood = Mood::NotDone;
            }
            if mood == Mood::Plain {
                mood = section;
            }
            if quoted {
                mood = Mood::Quoted;
            }
            current = Some(Paragraph { text: inline(item), mood, bullet: true, label: false });
            continue;
        }
        let indented = raw.starts_with([' ', '\t']);
        match &mut current {
            // A wrapped line continues its paragraph or its list item.
            // A quote starts its own paragraph: the person's words never join the agent's.
            Some(p) if !p.label && (!p.bullet || indented) && (p.mood == Mood::Quoted) == quoted => {
                p.text.push(' ');
                p.text.push_str(&inline(line));
            }
            _ => {
                flush(&mut out, &mut current);
                let text = inline(line);
                let label = is_label(&text);
                if label {
                    section = section_mood(&text);
                } else if !indented {
                    section = Mood::Plain;
                }
                let mood = if quoted { Mood::Quoted } else { Mood::Plain };
                current = Some(Paragraph { text, mood, bullet: false, label });
                if label {
                    flush(&mut out, &mut current);
                }
            }
        }
    }
    flush(&mut out, &mut current);
    out
}

fn flush(out: &mut Vec<Paragraph>, current: &mut Option<Paragraph>) {
    if let Some(p) = current.take()
        && !p.text.trim().is_empty()
    {
        out.push(p);
    }
}

fn strip_blockquote(line: &str) -> (bool, &str) {
    let mut rest = line;
    let mut quoted = false;
    while let Some(r) = rest.strip_prefix('>') {
        quoted = true;
        rest = r.trim_start();
    }
    (quoted, rest)
}

fn heading(line: &str) -> Option<&str> {
    let hashes = line.len() - line.trim_start_matches('#').len();
    if (1..=6).contains(&hashes) {
        let rest = &line[hashes..];
        if rest.starts_with(' ') || rest.is_empty() {
            return Some(rest.trim().trim_end_matches('#').trim());
        }
    }
    None
}

fn bullet(line: &str) -> Option<&str> {
    for mark in ["- ", "* ", "+ ", "• ", "· ", "– ", "— "] {
        if let Some(rest) = line.strip_prefix(mark) {
            return Some(rest);
        }
    }
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if (1..=3).contains(&digits) {
        let rest = &line[digits..];
        for mark in [". ", ") "] {
            if let Some(rest) = rest.strip_prefix(mark) {
                return Some(rest);
            }
        }
    }
    None
}

/// `[ ] item` is a task not done; `[x] item` one done.
fn task_box(item: &str) -> (Mood, &str) {
    if let Some(rest) = item.strip_prefix("[ ]") {
        return (Mood::NotDone, rest);
    }
    for done in ["[x]", "[X]"] {
        if let Some(rest) = item.strip_prefix(done) {
            return (Mood::Plain, rest);
        }
    }
    (Mood::Plain, item)
}

/// A table row as one statement, cells joined; separator rows are nothing.
fn table_row(line: &str) -> Option<String> {
    let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
    if cells.iter().all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' '))) {
        return None;
    }
    Some(cells.join(" ; "))
}

fn is_label(text: &str) -> bool {
    let t = text.trim_end();
    t.ends_with(':') && t.split_whitespace().count() <= 8
}

fn section_mood(text: &str) -> Mood {
    let lower = text.to_lowercase();
    if NOT_DONE_HEADINGS.iter().any(|w| contains_words(&lower, w)) { Mood::NotDone } else { Mood::Plain }
}

/// `needle` in `hay` on word boundaries.
fn contains_words(hay: &str, needle: &str) -> bool {
    let mut from = 0;
    while let Some(pos) = hay.get(from..).and_then(|h| h.find(needle)) {
        let start = from + pos;
        let end = start + needle.len();
        let before = hay[..start].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = hay[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return true;
        }
        from = end;
    }
    false
}

/// Inline Markdown off: links to their text, images and struck text out,
/// emphasis markers and HTML tags dropped, decoration removed.
pub fn inline(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_code = false;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '`' {
            in_code = !in_code;
            out.push(c);
            i += 1;
            continue;
        }
        if in_code {
            out.push(c);
            i += 1;
            continue;
        }
        match c {
            '~' if next == Some('~') => {
                // Struck out: taken back, so not said.
                match find_pair(&chars, i + 2, &['~', '~']) {
                    Some(end) => i = end + 2,
                    None => i += 2,
                }
            }
            '!' if next == Some('[') => match link(&chars, i + 1) {
                Some((_, end)) => i = end,
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            '[' => match link(&chars, i) {
                Some((label, end)) => {
                    out.push_str(&label);
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            '*' => i += 1,
            '_' => {
                let prev = if i == 0 { None } else { chars.get(i - 1).copied() };
                let inside = prev.is_some_and(char::is_alphanumeric) && next.is_some_and(char::is_alphanumeric);
                if inside {
                    out.push(c);
                }
                i += 1;
            }
            '<' => match html_tag(&chars, i) {
                Some(end) => {
                    out.push(' ');
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            _ if DECORATION.contains(&c) || FAILED_MARKS.contains(&c) => i += 1,
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out.trim().to_owned()
}

fn find_pair(chars: &[char], from: usize, pair: &[char; 2]) -> Option<usize> {
    (from..chars.len().saturating_sub(1)).find(|&j| chars[j] == pair[0] && chars.get(j + 1) == Some(&pair[1]))
}

/// `[text](url)` at `start`: the text and the index after the closing paren.
fn link(chars: &[char], start: usize) -> Option<(String, usize)> {
    let close = (start + 1..chars.len().min(start + 400)).find(|&j| chars[j] == ']')?;
    if chars.get(close + 1) != Some(&'(') {
        return None;
    }
    let end = (close + 2..chars.len().min(close + 2000)).find(|&j| chars[j] == ')')?;
    Some((chars[start + 1..close].iter().collect(), end + 1))
}

/// `<br>`, `</b>`, `<span class="x">`: the index after the tag.
fn html_tag(chars: &[char], start: usize) -> Option<usize> {
    let first = *chars.get(start + 1)?;
    if !(first.is_ascii_alphabetic() || first == '/') {
        return None;
    }
    let end = (start + 1..chars.len().min(start + 60)).find(|&j| chars[j] == '>')?;
    Some(end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(message: &str) -> Vec<(String, Mood)> {
        paragraphs(message).into_iter().map(|p| (p.text, p.mood)).collect()
    }

    #[test]
    fn lists_headings_and_boxes_set_the_mood() {
        let message = "## Done\n- ✅ Moved **Fix login** to *Done*\n- [ ] Assign Ann\n\n### Not done\n- Delete `Reports`\n\
                       \nPlain again.\n> You asked me to delete everything\n```\nmoved x\n```\n1. ~~Deleted Report~~ Kept it";
        assert_eq!(
            texts(message),
            vec![
                ("Done".into(), Mood::Plain),
                ("Moved Fix login to Done".into(), Mood::Plain),
                ("Assign Ann".into(), Mood::NotDone),
                ("Not done".into(), Mood::Plain),
                ("Delete `Reports`".into(), Mood::NotDone),
                ("Plain again.".into(), Mood::Plain),
                ("You asked me to delete everything".into(), Mood::Quoted),
                ("Kept it".into(), Mood::Plain),
            ]
        );
    }

    #[test]
    fn inline_markup_is_only_looks() {
        assert_eq!(
            inline("Ran __export_board__ via [the API](http://x/y) <br> ![img](a.png)"),
            "Ran export_board via the API"
        );
        assert_eq!(inline("_moved_ `a_b` *x*"), "moved `a_b` x");
        assert_eq!(inline("[unclosed ~~ <"), "[unclosed  <");
    }

    #[test]
    fn wrapped_lines_join_their_paragraph() {
        let p = paragraphs("I moved Fix login\nto Done.\n- item one\n  continues\nNew line");
        let t: Vec<&str> = p.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(t, ["I moved Fix login to Done.", "item one continues", "New line"]);
    }
}
