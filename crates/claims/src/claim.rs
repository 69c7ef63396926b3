//! Finding the claims in a message: statements that a change happened.
//!
//! A claim hangs on an anchor: a verb in the past ("moved", "have added",
//! "was deleted", "did move"), a verb the app's names make ("approved" for an
//! `approve_expense` operation or an `approved` status), or a state that only
//! a write makes true ("X is now in Done", "the export is ready"). Whether the
//! anchor is a claim is decided by the words before it in its statement: a
//! negation, a modal or plan, a condition, an opening question, "already",
//! or the person as subject each make it something else. Around the anchor
//! the record (the target) and the values are read: names in quotes first,
//! then labels the turn knows, then plain words.

use crate::language;
use crate::lexicon::{Lexicon, Term};
use crate::markdown::{Mood, Paragraph};
use crate::sentence::{self, Sentence};
use crate::token::{self, Kind, Token};
use crate::value::{self, Reading};
use crate::vocabulary::{self, Claims, Slot, Verb};
use jiff::civil::Date;
use protocol::claim::ClaimKind;
use std::ops::Range;

/// What a claim says happened, before it is matched with the writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    Change(ClaimKind),
    /// An operation was run (which one, if the message names one the app has).
    Run(Option<usize>),
    JobStarted(Option<usize>),
    JobFinished(Option<usize>),
}

impl What {
    pub fn kind(self) -> ClaimKind {
        match self {
            What::Change(kind) => kind,
            What::Run(_) => ClaimKind::Run,
            What::JobStarted(_) | What::JobFinished(_) => ClaimKind::Job,
        }
    }
}

/// A record (or an operation) as the message names it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Target {
    pub text: String,
    pub norm: String,
    /// Names no record in particular ("the list", "3 cards", "everything").
    pub vague: bool,
    /// Named in quotes or by a label the turn knows, not only by plain words.
    pub known: bool,
    /// How many records the name stands for: 2 for "both 'Fix login' cards".
    pub count: usize,
}

/// Which field a value goes to.
#[derive(Debug, Clone, PartialEq)]
pub enum Hint {
    /// These fields (more than one when a word names several: "due" is
    /// `due_date` and `due_day`).
    Field(Vec<String>),
    Slot(Slot),
    Currency,
}

/// One value a claim says was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Said {
    pub text: String,
    pub reading: Reading,
    pub hint: Hint,
    /// Read as something the app knows (a date, an amount, an enum value, a
    /// label of the turn, a quoted name), not only words that followed "to".
    pub known: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub what: What,
    pub entity: Option<usize>,
    pub target: Target,
    /// For a run: the record it ran on, if the message names one.
    pub record: Option<Target>,
    pub values: Vec<Said>,
    /// Where the message says the record was (normalized): "in Backlog", "from Backlog".
    pub qualifier: Option<String>,
    /// A record id the message names.
    pub id: Option<String>,
    /// The message's words for it.
    pub text: String,
    pub slot: Slot,
    /// "assigned Ann to X", "added Ann to X", "removed Ann from X": the value
    /// may be the record and the target the value.
    pub reversible: bool,
    /// The operation whose name made the verb ("approved" of `approve_expense`).
    pub operation: Option<usize>,
}

/// Everything read from one message.
#[derive(Debug, Default)]
pub struct Read {
    pub claims: Vec<Found>,
    /// Some sentence is in a language the checker does not read.
    pub unreadable: bool,
}

/// Reads a message's paragraphs.
pub fn read(paragraphs: &[Paragraph], lex: &Lexicon<'_>, today: Date) -> Read {
    let mut reader = Reader { lex, today, out: Read::default(), last: Vec::new() };
    // A label line's claims without a record ("Moved to Done:"), waiting for
    // the list under it to name the records; and whether a list item did.
    let mut pending: Option<(Vec<Found>, bool)> = None;
    for paragraph in paragraphs {
        let before = reader.out.claims.len();
        reader.paragraph(paragraph);
        let made = reader.out.claims.len() - before;
        if paragraph.label && paragraph.mood == Mood::Plain && made > 0 {
            let new: Vec<Found> = reader.out.claims[before..].to_vec();
            if new.iter().all(|f| f.target.vague) {
                reader.out.claims.truncate(before);
                if let Some((p, false)) = pending.replace((new, false)) {
                    reader.out.claims.extend(p);
                }
                continue;
            }
        }
        let Some((templates, used)) = pending.take() else { continue };
        if paragraph.bullet && made == 0 && paragraph.mood == Mood::Plain {
            let names = reader.names(&paragraph.text);
            for template in &templates {
                for name in &names {
                    let mut f = template.clone();
                    f.text = format!("{} {}", template.text, name.text);
                    f.target = name.clone();
                    reader.out.claims.push(f);
                }
            }
            pending = Some((templates, used || !names.is_empty()));
            continue;
        }
        if paragraph.bullet && paragraph.mood != Mood::Plain {
            pending = Some((templates, used));
            continue;
        }
        if !used {
            // Nothing under it named a record: the claim stands as it was said.
            let at = before.min(reader.out.claims.len());
            let tail = reader.out.claims.split_off(at);
            reader.out.claims.extend(templates);
            reader.out.claims.extend(tail);
        }
    }
    if let Some((p, false)) = pending {
        reader.out.claims.extend(p);
    }
    reader.out
}

struct Reader<'a> {
    lex: &'a Lexicon<'a>,
    today: Date,
    out: Read,
    /// The targets of the last claim, for "it" and "them".
    last: Vec<Target>,
}

impl Reader<'_> {
    /// The claim before was about a job: "it has finished" is the job.
    fn after_job(&self) -> bool {
        self.out.claims.last().is_some_and(|c| matches!(c.what, What::JobStarted(_) | What::JobFinished(_)))
    }
}

