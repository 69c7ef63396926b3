//! Words, quoted names and punctuation of one paragraph.
//!
//! A name in quotes (straight or curly, single or double, guillemets) or in a
//! code span is one token whatever it holds, so a title such as "Done? Not
//! yet." neither ends a sentence nor turns into words. Words keep inner dots
//! and apostrophes (`v1.2`, `didn't`) and are compared in lower case with
//! curly apostrophes made straight.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Word,
    /// A quoted or code-span name; `text` is what is inside.
    Name,
    /// One punctuation mark; `→` and `->` are `>`.
    Punct(char),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    /// As written (a name without its quotes).
    pub text: String,
    /// Lower case, apostrophes straight.
    pub norm: String,
}

impl Token {
    pub fn is_word(&self, w: &str) -> bool {
        self.kind == Kind::Word && self.norm == w
    }

    pub fn is_punct(&self, c: char) -> bool {
        self.kind == Kind::Punct(c)
    }

    pub fn word(&self) -> Option<&str> {
        (self.kind == Kind::Word).then_some(self.norm.as_str())
    }
}

/// The longest name a pair of quotes may hold; past it, a quote is a stray mark.
const MAX_NAME_CHARS: usize = 300;

const PUNCT: &[char] = &[',', ';', ':', '!', '?', '(', ')', '[', ']', '{', '}', '…', '—', '–', '→', '⇒', '=', '|', '"'];

/// Words that end in a dot without ending a sentence.
const ABBREVIATIONS: &[&str] = &["e.g", "i.e", "etc", "vs", "approx", "no", "nr", "fr", "mr", "mrs", "ms", "dr", "st"];

pub fn tokens(text: &str) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        if let Some((inner, end)) = quoted(&chars, i) {
            let text: String = inner.iter().collect();
            let text = text.trim().to_owned();
            if !text.is_empty() {
                out.push(Token { norm: normalize(&text), text, kind: Kind::Name });
            }
            i = end;
            continue;
        }
        if c == '-' && chars.get(i + 1) == Some(&'>') || c == '=' && chars.get(i + 1) == Some(&'>') {
            out.push(punct('>'));
            i += 2;
            continue;
        }
        if c == '-' && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) {
            // A dash between words joins two statements like a comma.
            out.push(punct('—'));
            i += 1;
            continue;
        }
        if PUNCT.contains(&c) || is_quote(c) {
            let mark = match c {
                '→' | '⇒' => '>',
                '–' => '—',
                _ => c,
            };
            if !is_quote(c) {
                out.push(punct(mark));
            }
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && !chars[i].is_whitespace() && !is_double_quote(chars[i]) {
            // "5,000" and "12:30" are one word; elsewhere the mark ends it.
            let inner = matches!(chars[i], ',' | ':')
                && i > start
                && chars[i - 1].is_ascii_digit()
                && chars.get(i + 1).is_some_and(char::is_ascii_digit);
            if PUNCT.contains(&chars[i]) && !inner {
                break;
            }
            i += 1;
        }
        let raw: String = chars[start..i].iter().collect();
        push_word(&mut out, &raw);
    }
    out
}

fn punct(c: char) -> Token {
    Token { kind: Kind::Punct(c), text: c.to_string(), norm: c.to_string() }
}

/// A word with its trailing dots and stray quotes split off.
fn push_word(out: &mut Vec<Token>, raw: &str) {
    let trimmed = raw.trim_end_matches(['\'', '’', '‘']);
    let trimmed = trimmed.trim_start_matches(['\'', '’', '‘']);
    let mut word = trimmed;
    let mut dots = 0;
    while let Some(w) = word.strip_suffix('.') {
        let lower = w.to_lowercase();
        if dots == 0 && ABBREVIATIONS.contains(&lower.as_str()) {
            break;
        }
        word = w;
        dots += 1;
    }
    if !word.is_empty() {
        out.push(Token { kind: Kind::Word, text: word.to_owned(), norm: normalize(word) });
    }
    if dots > 0 {
        out.push(punct('.'));
    }
}

fn is_double_quote(c: char) -> bool {
    matches!(c, '"' | '“' | '”' | '„' | '«' | '»' | '`')
}

fn is_quote(c: char) -> bool {
    is_double_quote(c) || matches!(c, '\'' | '‘' | '’')
}

/// A quoted span opening at `i`: its inside and the index after its close.
fn quoted(chars: &[char], i: usize) -> Option<(&[char], usize)> {
    let open = chars[i];
    let closes: &[char] = match open {
        '"' => &['"', '”'],
        '“' => &['”', '"', '“'],
        '”' => &['”'],
        '„' => &['“', '"'],
        '«' => &['»'],
        '`' => &['`'],
        '‘' => &['’', '\''],
        '\'' | '’' => &['\'', '’'],
        _ => return None,
    };
    let single = matches!(open, '\'' | '’' | '‘');
    if single {
        // An apostrophe inside a word ("didn't") opens nothing.
        let prev = if i == 0 { None } else { chars.get(i - 1).copied() };
        if prev.is_some_and(char::is_alphanumeric) {
            return None;
        }
        if chars.get(i + 1).is_none_or(|c| c.is_whitespace()) {
            return None;
        }
    }
    let limit = chars.len().min(i + 1 + MAX_NAME_CHARS);
    let mut j = i + 1;
    while j < limit {
        if closes.contains(&chars[j]) {
            // A closing single quote is followed by a non-letter ("'Fix it's'" keeps going).
            let after = chars.get(j + 1).copied();
            if !single || after.is_none_or(|c| !c.is_alphanumeric()) {
                return Some((&chars[i + 1..j], j + 1));
            }
        }
        j += 1;
    }
    None
}

/// Lower case, curly apostrophes straight, inner whitespace single.
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        match c {
            'A'..='Z' => out.push(c.to_ascii_lowercase()),
            _ if c.is_ascii() => out.push(c),
            '’' | '‘' => out.push('\''),
            _ => out.extend(c.to_lowercase()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(text: &str) -> Vec<String> {
        tokens(text)
            .into_iter()
            .map(|t| match t.kind {
                Kind::Word => t.norm,
                Kind::Name => format!("<{}>", t.text),
                Kind::Punct(c) => format!("{c}"),
            })
            .collect()
    }

    #[test]
    fn names_in_any_quotes_are_one_token() {
        assert_eq!(
            show("I’ve moved “Fix login” to 'Done', e.g. `v1.2` -> «Ready»."),
            ["i've", "moved", "<Fix login>", "to", "<Done>", ",", "e.g.", "<v1.2>", ">", "<Ready>", "."]
        );
        assert_eq!(
            show("Didn't touch Ann's card 'Done? Not yet.' ok"),
            ["didn't", "touch", "ann's", "card", "<Done? Not yet.>", "ok"]
        );
        assert_eq!(show("unclosed \"quote and 'apostrophe"), ["unclosed", "quote", "and", "apostrophe"]);
        assert_eq!(show("$12.50 - €3. €5,000, 12:30"), ["$12.50", "—", "€3", ".", "€5,000", ",", "12:30"]);
    }
}
