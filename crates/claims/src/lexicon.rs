//! The words an app adds to the vocabulary: its entity and field names, its
//! enum values and operations from describe, and the labels of the records
//! the turn wrote (and of the records those refer to).
//!
//! A message names things the way a person does ("the Done list", "high
//! priority", "approved the expense"), so every name is kept as the sequence of
//! tokens the tokenizer makes of it, and found in a message by comparing token
//! sequences: `Fix login!` is found in "moved Fix login! to Done" and in
//! "moved 'fix login!'", never inside "Fix logins".

use crate::token::{self, Kind, Token};
use crate::turn::Turn;
use crate::vocabulary;
use protocol::describe::Describe;
use protocol::schema::{FieldType, StringFormat};
use std::collections::HashMap;

/// What a phrase of the message can stand for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// An entity, by its name or its singular.
    Entity(usize),
    /// A field of an entity, by its name in words ("due date", "paid by").
    Field(usize, usize),
    /// An enum value of a field.
    Value(usize, usize),
    /// An operation, by its name or its name in words.
    Operation(usize),
    /// A record label the turn knows (normalized).
    Label(String),
    /// A word for a background job ("export", "job").
    Job,
}

/// Joins token norms into one key; a unit separator is in no token.
const SEP: char = '\u{1f}';

/// A field as the checker needs it.
#[derive(Debug, Clone)]
pub struct FieldInfo {
    pub name: String,
    pub kind: FieldType,
}

impl FieldInfo {
    pub fn is_date(&self) -> bool {
        matches!(self.kind, FieldType::Datetime | FieldType::String { format: Some(StringFormat::DayKey), .. })
    }
}

#[derive(Debug, Clone)]
pub struct EntityInfo {
    pub name: String,
    pub label: Option<String>,
    pub fields: Vec<FieldInfo>,
}

impl EntityInfo {
    pub fn field(&self, name: &str) -> Option<&FieldInfo> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// A verb the app's own names make: an operation's first word ("approve" of
/// `approve_expense`), or an enum value that is a past participle
/// ("approved", "paid").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Derived {
    pub operation: Option<usize>,
    /// The enum value the verb sets: entity, field, value.
    pub value: Option<(usize, usize, String)>,
}

#[derive(Debug, Clone)]
pub struct OperationInfo {
    pub name: String,
    pub job: bool,
}

/// Phrases and what they stand for, found by their token sequences.
#[derive(Debug, Clone, Default)]
struct Phrases {
    /// Token norms joined by `SEP` → what they stand for.
    keyed: HashMap<String, Vec<Term>>,
    /// A phrase's first token → the lengths of the phrases it opens, longest first.
    lengths: HashMap<String, Vec<usize>>,
    /// A name compared whole (a quoted name): its normalized text → terms.
    wholes: HashMap<String, Vec<Term>>,
}

/// The words an app's describe adds: its entities, fields, enum values and
/// operations. Built once per app; a check adds the turn's labels.
#[derive(Debug, Clone)]
pub struct Words {
    pub entities: Vec<EntityInfo>,
    pub operations: Vec<OperationInfo>,
    phrases: Phrases,
    derived: HashMap<String, Derived>,
    /// The plain forms of derived verbs ("did approve").
    derived_base: HashMap<String, Derived>,
}

/// The app's words and the labels of one turn.
pub struct Lexicon<'a> {
    pub entities: &'a [EntityInfo],
    pub operations: &'a [OperationInfo],
    app: &'a Words,
    labels: Phrases,
}

/// Enum values that are participles without the regular ending.
const IRREGULAR_PARTICIPLES: &[&str] = &["paid", "done", "sent", "spent", "built", "written", "won", "lost", "set"];