/// A verb that can anchor a claim.
#[derive(Debug, Clone)]
enum VerbRef {
    Core(&'static Verb),
    /// An app name made it: an operation, an enum value (entity, field, value), or both.
    Derived {
        operation: Option<usize>,
        value: Option<(usize, usize, String)>,
    },
    /// "X is now …": a state only a write makes true.
    State,
    /// "the export is ready".
    JobReady,
}

#[derive(Debug, Clone)]
struct Anchor {
    at: usize,
    verb: VerbRef,
}

/// Words that end a name written without quotes.
fn stops_name(t: &Token) -> bool {
    match t.kind {
        Kind::Punct(_) | Kind::Name => true,
        Kind::Word => {
            let w = t.norm.as_str();
            vocabulary::PREPOSITIONS.contains(&w)
                || vocabulary::JOINS.contains(&w)
                || vocabulary::BREAKS.contains(&w)
                || vocabulary::AUXILIARIES.contains(&w)
                || matches!(w, "now" | "too" | "also" | "again" | "successfully" | "instead" | "already" | "yet")
        }
    }
}

/// Capitalized words from `k` on, the first one a word that would end a
/// name: "To Do", "In Progress" are names, not prepositions.
fn capital_run(toks: &[Token], k: usize, end: usize) -> usize {
    let capital = |t: &Token| t.kind == Kind::Word && t.text.starts_with(char::is_uppercase) && t.norm != "i";
    let n = toks[k.min(end)..end].iter().take_while(|t| capital(t)).count();
    if n >= 2 && stops_name(&toks[k]) { n } else { 0 }
}

/// Nouns that name no record: where in a list, or the act of writing itself.
const NO_RECORD: &[&str] = &[
    "top",
    "bottom",
    "front",
    "back",
    "end",
    "start",
    "beginning",
    "position",
    "side",
    "everything",
    "anything",
    "nothing",
    "write",
    "writes",
    "request",
    "requests",
    "change",
    "changes",
    "attempt",
    "call",
    "record",
    "records",
    "item",
    "items",
    "entry",
    "entries",
    "one",
    "ones",
    "all",
    "value",
    "values",
    "field",
    "fields",
    "board",
    "app",
    "there",
    "two",
    "three",
    "four",
    "five",
    "several",
    "some",
    "few",
    "many",
    "both",
    "them",
    "rest",
    "others",
];

/// Subjects that are the system, not a person: "the app rejected it".
const SYSTEM: &[&str] = &["app", "system", "guard", "server", "api", "it", "which", "that", "this", "a2app"];

const COPULAS: &[&str] =
    &["is", "are", "'s", "it's", "has", "have", "shows", "sits", "lives", "belongs", "appears", "reads"];

impl Reader<'_> {
    fn paragraph(&mut self, p: &Paragraph) {
        for sentence in sentence::sentences(token::tokens(&p.text)) {
            // A blockquote is someone else's words, in whatever language they wrote.
            if p.mood != Mood::Quoted && language::unreadable(&sentence.tokens) {
                self.out.unreadable = true;
                continue;
            }
            if p.mood != Mood::Plain {
                continue;
            }
            self.sentence(&sentence);
        }
    }

    fn sentence(&mut self, s: &Sentence) {
        let condition = s.tokens.iter().position(|t| t.word().is_some_and(|w| vocabulary::CONDITIONS.contains(&w)));
        let mut last_group: Option<Range<usize>> = None;
        for range in sentence::segments(&s.tokens) {
            let after_colon = range.start > 0 && s.tokens.get(range.start - 1).is_some_and(|t| t.is_punct(':'));
            let before = self.out.claims.len();
            self.segment(s, range.clone(), condition);
            let after = self.out.claims.len();
            if after > before {
                last_group = Some(before..after);
            } else if after_colon && let Some(group) = last_group.clone() {
                let toks = &s.tokens[range.clone()];
                // "Approved two expenses: 'A' and 'B'": the records of the claim before the colon.
                let vague = group.clone().all(|k| self.out.claims.get(k).is_some_and(|c| c.target.vague));
                let names = if vague { self.names_in(toks) } else { Vec::new() };
                if !names.is_empty() && group.end == self.out.claims.len() {
                    let templates: Vec<Found> = self.out.claims.drain(group).collect();
                    let start = self.out.claims.len();
                    for template in &templates {
                        // "Logged an expense: 'Snacks', €64.20, in Meals": its values too.
                        let (values, _) = self.values(toks, 0..toks.len(), template.slot, template.what.kind(), None);
                        for name in &names {
                            let mut f = template.clone();
                            f.text = format!("{}: {}", template.text, render(toks));
                            f.target = name.clone();
                            f.values.extend(values.iter().filter(|v| v.known).cloned());
                            self.out.claims.push(f);
                        }
                    }
                    last_group = Some(start..self.out.claims.len());
                    self.last = names;
                    continue;
                }
                // `Updated "X": list → Done`: the values of the claim before the colon.
                for k in group {
                    let slot = self.out.claims[k].slot;
                    let kind = self.out.claims[k].what.kind();
                    let (values, _) = self.values(toks, 0..toks.len(), slot, kind, None);
                    let values: Vec<Said> = values.into_iter().filter(|v| v.known).collect();
                    self.out.claims[k].values.extend(values);
                }
            }
        }
    }

    fn segment(&mut self, s: &Sentence, range: Range<usize>, condition: Option<usize>) {
        let toks = &s.tokens[range.clone()];
        let mut anchors = self.anchors(toks);
        if anchors.is_empty() {
            anchors.extend(self.state_anchor(toks));
        }
        let question = s.question && opens_question(toks);
        let mut previous_claim: Option<bool> = None;
        let claims_before = self.out.claims.len();
        for n in 0..anchors.len() {
            let a = anchors[n].clone();
            let mut sub_start = if n == 0 { 0 } else { split(toks, anchors[n - 1].at, a.at) };
            let obj_end = match anchors.get(n + 1) {
                Some(next) => split(toks, a.at, next.at).saturating_sub(1).max(a.at + 1),
                None => toks.len(),
            };
            // ", I moved …" starts over: what came before is another statement.
            for k in (sub_start..a.at).rev() {
                let sep = toks[k].is_punct(',') || toks[k].word().is_some_and(|w| vocabulary::JOINS.contains(&w));
                if sep
                    && toks.get(k + 1).and_then(Token::word).is_some_and(|w| matches!(w, "i" | "we" | "i've" | "we've"))
                {
                    sub_start = k + 1;
                    break;
                }
            }
            let global = range.start + a.at;
            let mut claim = !question && condition.is_none_or(|c| c > global);
            let empty_subject = (sub_start..a.at).all(|k| is_filler(&toks[k]));
            if claim {
                claim = match (empty_subject, previous_claim) {
                    // "I didn't move X or delete Y": the second shares the first's subject.
                    (true, Some(p)) if n > 0 => p && self.polarity(toks, sub_start, &a),
                    _ => self.polarity(toks, sub_start, &a),
                };
            }
            previous_claim = Some(claim);
            if claim {
                self.claim(toks, sub_start, a, obj_end);
            }
        }
        // "I could not find 'X', so I created it": "it" is the last record named.
        if self.out.claims.len() == claims_before
            && let Some(named) = self.last_named(toks)
        {
            self.last = vec![named];
        }
    }

    fn last_named(&self, toks: &[Token]) -> Option<Target> {
        (0..toks.len()).rev().find_map(|k| {
            let t = &toks[k];
            if t.kind == Kind::Name {
                return Some(Target {
                    text: t.text.clone(),
                    norm: t.norm.clone(),
                    vague: false,
                    known: true,
                    count: 1,
                });
            }
            self.lex.at(toks, k).into_iter().find_map(|(term, len)| match term {
                Term::Label(norm) => Some(Target {
                    text: render(&toks[k..(k + len).min(toks.len())]),
                    norm: norm.clone(),
                    vague: false,
                    known: true,
                    count: 1,
                }),
                _ => None,
            })
        })
    }

