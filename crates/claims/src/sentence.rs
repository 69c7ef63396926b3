//! Sentences, and the statements a sentence is made of.
//!
//! A sentence ends at `.`, `!`, `?` or `;`, never inside a quoted name. Within
//! one, a colon, a dash, a parenthesis or a word like "but" or "so" starts a
//! new statement with its own polarity: in "I could not delete X, so I archived
//! it" the negation stops at "so".

use crate::token::{Kind, Token};
use crate::vocabulary::BREAKS;
use std::ops::Range;

#[derive(Debug, Clone)]
pub struct Sentence {
    pub tokens: Vec<Token>,
    /// It ends with a question mark.
    pub question: bool,
}

pub fn sentences(tokens: Vec<Token>) -> Vec<Sentence> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    // A parenthesis is a sentence of its own, read after the one around it:
    // "Set 'Report' (not 'Reports') to high" keeps "to high" with its verb.
    let mut aside: Vec<Token> = Vec::new();
    let mut asides: Vec<Sentence> = Vec::new();
    let mut depth = 0usize;
    for t in tokens {
        if t.is_punct('(') {
            depth += 1;
            continue;
        }
        if depth > 0 {
            if t.is_punct(')') {
                depth -= 1;
                if depth == 0 && !aside.is_empty() {
                    let aside = std::mem::take(&mut aside);
                    // "Both drafts ('A' and 'B') were submitted": the names are the sentence's.
                    let names = aside.iter().all(|t| {
                        t.kind == Kind::Name || t.is_punct(',') || t.word().is_some_and(|w| matches!(w, "and" | "&"))
                    });
                    if names && aside.iter().any(|t| t.kind == Kind::Name) {
                        current.extend(aside);
                    } else {
                        asides.push(Sentence { tokens: aside, question: false });
                    }
                }
            } else if matches!(t.kind, Kind::Punct('.' | '!' | '?' | ';')) {
                if !aside.is_empty() {
                    asides.push(Sentence { tokens: std::mem::take(&mut aside), question: t.is_punct('?') });
                }
            } else {
                aside.push(t);
            }
            continue;
        }
        let end = matches!(t.kind, Kind::Punct('.' | '!' | '?' | ';'));
        if end {
            let question = t.is_punct('?');
            if !current.is_empty() {
                out.push(Sentence { tokens: std::mem::take(&mut current), question });
            } else if question && let Some(last) = out.last_mut() {
                last.question = true;
            }
            out.append(&mut asides);
            continue;
        }
        if !t.is_punct(')') {
            current.push(t);
        }
    }
    if !aside.is_empty() {
        asides.push(Sentence { tokens: aside, question: false });
    }
    if !current.is_empty() {
        out.push(Sentence { tokens: current, question: false });
    }
    out.append(&mut asides);
    out
}

/// Where a statement starts a new polarity: the ranges of one sentence's tokens.
pub fn segments(tokens: &[Token]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, t) in tokens.iter().enumerate() {
        let hard = matches!(t.kind, Kind::Punct(':' | '—' | '(' | ')' | '[' | ']' | '|'))
            || t.word().is_some_and(|w| BREAKS.contains(&w));
        if hard {
            if i > start {
                out.push(start..i);
            }
            // A break word belongs to what follows ("but I moved …"), a mark to nothing.
            start = if t.kind == Kind::Word { i } else { i + 1 };
        }
    }
    if start < tokens.len() {
        out.push(start..tokens.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::token::tokens;

    fn words(tokens: &[Token]) -> String {
        tokens.iter().map(|t| t.norm.as_str()).collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn sentences_end_outside_names_and_statements_at_breaks() {
        let s = sentences(tokens("Moved 'Done? Not yet.' to Done. Shall I go on? Done: renamed it (twice); ok"));
        let shown: Vec<(String, bool)> = s.iter().map(|s| (words(&s.tokens), s.question)).collect();
        assert_eq!(
            shown,
            [
                ("moved done? not yet. to done".to_owned(), false),
                ("shall i go on".to_owned(), true),
                ("done : renamed it".to_owned(), false),
                ("twice".to_owned(), false),
                ("ok".to_owned(), false)
            ]
        );
        let t = tokens("I could not delete X, so I archived it: done — ok");
        let parts: Vec<String> = segments(&t).into_iter().map(|r| words(&t[r])).collect();
        assert_eq!(parts, ["i could not delete x ,", "so i archived it", "done", "ok"]);
    }
}