/// Irregular past forms of verbs an operation may be named after.
const IRREGULAR_PAST: &[(&str, &[&str])] = &[
    ("pay", &["paid"]),
    ("send", &["sent"]),
    ("run", &["ran"]),
    ("make", &["made"]),
    ("set", &["set"]),
    ("put", &["put"]),
    ("build", &["built"]),
    ("write", &["written", "wrote"]),
    ("take", &["taken", "took"]),
    ("get", &["got"]),
    ("give", &["given", "gave"]),
    ("sell", &["sold"]),
    ("buy", &["bought"]),
    ("split", &["split"]),
    ("spend", &["spent"]),
    ("split", &["split"]),
];

impl Words {
    pub fn new(describe: &Describe) -> Words {
        let mut lex = Words {
            entities: Vec::new(),
            operations: Vec::new(),
            phrases: Phrases::default(),
            derived: HashMap::new(),
            derived_base: HashMap::new(),
        };
        let mut lemmas: Vec<(String, Vec<String>)> = Vec::new();
        for (e, (name, entity)) in describe.entities.iter().enumerate() {
            let fields: Vec<FieldInfo> =
                entity.fields.iter().map(|(n, f)| FieldInfo { name: n.clone(), kind: f.kind.clone() }).collect();
            let words = name.replace('_', " ");
            lex.add(&words, Term::Entity(e));
            lex.add(&singular(&words), Term::Entity(e));
            for (f, field) in fields.iter().enumerate() {
                for words in field_words(&field.name) {
                    lex.add(&words, Term::Field(e, f));
                }
                // "the date of X": whichever date field it has.
                if field.is_date() {
                    lex.add("date", Term::Field(e, f));
                }
                if let FieldType::Enum { values } | FieldType::ListEnum { values } = &field.kind {
                    for value in values {
                        lex.add(value, Term::Value(e, f));
                        if value.contains('_') {
                            lex.add(&value.replace('_', " "), Term::Value(e, f));
                        }
                        let norm = token::normalize(value);
                        if is_participle(&norm) {
                            lex.derived.entry(norm).or_default().value = Some((e, f, value.clone()));
                        }
                    }
                }
            }
            lex.entities.push(EntityInfo { name: name.clone(), label: entity.label.clone(), fields });
        }
        for (o, op) in describe.operations.iter().enumerate() {
            let job = op.executor == "job";
            lex.operations.push(OperationInfo { name: op.name.clone(), job });
            lex.add(&op.name, Term::Operation(o));
            lex.add(&op.name.replace('_', " "), Term::Operation(o));
            let lemma = op.name.split('_').next().unwrap_or_default();
            if job {
                // "the export", "the job": what people call a job; not the rest
                // of its name ("board", "expenses"), which names records too.
                for word in ["job", "jobs", lemma, &format!("{lemma}s")] {
                    lex.add(word, Term::Job);
                }
            }
            // A verb of the core table keeps its meaning ("move_card" is a move).
            if lemma.len() >= 3 && vocabulary::lemma(lemma).is_none() {
                let forms = past_forms(lemma);
                for form in &forms {
                    lex.derived.entry(form.clone()).or_default().operation.get_or_insert(o);
                }
                lemmas.push((lemma.to_owned(), forms));
            }
        }
        for (lemma, forms) in lemmas {
            // "submit": the operation from one form, the status value from another.
            let mut d = Derived::default();
            for f in forms.iter().filter_map(|f| lex.derived.get(f)) {
                d.operation = d.operation.or(f.operation);
                if d.value.is_none() {
                    d.value.clone_from(&f.value);
                }
            }
            lex.derived_base.insert(lemma, d);
        }
        lex
    }

    fn add(&mut self, text: &str, term: Term) {
        self.phrases.add(text, term);
    }
}