    fn anchors(&self, toks: &[Token]) -> Vec<Anchor> {
        let mut out = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            let Some(w) = t.word() else { continue };
            let prev = if i == 0 { None } else { toks.get(i - 1).and_then(Token::word) };
            let next = toks.get(i + 1).and_then(Token::word);
            // "the deleted card", "to be moved", "being exported": not a finished act.
            if prev.is_some_and(|p| {
                vocabulary::ARTICLES.contains(&p) || matches!(p, "be" | "being" | "to" | "get" | "gets")
            }) {
                // "did move" and "able to move" are read below from the plain form.
                if !(prev == Some("to") && self.managed(toks, i)) {
                    continue;
                }
            }
            // "paid by" names a field, "recorded that …" reports.
            if self.lex.at(toks, i).iter().any(|(t, len)| matches!(t, Term::Field(..)) && *len > 1)
                || (next == Some("that") && matches!(w, "recorded" | "noted" | "logged" | "filed" | "checked"))
            {
                continue;
            }
            if let Some(verb) = vocabulary::past(w) {
                let ok = match verb.lemma {
                    "run" if w == "run" => prev.is_some_and(|p| {
                        matches!(
                            p,
                            "have"
                                | "has"
                                | "had"
                                | "i've"
                                | "we've"
                                | "been"
                                | "was"
                                | "were"
                                | "just"
                                | "successfully"
                        )
                    }),
                    "start" if w == "kicked" => next == Some("off"),
                    "make" => toks[i + 1..].iter().take(4).any(|t| {
                        t.kind == Kind::Name
                            || self.lex.at(toks, i + 1).iter().any(|(t, _)| matches!(t, Term::Entity(_)))
                    }),
                    "set" => !matches!(next, Some("up" | "out" | "aside")) && prev != Some("all"),
                    _ => true,
                };
                if ok && !self.inside_label(toks, i) {
                    out.push(Anchor { at: i, verb: VerbRef::Core(verb) });
                }
                continue;
            }
            if let Some(d) = self.lex.derived(w) {
                // "marked X as paid": the participle is the value of another verb;
                // "rejected expenses": it describes them.
                let describes = self.lex.at(toks, i + 1).iter().any(|(t, _)| matches!(t, Term::Entity(_)));
                if !self.inside_label(toks, i) && prev != Some("as") && !describes {
                    let value = d.value.clone();
                    out.push(Anchor { at: i, verb: VerbRef::Derived { operation: d.operation, value } });
                }
                continue;
            }
            // "did move", "managed to move", "was able to move".
            if prev == Some("did") || (prev == Some("to") && self.managed(toks, i)) {
                if let Some(verb) = vocabulary::lemma(w) {
                    out.push(Anchor { at: i, verb: VerbRef::Core(verb) });
                } else if let Some(d) = self.lex.derived_base(w) {
                    let value = d.value.clone();
                    out.push(Anchor { at: i, verb: VerbRef::Derived { operation: d.operation, value } });
                }
            }
        }
        out
    }

    /// "managed to" or "able to" right before `i`.
    fn managed(&self, toks: &[Token], i: usize) -> bool {
        i >= 2 && toks.get(i - 2).and_then(Token::word).is_some_and(|w| matches!(w, "managed" | "able"))
    }

    /// A past form that is a word inside a label the turn knows ("Added tests").
    fn inside_label(&self, toks: &[Token], i: usize) -> bool {
        (i.saturating_sub(4)..i).any(|s| {
            self.lex.at(toks, s).iter().any(|(t, len)| matches!(t, Term::Label(_)) && *len >= 2 && s + len > i)
        })
    }

    /// "X is now in Done", "the export is ready".
    fn state_anchor(&self, toks: &[Token]) -> Option<Anchor> {
        let copula = toks.iter().position(|t| t.word().is_some_and(|w| COPULAS.contains(&w)))?;
        if toks.iter().any(|t| t.is_word("now")) {
            return Some(Anchor { at: copula, verb: VerbRef::State });
        }
        let job_subject = (0..copula).any(|k| self.lex.at(toks, k).iter().any(|(t, _)| matches!(t, Term::Job)));
        let finished = toks.get(copula + 1).and_then(Token::word).is_some_and(|w| vocabulary::FINISHED.contains(&w));
        (job_subject && finished).then_some(Anchor { at: copula, verb: VerbRef::JobReady })
    }

    /// Whether the anchor, with the words before it, states a fact.
    fn polarity(&self, toks: &[Token], sub_start: usize, a: &Anchor) -> bool {
        let state = matches!(a.verb, VerbRef::State | VerbRef::JobReady);
        // A state's negation may follow its verb: "X is not in Done now".
        let scan_end = if state { toks.len() } else { a.at };
        let mut first_subject = true;
        for k in sub_start..scan_end {
            let Some(w) = toks[k].word() else { continue };
            let next = toks.get(k + 1);
            if w == "no" && next.is_some_and(|n| n.is_punct(',') || n.is_word("problem") || n.is_word("worries")) {
                continue;
            }
            if w == "not" && next.is_some_and(|n| n.is_word("only")) {
                continue;
            }
            if vocabulary::NEGATIONS.contains(&w) || w.ends_with("n't") {
                return false;
            }
            if vocabulary::MODALS.contains(&w) || w.ends_with("'ll") || w.ends_with("'d") {
                return false;
            }
            if vocabulary::EARLIER.contains(&w) {
                return false;
            }
            if first_subject && !vocabulary::JOINS.contains(&w) && !matches!(w, "as" | "like" | "just" | "so") {
                if vocabulary::OTHERS.contains(&w) {
                    return false;
                }
                first_subject = false;
            }
        }
        if !state {
            // "X is assigned to Ann" describes; "X is now assigned", "X was assigned" claim.
            let sub = &toks[sub_start..a.at];
            let present = sub.iter().any(|t| t.word().is_some_and(|w| matches!(w, "is" | "are" | "it's" | "'s")));
            let perfect = sub.iter().any(|t| t.is_word("been"));
            if present && !perfect && !toks.iter().any(|t| t.is_word("now")) {
                return false;
            }
            let after: Vec<&str> = toks[a.at + 1..].iter().take(2).filter_map(Token::word).collect();
            if after.first().is_some_and(|w| matches!(*w, "nothing" | "no" | "none" | "neither")) {
                return false;
            }
            if after.iter().any(|w| matches!(*w, "already" | "previously" | "earlier")) {
                return false;
            }
        }
        true
    }

    /// Reads the target and values around an anchor that is a claim.
    fn claim(&mut self, toks: &[Token], sub_start: usize, a: Anchor, obj_end: usize) {
        let sub: Vec<usize> = (sub_start..a.at).filter(|&k| !is_filler(&toks[k])).collect();
        let passive = (sub_start..a.at).any(|k| {
            toks[k].word().is_some_and(|w| matches!(w, "was" | "were" | "is" | "are" | "been" | "got" | "'s" | "it's"))
        });
        let text = render(&toks[sub_start..obj_end]);
        let (what, slot, implied, entity_hint) = match self.what(toks, &a, sub_start, obj_end) {
            Some(w) => w,
            None => return,
        };
        let state = matches!(a.verb, VerbRef::State | VerbRef::JobReady);
        // Where the record is named: after the verb ("I moved X"), or before it
        // ("X was moved", "X moved to Done", "X is now in Done").
        let subject_range = match (sub.first(), sub.last()) {
            (Some(&first), Some(&last)) => Some(first..last + 1),
            _ => None,
        };
        let next_is_object = toks
            .get(a.at + 1)
            .is_some_and(|t| t.kind == Kind::Name || t.word().is_some_and(|w| !stops_name(t) && w != "now"));
        // `values_from`: where the values start when the record was named
        // before the verb; after the record's name otherwise.
        let (np_range, values_from) = match subject_range {
            Some(r) if passive || state || !next_is_object => (r, Some(a.at + 1)),
            Some(r) => {
                let subject: Vec<&str> = toks[r].iter().filter_map(Token::word).collect();
                if subject.iter().any(|w| SYSTEM.contains(w)) {
                    return;
                }
                (a.at + 1..obj_end, None)
            }
            None => (a.at + 1..obj_end, None),
        };
        let subject_side = values_from.is_some();
        let mut np = self.noun_phrase(toks, np_range.clone(), what.kind(), slot);
        // "three are submitted, one was rejected": a count of records describes what is.
        if subject_side
            && np.entity.is_none()
            && toks[np_range]
                .iter()
                .all(|t| t.word().is_some_and(|w| count_word(w).is_some() || w == "one" || NO_RECORD.contains(&w)))
        {
            return;
        }
        let values_start = values_from.unwrap_or(np.end);
        let (mut values, qualifier) = if values_start < obj_end {
            self.values(toks, values_start..obj_end, slot, what.kind(), np.field.clone())
        } else {
            (Vec::new(), None)
        };
        values.splice(0..0, np.values.drain(..));
        if np.qualifier.is_none() {
            np.qualifier = qualifier;
        }
        if let Some(field) = &np.field {
            for v in values.iter_mut() {
                if v.hint == Hint::Slot(slot) || v.hint == Hint::Slot(Slot::Any) {
                    v.hint = Hint::Field(field.clone());
                }
            }
        }
        values.retain(|v| v.known || !matches!(v.hint, Hint::Slot(Slot::Any) | Hint::Slot(Slot::State)));
        values.extend(implied);
        if state && matches!(a.verb, VerbRef::State) && (values.is_empty() || np.targets.iter().all(|t| t.vague)) {
            return;
        }
        let entity = np.entity.or(entity_hint);
        let mut targets = np.targets;
        let mut record = None;
        match what {
            What::Run(_) | What::JobStarted(_) | What::JobFinished(_) => {
                // The operation was named by the verb or a term; the record, if any, is the target read.
                record = targets.into_iter().find(|t| !t.vague && !self.is_operation_text(&t.norm));
                let name = match what {
                    What::Run(Some(o)) | What::JobStarted(Some(o)) | What::JobFinished(Some(o)) => {
                        self.lex.operations.get(o).map(|op| op.name.clone()).unwrap_or_default()
                    }
                    _ => String::new(),
                };
                targets =
                    vec![Target { norm: token::normalize(&name), text: name, vague: false, known: true, count: 1 }];
            }
            What::Change(_) => {}
        }
        if targets.is_empty() {
            // "Both cards were moved": no name, but a number of records.
            let count = np.count.max(1);
            targets.push(Target { text: String::new(), norm: String::new(), vague: true, known: false, count });
        }
        // "it", "them": the records of the claim before.
        let mut resolved = Vec::new();
        for t in targets {
            if t.norm == "\u{0}pronoun" {
                if self.last.is_empty() {
                    resolved.push(Target { text: t.text, norm: String::new(), vague: true, known: false, count: 1 });
                } else {
                    resolved.extend(self.last.iter().cloned());
                }
            } else {
                resolved.push(t);
            }
        }
        let named: Vec<Target> = resolved.iter().filter(|t| !t.vague).cloned().collect();
        if !named.is_empty() && matches!(what, What::Change(_)) {
            self.last = named;
        }
        let reversible = matches!(what, What::Change(ClaimKind::Create | ClaimKind::Delete)) && resolved.len() == 1
            || slot == Slot::Person;
        for target in resolved {
            self.out.claims.push(Found {
                what,
                entity,
                target,
                record: record.clone(),
                values: values.clone(),
                qualifier: np.qualifier.clone(),
                id: np.id.clone(),
                text: text.clone(),
                slot,
                reversible,
                operation: match a.verb {
                    VerbRef::Derived { operation, .. } => operation,
                    _ => None,
                },
            });
        }
    }

    fn is_operation_text(&self, norm: &str) -> bool {
        self.lex
            .operations
            .iter()
            .any(|o| token::normalize(&o.name) == norm || token::normalize(&o.name.replace('_', " ")) == norm)
    }

    /// What the anchor claims, its slot, values it implies, and an entity it implies.
    fn what(
        &self,
        toks: &[Token],
        a: &Anchor,
        sub_start: usize,
        obj_end: usize,
    ) -> Option<(What, Slot, Vec<Said>, Option<usize>)> {
        let word = toks[a.at].text.clone();
        let around = sub_start..obj_end;
        let operation = self.find_term(toks, around.clone(), |t| matches!(t, Term::Operation(_)));
        let op_index = match operation {
            Some(Term::Operation(o)) => Some(o),
            _ => None,
        };
        let pronoun_subject = toks[sub_start..a.at].iter().any(|t| t.is_word("it"));
        let job_named = self.find_term(toks, around.clone(), |t| matches!(t, Term::Job)).is_some()
            || op_index.is_some_and(|o| self.lex.operations.get(o).is_some_and(|op| op.job))
            || (pronoun_subject && self.after_job());
        let job_op = op_index.filter(|o| self.lex.operations.get(*o).is_some_and(|op| op.job)).or_else(|| {
            let jobs: Vec<usize> = (0..self.lex.operations.len()).filter(|o| self.lex.operations[*o].job).collect();
            match jobs.as_slice() {
                [only] => Some(*only),
                _ => None,
            }
        });
        Some(match &a.verb {
            VerbRef::Core(verb) => match verb.claims {
                Claims::Change(kind, slot) => {
                    let implied = if verb.lemma == "reopen" {
                        vec![Said {
                            text: word,
                            reading: Reading::Flag(false),
                            hint: Hint::Slot(Slot::State),
                            known: true,
                        }]
                    } else {
                        Vec::new()
                    };
                    (What::Change(kind), slot, implied, None)
                }
                Claims::Run => (What::Run(op_index), Slot::Any, Vec::new(), None),
                Claims::JobStarted => {
                    if job_named {
                        (What::JobStarted(job_op), Slot::Any, Vec::new(), None)
                    } else if op_index.is_some() {
                        (What::Run(op_index), Slot::Any, Vec::new(), None)
                    } else {
                        return None;
                    }
                }
                Claims::Finished => {
                    if job_named {
                        (What::JobFinished(job_op), Slot::Any, Vec::new(), None)
                    } else {
                        let done = Said {
                            text: word,
                            reading: Reading::Flag(true),
                            hint: Hint::Slot(Slot::State),
                            known: true,
                        };
                        (What::Change(ClaimKind::Update), Slot::State, vec![done], None)
                    }
                }
            },
            VerbRef::Derived { operation, value } => match (value, *operation) {
                (Some((e, f, value)), _) => {
                    let (e, f) = (*e, *f);
                    let field = self.lex.entities.get(e).and_then(|en| en.fields.get(f)).map(|f| f.name.clone());
                    let said = Said {
                        text: word.clone(),
                        reading: Reading::Words(token::normalize(value)),
                        hint: field.map(|f| Hint::Field(vec![f])).unwrap_or(Hint::Slot(Slot::State)),
                        known: true,
                    };
                    (What::Change(ClaimKind::Update), Slot::State, vec![said], Some(e))
                }
                (None, Some(o)) if self.lex.operations.get(o).is_some_and(|op| op.job) => {
                    (What::JobFinished(Some(o)), Slot::Any, Vec::new(), None)
                }
                (None, o) => (What::Run(o), Slot::Any, Vec::new(), None),
            },
            VerbRef::State => (What::Change(ClaimKind::Update), Slot::Any, Vec::new(), None),
            VerbRef::JobReady => (What::JobFinished(job_op), Slot::Any, Vec::new(), None),
        })
    }

    fn find_term(&self, toks: &[Token], range: Range<usize>, want: impl Fn(&Term) -> bool) -> Option<Term> {
        range
            .filter(|&k| toks[k].kind == Kind::Word || toks[k].kind == Kind::Name)
            .find_map(|k| self.lex.at(toks, k).into_iter().find(|(t, _)| want(t)).map(|(t, _)| t.clone()))
    }

    /// The record a claim names (one or more), its entity, a field named with
    /// it ("the priority of X", "X's due date"), where it was, and its id.
    fn noun_phrase(&self, toks: &[Token], range: Range<usize>, kind: ClaimKind, slot: Slot) -> NounPhrase {
        let end = range.end.min(toks.len());
        let mut i = range.start;
        let mut np = NounPhrase::default();
        // "set its priority": the record of the claim before.
        let mut owner = None;
        // Determiners and heads before the name: "the new card", "the priority of".
        while i < end {
            let t = &toks[i];
            let Some(w) = t.word() else { break };
            if matches!(w, "its" | "their") && owner.is_none() {
                owner = Some(Target {
                    text: t.text.clone(),
                    norm: "\u{0}pronoun".into(),
                    vague: false,
                    known: false,
                    count: 1,
                });
                i += 1;
                continue;
            }
            if let Some(n) = count_word(w) {
                np.count = n;
                i += 1;
                continue;
            }
            if vocabulary::ARTICLES.contains(&w) || matches!(w, "new" | "another" | "each" | "every") {
                i += 1;
                continue;
            }
            // "a €120 expense": the amount is a value, said before the name.
            if let Some((n, code, len)) = value::amount_at(toks, i, false) {
                np.values.push(Said {
                    text: render(&toks[i..i + len]),
                    reading: Reading::Number(n),
                    hint: Hint::Slot(Slot::Any),
                    known: true,
                });
                if let Some(code) = code {
                    np.values.push(Said {
                        text: code.to_uppercase(),
                        reading: Reading::Words(code),
                        hint: Hint::Currency,
                        known: true,
                    });
                }
                i += len;
                continue;
            }
            let terms = self.lex.at(toks, i);
            let label_len =
                terms.iter().filter(|(t, _)| matches!(t, Term::Label(_))).map(|(_, l)| *l).max().unwrap_or(0);
            if let Some((names, len)) = self.fields_at(toks, i)
                && toks.get(i + len).and_then(Token::word).is_some_and(|w| matches!(w, "of" | "for" | "on"))
                && len >= label_len
            {
                np.field = Some(names);
                i += len + 1;
                continue;
            }
            // "the submitted expenses": a state that describes them, not a name.
            if terms.iter().any(|(t, _)| matches!(t, Term::Value(..)))
                && label_len == 0
                && self.lex.at(toks, i + 1).iter().any(|(t, _)| matches!(t, Term::Entity(_)))
            {
                i += 1;
                continue;
            }
            if let Some((Term::Entity(e), len)) = terms.iter().find(|(t, _)| matches!(t, Term::Entity(_)))
                && label_len == 0
            {
                np.entity = Some(*e);
                i += len;
                continue;
            }
            break;
        }
        // The names.
        while i < end {
            let t = &toks[i];
            let before = np.targets.len();
            if t.kind == Kind::Name {
                np.targets.push(Target {
                    text: t.text.clone(),
                    norm: t.norm.clone(),
                    vague: false,
                    known: true,
                    count: 1,
                });
                i += 1;
            } else if t.kind == Kind::Word {
                let terms = self.lex.at(toks, i);
                let label = terms.iter().filter(|(t, _)| matches!(t, Term::Label(_))).max_by_key(|(_, l)| *l);
                let other =
                    terms.iter().filter(|(t, _)| !matches!(t, Term::Label(_))).map(|(_, l)| *l).max().unwrap_or(0);
                let possessive = label.is_some_and(|(_, len)| {
                    toks.get(i + len - 1).is_some_and(|t| t.norm.ends_with("'s"))
                        && toks.get(i + len).is_some_and(|t| t.kind == Kind::Name || !stops_name(t))
                });
                if possessive {
                    // "Ben's 'Taxi to airport'": whose, not which.
                    i += label.map(|(_, l)| *l).unwrap_or(1);
                    continue;
                }
                if let Some((Term::Label(norm), len)) = label
                    && *len >= other
                    && i + len <= end
                {
                    let text = render(&toks[i..i + len]);
                    np.targets.push(Target { text, norm: norm.clone(), vague: false, known: true, count: 1 });
                    i += len;
                } else if let run @ 1.. = capital_run(toks, i, end) {
                    let text = render(&toks[i..i + run]);
                    np.targets.push(Target {
                        text,
                        norm: render_norm(&toks[i..i + run]),
                        vague: false,
                        known: false,
                        count: 1,
                    });
                    i += run;
                } else if vocabulary::PRONOUNS.contains(&t.norm.as_str()) {
                    np.targets.push(Target {
                        text: t.text.clone(),
                        norm: "\u{0}pronoun".into(),
                        vague: false,
                        known: false,
                        count: 1,
                    });
                    i += 1;
                } else if !stops_name(t) {
                    let start = i;
                    let mut words = Vec::new();
                    while i < end && !stops_name(&toks[i]) {
                        let here = self.lex.at(toks, i);
                        let is_head = here.iter().any(|(t, _)| matches!(t, Term::Entity(_) | Term::Field(..)));
                        let is_value = here.iter().any(|(t, _)| matches!(t, Term::Value(..)));
                        if (is_head || is_value) && !words.is_empty() {
                            break;
                        }
                        if is_head && words.is_empty() {
                            break;
                        }
                        words.push(i);
                        i += 1;
                    }
                    if words.is_empty() {
                        break;
                    }
                    // "the parking fee 'Parking'", "Ben's 'Taxi'": words that describe the name.
                    if toks.get(i).is_some_and(|t| t.kind == Kind::Name) && i < end {
                        continue;
                    }
                    let text = render(&toks[start..i]);
                    let norm: Vec<String> = words
                        .iter()
                        .map(|&k| crate::lexicon::possessive_free(&toks[k].norm).to_owned())
                        .filter(|w| !vocabulary::ARTICLES.contains(&w.as_str()))
                        .collect();
                    let vague = norm.iter().all(|w| NO_RECORD.contains(&w.as_str()) || w.parse::<f64>().is_ok());
                    np.targets.push(Target { text, norm: norm.join(" "), vague, known: false, count: 1 });
                } else {
                    break;
                }
            } else {
                break;
            }
            if np.targets.len() == before {
                break;
            }
            // "'X' card", "X's priority".
            while i < end {
                let terms = self.lex.at(toks, i);
                if let Some((Term::Entity(e), len)) = terms.iter().find(|(t, _)| matches!(t, Term::Entity(_))) {
                    np.entity.get_or_insert(*e);
                    i += len;
                } else if np.field.is_none()
                    && let Some((names, len)) = self.fields_at(toks, i)
                    && toks
                        .get(i + len)
                        .and_then(Token::word)
                        .is_some_and(|w| matches!(w, "to" | "from" | "is" | "now"))
                {
                    np.field = Some(names);
                    i += len;
                } else {
                    break;
                }
            }
            // More names: "'A', 'B' and 'C'".
            let mut k = i;
            while k < end && (toks[k].is_punct(',') || toks[k].word().is_some_and(|w| matches!(w, "and" | "&"))) {
                k += 1;
            }
            // "… and the duplicate 'Team lunches'": words before a quoted name describe it.
            if k > i {
                let mut d = k;
                while d < end
                    && d < k + 3
                    && toks[d].word().is_some_and(|w| !vocabulary::NEGATIONS.contains(&w))
                    && !stops_name(&toks[d])
                {
                    d += 1;
                }
                if d > k && toks.get(d).is_some_and(|t| t.kind == Kind::Name) && d < end {
                    k = d;
                }
            }
            let more = k > i
                && toks.get(k).is_some_and(|t| {
                    t.kind == Kind::Name || self.lex.at(toks, k).iter().any(|(t, _)| matches!(t, Term::Label(_)))
                })
                && k < end;
            if more {
                i = k;
            } else {
                break;
            }
        }
        // Where it was: "X in Backlog", "X from Backlog".
        if matches!(kind, ClaimKind::Update | ClaimKind::Delete)
            && let Some(w) = toks.get(i).and_then(Token::word).filter(|_| i < end)
            && matches!(w, "in" | "from" | "on")
        {
            let later_to = toks[i + 1..end].iter().any(|t| t.word().is_some_and(|w| matches!(w, "to" | "into" | "as")));
            if (w == "from" || slot != Slot::Place || later_to || kind == ClaimKind::Delete)
                && let Some((said, next)) = self.phrase(toks, i + 1, end)
            {
                if let Reading::Words(norm) = said.reading {
                    np.qualifier = Some(norm);
                }
                i = next;
            }
        }
        np.id = toks[range.start..end].iter().find(|t| looks_like_id(&t.norm)).map(|t| t.norm.clone());
        if np.targets.is_empty()
            && let Some(owner) = owner
        {
            np.targets.push(owner);
        }
        // "both 'Fix login' cards": one name, two records.
        if let [only] = np.targets.as_mut_slice() {
            only.count = np.count.max(1);
        }
        np.end = i;
        np
    }

    /// The fields a field's name at `i` stands for, and its length.
    fn fields_at(&self, toks: &[Token], i: usize) -> Option<(Vec<String>, usize)> {
        if toks.get(i)?.kind != Kind::Word {
            return None;
        }
        let terms = self.lex.at(toks, i);
        let len = terms.iter().filter(|(t, _)| matches!(t, Term::Field(..))).map(|(_, l)| *l).max()?;
        let mut names: Vec<String> = Vec::new();
        for (t, l) in &terms {
            if let Term::Field(e, f) = t
                && *l == len
                && let Some(name) = self.field_name(*e, *f)
                && !names.contains(&name)
            {
                names.push(name);
            }
        }
        Some((names, len))
    }

    fn field_name(&self, e: usize, f: usize) -> Option<String> {
        self.lex.entities.get(e).and_then(|en| en.fields.get(f)).map(|f| f.name.clone())
    }

    /// The values said in `range`, and a place the record was ("from Backlog").
    fn values(
        &self,
        toks: &[Token],
        range: Range<usize>,
        slot: Slot,
        kind: ClaimKind,
        named: Option<Vec<String>>,
    ) -> (Vec<Said>, Option<String>) {
        let end = range.end.min(toks.len());
        let mut out: Vec<Said> = Vec::new();
        let mut qualifier = None;
        let mut i = range.start;
        let mut field: Option<Vec<String>> = named;
        while i < end {
            let t = &toks[i];
            let w = t.word().unwrap_or("");
            // A field named: "priority to high", "due date Friday", "list → Done".
            if let Some((names, len)) = self.fields_at(toks, i) {
                let name = Some(names);
                let mut k = i + len;
                while k < end
                    && toks[k].word().is_some_and(|w| matches!(w, "to" | "is" | "now" | "set" | "changed" | "of"))
                    || toks.get(k).is_some_and(|t| t.is_punct('>') || t.is_punct('=') || t.is_punct(':'))
                {
                    k += 1;
                }
                let date_field = self.is_date_field(name.as_deref().unwrap_or_default());
                let number_field = self.is_number_field(name.as_deref().unwrap_or_default());
                if let Some((mut said, next)) = self.value_at(toks, k, end, date_field, number_field) {
                    said.hint = name.clone().map(Hint::Field).unwrap_or(Hint::Slot(slot));
                    said.known = true;
                    out.push(said);
                    i = next.max(i + 1);
                    field = None;
                    continue;
                }
                // "high priority": the value was just before.
                if let Some(last) = out.last_mut()
                    && last.hint == Hint::Slot(Slot::Any)
                {
                    last.hint = name.clone().map(Hint::Field).unwrap_or(Hint::Slot(slot));
                }
                field = name;
                i += len;
                continue;
            }
            if t.is_punct('>') {
                if let Some((mut said, next)) = self.value_at(toks, i + 1, end, slot == Slot::Date, false) {
                    said.hint = Hint::Slot(slot);
                    said.known = true;
                    out.push(said);
                    i = next;
                    continue;
                }
                i += 1;
                continue;
            }
            if vocabulary::PREPOSITIONS.contains(&w) {
                let mut k = i + 1;
                while k < end && toks[k].word().is_some_and(|w| vocabulary::ARTICLES.contains(&w)) {
                    k += 1;
                }
                if w == "from" {
                    if let Some((said, next)) = self.phrase(toks, k, end) {
                        if let Reading::Words(norm) = said.reading
                            && qualifier.is_none()
                        {
                            qualifier = Some(norm);
                        }
                        i = next;
                        continue;
                    }
                    i += 1;
                    continue;
                }
                if w == "with"
                    && let Some((Term::Field(..), _)) = self.lex.at(toks, k).first()
                {
                    i = k;
                    continue;
                }
                // A date: "due Friday", "for tomorrow", "to 3 Aug".
                if matches!(w, "due" | "for" | "on" | "by" | "to" | "until" | "at")
                    && let Some((date, len)) = value::date_at(toks, k, self.today).filter(|(_, l)| k + l <= end)
                {
                    let date_slot = w == "due" || slot == Slot::Date || kind == ClaimKind::Create || field.is_some();
                    if date_slot {
                        let hint = match (&field, w) {
                            (Some(f), _) => Hint::Field(f.clone()),
                            (None, "due") => Hint::Field(self.due_fields()),
                            _ => Hint::Slot(Slot::Date),
                        };
                        out.push(Said {
                            text: render(&toks[k..k + len]),
                            reading: Reading::Date(date),
                            hint,
                            known: true,
                        });
                    }
                    i = k + len;
                    continue;
                }
                if let Some((n, code, len)) = value::amount_at(toks, k, field.is_some() && w == "to") {
                    let hint = field.clone().map(Hint::Field).unwrap_or(Hint::Slot(Slot::Any));
                    out.push(Said { text: render(&toks[k..k + len]), reading: Reading::Number(n), hint, known: true });
                    if let Some(code) = code {
                        out.push(Said {
                            text: code.to_uppercase(),
                            reading: Reading::Words(code),
                            hint: Hint::Currency,
                            known: true,
                        });
                    }
                    i = k + len;
                    continue;
                }
                let hint = match w {
                    "as" => Hint::Slot(Slot::State),
                    "to" | "into" | "onto" | "in" | "under" | "of" if slot == Slot::Label => Hint::Slot(Slot::Label),
                    "to" | "into" | "onto" | "in" | "under" | "of" => match (slot, kind) {
                        (_, ClaimKind::Create) => Hint::Slot(Slot::Place),
                        (Slot::Place | Slot::Person, _) => Hint::Slot(slot),
                        // "is now in Done": where it is.
                        (_, _) if matches!(w, "in" | "into" | "onto" | "under") => Hint::Slot(Slot::Place),
                        _ => Hint::Slot(Slot::Any),
                    },
                    "for" if kind == ClaimKind::Create => Hint::Slot(Slot::Person),
                    "for" | "with" | "by" => Hint::Slot(Slot::Any),
                    _ => {
                        i += 1;
                        continue;
                    }
                };
                let hint = match (&field, hint) {
                    (Some(f), Hint::Slot(Slot::Any | Slot::State)) => Hint::Field(f.clone()),
                    (_, h) => h,
                };
                if let Some((mut said, next)) = self.phrase(toks, k, end) {
                    said.hint = hint.clone();
                    // "to Done" is a place called Done, not a state.
                    if matches!(hint, Hint::Slot(Slot::Place | Slot::Person | Slot::Label))
                        && matches!(said.reading, Reading::Flag(_))
                    {
                        said.reading = Reading::Words(token::normalize(&said.text));
                    }
                    out.push(said);
                    i = next;
                    // "to Ann and Bob"
                    while i + 1 < end
                        && (toks[i].word().is_some_and(|w| matches!(w, "and" | "&")) || toks[i].is_punct(','))
                    {
                        match self.phrase(toks, i + 1, end) {
                            Some((mut more, next)) if more.known => {
                                more.hint = hint.clone();
                                out.push(more);
                                i = next;
                            }
                            _ => break,
                        }
                    }
                    continue;
                }
                i = k.max(i + 1);
                continue;
            }
            // An amount anywhere: "€42.50".
            if let Some((n, code, len)) = value::amount_at(toks, i, false) {
                let hint = field.clone().map(Hint::Field).unwrap_or(Hint::Slot(Slot::Any));
                out.push(Said { text: render(&toks[i..i + len]), reading: Reading::Number(n), hint, known: true });
                if let Some(code) = code {
                    out.push(Said {
                        text: code.to_uppercase(),
                        reading: Reading::Words(code),
                        hint: Hint::Currency,
                        known: true,
                    });
                }
                i += len;
                continue;
            }
            // An enum value or a state word without a preposition: "marked X high priority", "X is now done".
            if t.kind == Kind::Word || t.kind == Kind::Name {
                let terms = self.lex.at(toks, i);
                if let Some((Term::Value(e, f), len)) = terms.iter().find(|(t, _)| matches!(t, Term::Value(..))) {
                    let hint = self.field_name(*e, *f).map(|f| Hint::Field(vec![f])).unwrap_or(Hint::Slot(Slot::Any));
                    out.push(Said {
                        text: render(&toks[i..i + len]),
                        reading: Reading::Words(render_norm(&toks[i..i + len])),
                        hint,
                        known: true,
                    });
                    i += len;
                    continue;
                }
                if let Some(flag) = flag_word(toks, i) {
                    out.push(Said {
                        text: render(&toks[i..i + flag.1]),
                        reading: Reading::Flag(flag.0),
                        hint: Hint::Slot(Slot::State),
                        known: true,
                    });
                    i += flag.1;
                    continue;
                }
                // "is now called 'QA'": its label.
                if matches!(w, "called" | "named" | "titled")
                    && let Some((mut said, next)) = self.phrase(toks, i + 1, end)
                {
                    said.hint = Hint::Slot(Slot::Label);
                    said.known = true;
                    out.push(said);
                    i = next;
                    continue;
                }
            }
            i += 1;
        }
        (out, qualifier)
    }

    fn is_date_field(&self, names: &[String]) -> bool {
        names.iter().any(|n| self.lex.entities.iter().any(|e| e.field(n).is_some_and(|f| f.is_date())))
    }

    fn is_number_field(&self, names: &[String]) -> bool {
        names.iter().any(|n| {
            self.lex
                .entities
                .iter()
                .any(|e| e.field(n).is_some_and(|f| matches!(f.kind, protocol::schema::FieldType::Number { .. })))
        })
    }

    /// The date fields a "due" names.
    fn due_fields(&self) -> Vec<String> {
        let mut out = Vec::new();
        for e in self.lex.entities {
            for f in e.fields.iter().filter(|f| f.is_date()) {
                if crate::lexicon::field_words(&f.name).iter().any(|w| w == "due") && !out.contains(&f.name) {
                    out.push(f.name.clone());
                }
            }
        }
        out
    }

    /// A value right after a field's name: a date, a number, or a phrase.
    fn value_at(&self, toks: &[Token], k: usize, end: usize, date: bool, number: bool) -> Option<(Said, usize)> {
        if k >= end {
            return None;
        }
        if date && let Some((d, len)) = value::date_at(toks, k, self.today).filter(|(_, l)| k + l <= end) {
            return Some((
                Said {
                    text: render(&toks[k..k + len]),
                    reading: Reading::Date(d),
                    hint: Hint::Slot(Slot::Date),
                    known: true,
                },
                k + len,
            ));
        }
        if let Some((n, _, len)) = value::amount_at(toks, k, number) {
            return Some((
                Said {
                    text: render(&toks[k..k + len]),
                    reading: Reading::Number(n),
                    hint: Hint::Slot(Slot::Any),
                    known: true,
                },
                k + len,
            ));
        }
        if let Some((flag, len)) = flag_word(toks, k) {
            return Some((
                Said {
                    text: render(&toks[k..k + len]),
                    reading: Reading::Flag(flag),
                    hint: Hint::Slot(Slot::State),
                    known: true,
                },
                k + len,
            ));
        }
        self.phrase(toks, k, end)
    }

    /// A value phrase at `k`: a quoted name, a label or enum value the app
    /// knows, a date, or plain words up to the next preposition.
    fn phrase(&self, toks: &[Token], k: usize, end: usize) -> Option<(Said, usize)> {
        let mut k = k;
        while k < end && toks[k].word().is_some_and(|w| vocabulary::ARTICLES.contains(&w)) {
            k += 1;
        }
        let t = toks.get(k).filter(|_| k < end)?;
        if t.kind == Kind::Name {
            let said = Said {
                text: t.text.clone(),
                reading: Reading::Words(t.norm.clone()),
                hint: Hint::Slot(Slot::Any),
                known: true,
            };
            return Some((said, skip_head(self, toks, k + 1, end)));
        }
        if t.kind != Kind::Word {
            return None;
        }
        if let Some((d, len)) = value::date_at(toks, k, self.today).filter(|(_, l)| k + l <= end) {
            return Some((
                Said {
                    text: render(&toks[k..k + len]),
                    reading: Reading::Date(d),
                    hint: Hint::Slot(Slot::Date),
                    known: true,
                },
                k + len,
            ));
        }
        let terms = self.lex.at(toks, k);
        if let Some((term, len)) = terms.iter().find(|(t, _)| matches!(t, Term::Label(_) | Term::Value(..)))
            && k + len <= end
        {
            let norm = match term {
                Term::Label(norm) => norm.clone(),
                _ => render_norm(&toks[k..k + len]),
            };
            let said = Said {
                text: render(&toks[k..k + len]),
                reading: Reading::Words(norm),
                hint: Hint::Slot(Slot::Any),
                known: true,
            };
            return Some((said, skip_head(self, toks, k + len, end)));
        }
        if let Some((flag, len)) = flag_word(toks, k) {
            return Some((
                Said {
                    text: render(&toks[k..k + len]),
                    reading: Reading::Flag(flag),
                    hint: Hint::Slot(Slot::State),
                    known: true,
                },
                k + len,
            ));
        }
        let run = capital_run(toks, k, end);
        if run > 0 {
            let said = Said {
                text: render(&toks[k..k + run]),
                reading: Reading::Words(render_norm(&toks[k..k + run])),
                hint: Hint::Slot(Slot::Any),
                known: false,
            };
            return Some((said, skip_head(self, toks, k + run, end)));
        }
        // Plain words, up to six, without the entity word that may close them ("the Travel category").
        let start = k;
        let mut words = Vec::new();
        while k < end && words.len() < 6 && !stops_name(&toks[k]) {
            let head = self.lex.at(toks, k).iter().any(|(t, _)| matches!(t, Term::Entity(_) | Term::Field(..)));
            if head {
                break;
            }
            words.push(toks[k].norm.clone());
            k += 1;
        }
        let next = skip_head(self, toks, k, end);
        if words.is_empty() || words.iter().all(|w| NO_RECORD.contains(&w.as_str())) {
            // "to the top of To Do": the place is after "of".
            if !words.is_empty() && toks.get(k).is_some_and(|t| t.is_word("of")) {
                return self.phrase(toks, k + 1, end);
            }
            return None;
        }
        let said = Said {
            text: render(&toks[start..k]),
            reading: Reading::Words(words.join(" ")),
            hint: Hint::Slot(Slot::Any),
            known: false,
        };
        Some((said, next.max(k)))
    }

    /// The names of a list item under a label: "- Fix login", "- 'A' and 'B'".
    fn names(&self, text: &str) -> Vec<Target> {
        self.names_in(&token::tokens(text))
    }

    fn names_in(&self, toks: &[Token]) -> Vec<Target> {
        let np = self.noun_phrase(toks, 0..toks.len(), ClaimKind::Update, Slot::Any);
        np.targets.into_iter().filter(|t| !t.vague && t.norm != "\u{0}pronoun").collect()
    }
}

#[derive(Debug, Default)]
struct NounPhrase {
    targets: Vec<Target>,
    /// "both", "three": how many records the phrase says.
    count: usize,
    /// Values said within the name: "a €120 expense".
    values: Vec<Said>,
    entity: Option<usize>,
    field: Option<Vec<String>>,
    qualifier: Option<String>,
    id: Option<String>,
    end: usize,
}

/// Skips an entity or field word that closes a value: "the Done list".
fn skip_head(reader: &Reader<'_>, toks: &[Token], k: usize, end: usize) -> usize {
    if k < end
        && let Some((_, len)) = reader.lex.at(toks, k).into_iter().find(|(t, _)| matches!(t, Term::Entity(_)))
    {
        return k + len;
    }
    k
}

/// "done", "not done", "complete": a boolean said in words, and its length.
fn flag_word(toks: &[Token], i: usize) -> Option<(bool, usize)> {
    let w = toks.get(i)?.word()?;
    let next = toks.get(i + 1).and_then(Token::word);
    if matches!(w, "not" | "un") && next.is_some_and(|n| vocabulary::TRUE_WORDS.contains(&n)) {
        return Some((false, 2));
    }
    if vocabulary::FALSE_WORDS.contains(&w) && w != "no" {
        return Some((false, 1));
    }
    if vocabulary::TRUE_WORDS.contains(&w) && !matches!(w, "yes" | "true") {
        return Some((true, 1));
    }
    None
}