impl<'a> Lexicon<'a> {
    /// The app's words, and the labels of the turn that `said` (the message's
    /// text, normalized) may name: a label none of whose words occur in it
    /// cannot be found there, so a long turn costs only what the message names.
    pub fn new(app: &'a Words, turn: &Turn, said: &str) -> Lexicon<'a> {
        let mut labels = Phrases::default();
        // A turn names the same lists and people again and again: each label once.
        let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
        for write in &turn.writes {
            let texts = std::iter::once(&write.label)
                .chain(write.previous_label.iter())
                .chain(write.ref_labels.values().flatten())
                .chain(write.place.iter());
            for label in texts {
                if seen.insert(label.as_str()) && may_be_said(label, said) {
                    let norm = token::normalize(label);
                    if !norm.is_empty() {
                        labels.add(label, Term::Label(norm));
                    }
                }
            }
        }
        Lexicon { entities: &app.entities, operations: &app.operations, app, labels }
    }

    /// Every term the tokens at `i` start, longest first: `(term, length)`.
    /// The last word may carry a possessive ("Fix login's priority").
    pub fn at(&self, tokens: &[Token], i: usize) -> Vec<(&Term, usize)> {
        let mut found = Vec::new();
        self.app.phrases.at(tokens, i, &mut found);
        self.labels.at(tokens, i, &mut found);
        found.sort_by_key(|f| std::cmp::Reverse(f.1));
        found
    }

    /// The verb an app name makes of a past form, if any.
    pub fn derived(&self, word: &str) -> Option<&Derived> {
        self.app.derived.get(word)
    }

    /// The same, from the plain form ("did approve").
    pub fn derived_base(&self, word: &str) -> Option<&Derived> {
        self.app.derived_base.get(word)
    }

    /// The enum fields that have `value` (normalized) among their values, by name.
    pub fn enum_fields(&self, value: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for field in self.entities.iter().flat_map(|e| &e.fields) {
            if let FieldType::Enum { values } | FieldType::ListEnum { values } = &field.kind
                && values
                    .iter()
                    .any(|v| token::normalize(v) == value || token::normalize(&v.replace('_', " ")) == value)
                && !out.contains(&field.name)
            {
                out.push(field.name.clone());
            }
        }
        out
    }
}

impl Phrases {
    fn add(&mut self, text: &str, term: Term) {
        let seq: Vec<String> = token::tokens(text).into_iter().map(|t| t.norm).collect();
        let Some(first) = seq.first().cloned() else { return };
        let len = seq.len();
        let terms = self.keyed.entry(seq.join(&SEP.to_string())).or_default();
        if !terms.contains(&term) {
            terms.push(term.clone());
        }
        let lengths = self.lengths.entry(first).or_default();
        if let Err(at) = lengths.binary_search_by(|l| len.cmp(l)) {
            lengths.insert(at, len);
        }
        // A quoted name is compared whole.
        let wholes = self.wholes.entry(token::normalize(text)).or_default();
        if !wholes.contains(&term) {
            wholes.push(term);
        }
    }

    /// Adds the terms the tokens at `i` start: `(term, length)`.
    fn at<'s>(&'s self, tokens: &[Token], i: usize, found: &mut Vec<(&'s Term, usize)>) {
        let Some(first) = tokens.get(i) else { return };
        if first.kind == Kind::Name {
            if let Some(terms) = self.wholes.get(&first.norm) {
                found.extend(terms.iter().map(|t| (t, 1)));
            }
            return;
        }
        let bare = possessive_free(&first.norm);
        let mut lengths: Vec<usize> = Vec::new();
        for k in [first.norm.as_str(), bare] {
            for &l in self.lengths.get(k).map(Vec::as_slice).unwrap_or_default() {
                if !lengths.contains(&l) {
                    lengths.push(l);
                }
            }
        }
        lengths.sort_unstable_by(|a, b| b.cmp(a));
        let mut key = String::new();
        for len in lengths {
            let Some(span) = tokens.get(i..i + len) else { continue };
            if span.iter().any(|t| t.kind == Kind::Name) {
                continue;
            }
            key.clear();
            for (k, t) in span.iter().enumerate() {
                if k > 0 {
                    key.push(SEP);
                }
                key.push_str(&t.norm);
            }
            let last = span.last().map(|t| possessive_free(&t.norm)).unwrap_or_default();
            let plain = self.keyed.get(&key);
            let possessive = if last.len() < span.last().map(|t| t.norm.len()).unwrap_or_default() {
                let cut = key.len() - (span.last().map(|t| t.norm.len()).unwrap_or_default() - last.len());
                self.keyed.get(&key[..cut])
            } else {
                None
            };
            for terms in [plain, possessive].into_iter().flatten() {
                for t in terms {
                    if !found.iter().any(|(f, l)| *f == t && *l == len) {
                        found.push((t, len));
                    }
                }
            }
        }
    }
}

/// Whether every word of `label` occurs in `said`: a label whose tokens the
/// message holds passes, since each token is inside one of its words.
fn may_be_said(label: &str, said: &str) -> bool {
    token::normalize(label)
        .split(' ')
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .all(|w| said.contains(w))
}

pub fn possessive_free(word: &str) -> &str {
    word.strip_suffix("'s").filter(|w| !w.is_empty()).unwrap_or(word)
}

/// `cards` → `card`, `categories` → `category`, `people` → `person`.
pub fn singular(words: &str) -> String {
    let (head, last) = match words.rsplit_once(' ') {
        Some((h, l)) => (format!("{h} "), l),
        None => (String::new(), words),
    };
    let one = if last == "people" {
        "person".to_owned()
    } else if let Some(stem) = last.strip_suffix("ies") {
        format!("{stem}y")
    } else if ["sses", "xes", "ches", "shes"].iter().any(|s| last.ends_with(s)) {
        last[..last.len() - 2].to_owned()
    } else if let Some(stem) = last.strip_suffix('s').filter(|s| !s.ends_with(['s', 'u', 'i'])) {
        stem.to_owned()
    } else {
        last.to_owned()
    };
    format!("{head}{one}")
}

/// A field's names in words: `due_date` → "due date", "due";
/// `assignees` → "assignees", "assignee"; `paid_by` → "paid by".
pub fn field_words(field: &str) -> Vec<String> {
    let spaced = field.replace('_', " ");
    let mut out = vec![spaced.clone(), singular(&spaced)];
    // The receipt's words for a date field: `due_date` → `due`.
    if let Some(base) = ["_date", "_day", "_at", "_on"].iter().find_map(|s| field.strip_suffix(s)) {
        out.push(base.replace('_', " "));
    }
    out.dedup();
    out
}

fn is_participle(word: &str) -> bool {
    (word.len() >= 4 && word.ends_with("ed") && !word.contains(' ')) || IRREGULAR_PARTICIPLES.contains(&word)
}

/// `approve` → approved; `submit` → submitted, submited; `apply` → applied.
pub fn past_forms(lemma: &str) -> Vec<String> {
    if let Some((_, forms)) = IRREGULAR_PAST.iter().find(|(l, _)| *l == lemma) {
        return forms.iter().map(|f| (*f).to_owned()).collect();
    }
    let mut out = Vec::new();
    if lemma.ends_with('e') {
        out.push(format!("{lemma}d"));
    } else if let Some(stem) = lemma.strip_suffix('y').filter(|s| !s.ends_with(['a', 'e', 'o', 'u'])) {
        out.push(format!("{stem}ied"));
    } else {
        out.push(format!("{lemma}ed"));
        if let Some(last) = lemma.chars().last().filter(|c| !"aeiouwxy".contains(*c)) {
            out.push(format!("{lemma}{last}ed"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_words() {
        assert_eq!(singular("categories"), "category");
        assert_eq!(singular("people"), "person");
        assert_eq!(singular("expenses"), "expense");
        assert_eq!(singular("boxes"), "box");
        assert_eq!(singular("status"), "status");
        assert_eq!(field_words("due_date"), ["due date", "due"]);
        assert_eq!(field_words("assignees"), ["assignees", "assignee"]);
        assert_eq!(past_forms("approve"), ["approved"]);
        assert_eq!(past_forms("submit"), ["submited", "submitted"]);
        assert_eq!(past_forms("apply"), ["applied"]);
        assert_eq!(past_forms("pay"), ["paid"]);
    }
}