/// Where the statement of one anchor ends and the next one's begins: after
/// the last "and", "then" or comma between them.
fn split(toks: &[Token], from: usize, to: usize) -> usize {
    (from + 1..to)
        .rev()
        .find(|&k| toks[k].is_punct(',') || toks[k].word().is_some_and(|w| vocabulary::JOINS.contains(&w)))
        .map(|k| k + 1)
        .unwrap_or(to)
}

fn is_filler(t: &Token) -> bool {
    match &t.kind {
        Kind::Punct(_) => true,
        Kind::Name => false,
        Kind::Word => {
            let w = t.norm.as_str();
            vocabulary::FILLERS.contains(&w)
                || vocabulary::AUXILIARIES.contains(&w)
                || vocabulary::JOINS.contains(&w)
                || (w.len() > 4 && w.ends_with("ly") && !w.ends_with("ply"))
        }
    }
}

fn opens_question(toks: &[Token]) -> bool {
    toks.iter()
        .filter_map(Token::word)
        .find(|w| !vocabulary::JOINS.contains(w) && !matches!(*w, "so" | "also" | "and" | "or" | "then" | "but"))
        .is_some_and(|w| vocabulary::QUESTION_OPENERS.contains(&w))
}

/// "both", "two", "3": how many records a phrase names.
fn count_word(w: &str) -> Option<usize> {
    Some(match w {
        "both" | "two" => 2,
        "three" => 3,
        "four" => 4,
        "five" => 5,
        _ => return w.parse().ok().filter(|n| (2..=50).contains(n)),
    })
}

/// A record id: 15 characters of `[a-z0-9]` with a digit in them.
fn looks_like_id(word: &str) -> bool {
    word.len() == 15
        && word.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && word.bytes().any(|b| b.is_ascii_digit())
}

/// Tokens back into words for a person: names in quotes, marks against the word before.
pub fn render(toks: &[Token]) -> String {
    let mut out = String::new();
    for t in toks {
        let glue = matches!(t.kind, Kind::Punct(',' | '.' | ':' | ';' | '!' | '?' | ')'));
        if !out.is_empty() && !glue && !out.ends_with('(') {
            out.push(' ');
        }
        match t.kind {
            Kind::Name => {
                out.push('"');
                out.push_str(&t.text);
                out.push('"');
            }
            Kind::Punct('>') => out.push('→'),
            _ => out.push_str(&t.text),
        }
    }
    out
}

fn render_norm(toks: &[Token]) -> String {
    toks.iter().map(|t| t.norm.as_str()).collect::<Vec<_>>().join(" ")
}
