//! Each claim against the turn's writes: backed by one, or not, and why.
//!
//! A claim is backed by a stored write of a kind that makes it true, to the
//! record it names, with the values it names. The reasons it is not are
//! tried in an order that tells the agent the most: the record was written
//! with another value (`value_differs`), the claimed change went to another
//! record (`wrong_target`), the only attempt was refused (`refused_write`), a
//! job was started but has not succeeded (`job_not_finished`), or nothing
//! like it was written (`no_write`).
//!
//! NAMESAKE RULE: records are matched by label, but a label is not an
//! identity. When the message says where the record was ("Fix login in
//! Backlog", "from Backlog") or gives its id, and the written record with that
//! label was elsewhere, the claim is about its namesake, which was not
//! written: `wrong_target`, never backed by the other one.

use crate::claim::{Found, Hint, Said, Target, What};
use crate::lexicon::{EntityInfo, Lexicon};
use crate::token;
use crate::turn::{Action, Outcome, Turn, Write};
use crate::value::Reading;
use crate::vocabulary::{self, Slot};
use jiff::tz::TimeZone;
use protocol::ErrorCode;
use protocol::claim::{ClaimKind, Reason};
use protocol::operation::JobState;
use protocol::schema::{FieldType, StringFormat};
use serde_json::Value;
use std::cell::OnceCell;
use std::collections::{HashMap, HashSet};

/// A claim's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    pub backed: bool,
    /// The backing write, or the one the system has instead.
    pub write: Option<usize>,
    pub reason: Option<Reason>,
    /// Per value of the claim: the field it was matched to and, when it
    /// differs, the stored value in words.
    pub values: Vec<(Option<String>, Option<String>)>,
    pub violations: Vec<ErrorCode>,
    pub job_state: Option<JobState>,
    pub entity: Option<String>,
    /// The kind, when the claim was read the other way round ("added Ann to X" is an update).
    pub kind: Option<ClaimKind>,
}

impl Judgement {
    fn new(reason: Option<Reason>, write: Option<usize>, found: &Found) -> Judgement {
        Judgement {
            backed: reason.is_none(),
            write,
            reason,
            values: vec![(None, None); found.values.len()],
            violations: Vec::new(),
            job_state: None,
            entity: None,
            kind: None,
        }
    }
}

/// How one value fits one record's writes.
#[derive(Debug, Clone, PartialEq)]
enum Fit {
    Match(String),
    /// Written, with another value: field, stored words, the write.
    Differs(String, String, usize),
    /// The record's writes did not name any field it could go to.
    Absent(Option<String>),
    /// The app has no field it could go to: not a checkable value.
    Unchecked,
}

pub struct Matcher<'a> {
    turn: &'a Turn,
    lex: &'a Lexicon<'a>,
    zone: &'a TimeZone,
    /// Per write, normalized once: its label and its label before.
    labels: Vec<String>,
    previous: Vec<Option<String>>,
    /// Per write: its entity's index in the lexicon.
    entities: Vec<Option<usize>>,
    /// The writes ordered by record (entity, id), for one record's writes at once.
    by_record: Vec<usize>,
    /// The writes ordered by label, for the writes a name names.
    by_label: Vec<usize>,
    /// The writes that renamed their record.
    renames: Vec<usize>,
    /// Every label a write refers to (a list, a person), normalized, sorted.
    referred: Vec<String>,
    /// A value in a key's form → the stored writes holding it; built when
    /// a claim names no record and the turn must be searched by value.
    holding: OnceCell<HashMap<String, Vec<usize>>>,
}

/// How many records, newest first, a claim that names none is compared with
/// for what the system has instead, once none holds its values.
const NEAREST: usize = 16;

impl<'a> Matcher<'a> {
    pub fn new(turn: &'a Turn, lex: &'a Lexicon<'a>, zone: &'a TimeZone) -> Matcher<'a> {
        let writes = &turn.writes;
        let labels = writes.iter().map(|w| bare(&token::normalize(&w.label))).collect();
        let previous = writes.iter().map(|w| w.previous_label.as_deref().map(|p| bare(&token::normalize(p)))).collect();
        let entities = writes.iter().map(|w| lex.entities.iter().position(|e| e.name == w.entity)).collect();
        let mut by_record: Vec<usize> = (0..writes.len()).collect();
        by_record.sort_by(|&a, &b| (&writes[a].entity, &writes[a].id, a).cmp(&(&writes[b].entity, &writes[b].id, b)));
        let labels: Vec<String> = labels;
        let mut by_label: Vec<usize> = (0..writes.len()).collect();
        by_label.sort_by(|&a, &b| (&labels[a], a).cmp(&(&labels[b], b)));
        let previous: Vec<Option<String>> = previous;
        let renames = (0..writes.len()).filter(|&i| previous[i].is_some()).collect();
        // The lists and people a long turn refers to are few: each normalized once.
        let mut raw: Vec<&str> =
            writes.iter().flat_map(|w| w.ref_labels.values().flatten()).map(String::as_str).collect();
        raw.sort_unstable();
        raw.dedup();
        let mut referred: Vec<String> = raw.into_iter().map(|l| bare(&token::normalize(l))).collect();
        referred.sort_unstable();
        referred.dedup();
        Matcher {
            turn,
            lex,
            zone,
            labels,
            previous,
            entities,
            by_record,
            by_label,
            renames,
            referred,
            holding: OnceCell::new(),
        }
    }

    /// The writes of one record, oldest first.
    fn of_record(&self, entity: &str, id: &str) -> &[usize] {
        let writes = &self.turn.writes;
        let key = |&i: &usize| (writes[i].entity.as_str(), writes[i].id.as_str());
        let start = self.by_record.partition_point(|i| key(i) < (entity, id));
        let end = self.by_record.partition_point(|i| key(i) <= (entity, id));
        self.by_record.get(start..end).unwrap_or_default()
    }

    /// Judges every claim; a write that backs one claim is not another's `wrong_target`.
    pub fn judge(&self, claims: &[Found]) -> Vec<Judgement> {
        let swapped: Vec<Option<Found>> = claims.iter().map(|c| self.swap(c)).collect();
        let claims: Vec<&Found> = claims.iter().zip(&swapped).map(|(c, s)| s.as_ref().unwrap_or(c)).collect();
        // A claim said twice is judged once: a long message repeating itself
        // costs what its distinct claims cost, not claims × writes.
        let keys: Vec<String> = claims.iter().map(|c| key(c)).collect();
        let mut seen: HashMap<&str, usize> = HashMap::new();
        let mut out: Vec<Judgement> = Vec::with_capacity(claims.len());
        for (n, c) in claims.iter().enumerate() {
            let j = match seen.get(keys[n].as_str()) {
                Some(&first) => out[first].clone(),
                None => {
                    seen.insert(&keys[n], n);
                    self.judge_one(c)
                }
            };
            out.push(j);
        }
        for ((j, s), c) in out.iter_mut().zip(&swapped).zip(&claims) {
            if s.is_some() {
                j.kind = Some(ClaimKind::Update);
                j.values = vec![(None, None); c.values.len()];
            }
        }
        let used: HashSet<usize> = out.iter().filter(|j| j.backed).filter_map(|j| j.write).collect();
        let mut elsewhere: HashMap<&str, Option<usize>> = HashMap::new();
        for (n, (c, j)) in claims.iter().zip(out.iter_mut()).enumerate() {
            let c: &Found = c;
            if j.reason == Some(Reason::NoWrite)
                && let What::Change(kind) = c.what
                && let Some(other) =
                    *elsewhere.entry(keys[n].as_str()).or_insert_with(|| self.elsewhere(c, kind, &used))
            {
                *j = Judgement::new(Some(Reason::WrongTarget), Some(other), c);
            }
        }
        for (c, j) in claims.iter().zip(out.iter_mut()) {
            let c: &Found = c;
            if j.entity.is_none() {
                j.entity = c.entity.and_then(|e| self.lex.entities.get(e).map(|e| e.name.clone())).or_else(|| {
                    j.write.and_then(|w| self.turn.writes.get(w)).map(|w| w.entity.clone()).filter(|e| !e.is_empty())
                });
            }
        }
        out
    }

    /// "added Ann to X", "assigned Ann to X": when the target is a record the
    /// turn only refers to (a person, a list) and the value one it wrote, the
    /// claim is an update of the value's record.
    fn swap<'b>(&self, c: &'b Found) -> Option<Found> {
        if !c.reversible || c.target.vague || matches!(c.what, What::Change(ClaimKind::Delete)) {
            return None;
        }
        let target = bare(&c.target.norm);
        let referred = self.referred.binary_search(&target).is_ok();
        // "added the docs label to X": a value of a list field, not a record.
        let value_of = self.lex.enum_fields(&target);
        let written = !self.labelled(&target).is_empty();
        if written || (!referred && value_of.is_empty()) {
            return None;
        }
        // The value that names a record the turn wrote is the record.
        let words = |v: &'b Said| match &v.reading {
            Reading::Words(norm) => Some(norm),
            _ => None,
        };
        let (k, value, norm) = c
            .values
            .iter()
            .enumerate()
            .find_map(|(k, v)| words(v).filter(|n| !self.labelled(&bare(n)).is_empty()).map(|n| (k, v, n)))
            .or_else(|| {
                c.values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| matches!(v.hint, Hint::Slot(Slot::Place | Slot::Person)))
                    .find_map(|(k, v)| words(v).map(|n| (k, v, n)))
            })?;
        let mut values: Vec<Said> =
            c.values.iter().enumerate().filter(|(i, _)| *i != k).map(|(_, v)| v.clone()).collect();
        values.push(Said {
            text: c.target.text.clone(),
            reading: Reading::Words(c.target.norm.clone()),
            hint: if value_of.is_empty() { Hint::Slot(Slot::Person) } else { Hint::Field(value_of) },
            known: true,
        });
        Some(Found {
            what: What::Change(ClaimKind::Update),
            entity: None,
            target: Target { text: value.text.clone(), norm: norm.clone(), vague: false, known: value.known, count: 1 },
            values,
            reversible: false,
            ..c.clone()
        })
    }

    fn judge_one(&self, c: &Found) -> Judgement {
        match c.what {
            What::Change(kind) => {
                let j = self.change(c, kind);
                if j.backed || !c.reversible || j.reason != Some(Reason::NoWrite) {
                    return j;
                }
                match self.reversed(c) {
                    Some(mut r) if r.backed => {
                        r.kind = Some(ClaimKind::Update);
                        r
                    }
                    _ => j,
                }
            }
            What::Run(op) => self.run(c, op),
            What::JobStarted(op) => self.job(c, op, false),
            What::JobFinished(op) => self.job(c, op, true),
        }
    }

    fn entity_of(&self, i: usize) -> Option<&EntityInfo> {
        self.entities.get(i).copied().flatten().and_then(|e| self.lex.entities.get(e))
    }

    fn entity_ok(&self, c: &Found, w: &Write) -> bool {
        c.entity.is_none_or(|e| self.lex.entities.get(e).is_some_and(|en| en.name == w.entity))
    }

    fn names(&self, target: &Target, i: usize) -> bool {
        if target.vague {
            return true;
        }
        let t = bare(&target.norm);
        self.named(&t, i)
    }

    /// Whether write `i` is of the record named `t` (normalized, without article).
    fn named(&self, t: &str, i: usize) -> bool {
        self.labels[i] == t || self.previous[i].as_deref() == Some(t) || self.turn.writes[i].id.eq_ignore_ascii_case(t)
    }

    /// The writes that may be about the target: those naming it, or all for a vague one.
    fn candidates(&self, target: &Target) -> Vec<usize> {
        if target.vague {
            return (0..self.turn.writes.len()).collect();
        }
        let t = bare(&target.norm);
        let mut out: Vec<usize> = self.labelled(&t).to_vec();
        out.extend(self.renames.iter().copied().filter(|&i| self.previous[i].as_deref() == Some(t.as_str())));
        // An id: 15 characters of [a-z0-9].
        if t.len() == 15 && t.bytes().all(|b| b.is_ascii_alphanumeric()) {
            out.extend((0..self.turn.writes.len()).filter(|&i| self.turn.writes[i].id.eq_ignore_ascii_case(&t)));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The writes whose label is `t`, in write order.
    fn labelled(&self, t: &str) -> &[usize] {
        let start = self.by_label.partition_point(|&i| self.labels[i].as_str() < t);
        let end = self.by_label.partition_point(|&i| self.labels[i].as_str() <= t);
        self.by_label.get(start..end).unwrap_or_default()
    }

    /// The message says where the record was, or its id, and this write's record was not there.
    fn namesake(&self, c: &Found, i: usize) -> bool {
        if let Some(id) = &c.id
            && !self.turn.writes[i].id.eq_ignore_ascii_case(id)
        {
            return true;
        }
        match &c.qualifier {
            Some(q) if !self.turn.writes[i].place.is_empty() => {
                let q = bare(q);
                !self.turn.writes[i].place.iter().any(|p| bare(&token::normalize(p)) == q)
            }
            _ => false,
        }
    }

    fn change(&self, c: &Found, kind: ClaimKind) -> Judgement {
        let writes = &self.turn.writes;
        let mut matching: Vec<usize> = self
            .candidates(&c.target)
            .into_iter()
            .filter(|&i| compatible(kind, writes[i].action) && self.entity_ok(c, &writes[i]))
            .collect();
        // A claim that names no record: the records holding its first value,
        // then the newest few for what the system has instead.
        if c.target.vague
            && let Some(holding) = c.values.first().and_then(|v| self.holding(v))
        {
            let hold: HashSet<(&str, &str)> =
                holding.iter().map(|&i| (writes[i].entity.as_str(), writes[i].id.as_str())).collect();
            let (mut first, rest): (Vec<usize>, Vec<usize>) =
                matching.iter().partition(|&&i| hold.contains(&(writes[i].entity.as_str(), writes[i].id.as_str())));
            let mut newest: Vec<usize> = Vec::new();
            let mut records: HashSet<(&str, &str)> = HashSet::new();
            for &i in rest.iter().rev() {
                if records.len() >= NEAREST {
                    break;
                }
                records.insert((writes[i].entity.as_str(), writes[i].id.as_str()));
                newest.push(i);
            }
            newest.reverse();
            // Records are tried newest first: the holders last in order, so first.
            first.sort_unstable();
            newest.extend(first);
            matching = newest;
        }
        let mut records: Vec<(&str, &str)> = Vec::new();
        let mut seen: HashSet<(&str, &str)> = HashSet::new();
        let mut namesakes: Vec<usize> = Vec::new();
        for &i in matching.iter().rev() {
            let w = &writes[i];
            if !w.is_stored() || seen.contains(&(w.entity.as_str(), w.id.as_str())) {
                continue;
            }
            if self.namesake(c, i) {
                namesakes.push(i);
                continue;
            }
            seen.insert((&w.entity, &w.id));
            records.push((&w.entity, &w.id));
        }
        let mut best: Option<(usize, Judgement)> = None;
        // "both 'Fix login' cards": as many records as the message says.
        let mut backed: Option<Judgement> = None;
        let mut backed_records = 0;
        for record in &records {
            let j = self.values(c, kind, *record);
            if j.backed {
                backed_records += 1;
                backed.get_or_insert(j);
                if backed_records >= c.target.count {
                    return backed.unwrap_or_else(|| Judgement::new(None, None, c));
                }
                continue;
            }
            let score = j.values.iter().filter(|(_, s)| s.is_some()).count();
            let differs = j.reason == Some(Reason::ValueDiffers);
            if best.as_ref().is_none_or(|(s, b)| differs && (b.reason != Some(Reason::ValueDiffers) || score > *s)) {
                best = Some((score, j));
            }
        }
        if backed.is_some() {
            // Fewer records than it says were written.
            return Judgement::new(Some(Reason::NoWrite), None, c);
        }
        let refused: Vec<usize> = matching.iter().copied().filter(|&i| !writes[i].is_stored()).collect();
        if let Some((_, j)) = best
            && (j.reason == Some(Reason::ValueDiffers) || refused.is_empty())
        {
            // "Set its priority to critical" when the update that sent
            // `critical` was refused: the refusal, not the value the record
            // kept, is what the agent must hear about.
            if j.reason == Some(Reason::ValueDiffers)
                && let Some(&i) = refused.iter().rev().find(|&&i| self.carries(c, i))
            {
                return self.refusal(i, c);
            }
            return j;
        }
        if let Some(&i) = namesakes.first() {
            return Judgement::new(Some(Reason::WrongTarget), Some(i), c);
        }
        // "Approved X" when `approve_expense` was refused: its only attempt.
        let op_refused = c.operation.and_then(|o| self.lex.operations.get(o)).and_then(|op| {
            (0..writes.len())
                .rev()
                .find(|&i| writes[i].action == Action::Run && writes[i].id == op.name && !writes[i].is_stored())
        });
        if let Some(i) = refused.last().copied().or(op_refused) {
            return self.refusal(i, c);
        }
        Judgement::new(Some(Reason::NoWrite), None, c)
    }

    /// `refused_write`, naming the refused attempt `i` and its codes.
    fn refusal(&self, i: usize, c: &Found) -> Judgement {
        let mut j = Judgement::new(Some(Reason::RefusedWrite), Some(i), c);
        if let Outcome::Refused(violations) = &self.turn.writes[i].outcome {
            j.violations = violations.iter().map(|v| v.code).collect();
        }
        j
    }

    /// Whether the refused attempt `i` sent every value the claim names.
    fn carries(&self, c: &Found, i: usize) -> bool {
        !c.values.is_empty() && c.values.iter().all(|said| matches!(self.fit(said, i), Fit::Match(_)))
    }

    /// The claim's values against one record's stored writes.
    fn values(&self, c: &Found, kind: ClaimKind, record: (&str, &str)) -> Judgement {
        let writes = &self.turn.writes;
        let of_record: Vec<usize> = self
            .of_record(record.0, record.1)
            .iter()
            .copied()
            .filter(|&i| writes[i].is_stored() && !writes[i].entity.is_empty() && self.entity_ok(c, &writes[i]))
            .collect();
        let backing = of_record.iter().rev().copied().find(|&i| compatible(kind, writes[i].action));
        let mut j = Judgement::new(None, backing, c);
        let mut differs: Option<usize> = None;
        let mut absent = false;
        for (v, said) in c.values.iter().enumerate() {
            let mut fit = Fit::Unchecked;
            for &i in &of_record {
                let here = self.fit(said, i);
                fit = match (fit, here) {
                    (Fit::Match(f), _) | (_, Fit::Match(f)) => Fit::Match(f),
                    // The latest stored value is the one the record has.
                    (_, d @ Fit::Differs(..)) => d,
                    (d @ Fit::Differs(..), _) => d,
                    (Fit::Absent(f), _) | (_, Fit::Absent(f)) => Fit::Absent(f),
                    (Fit::Unchecked, Fit::Unchecked) => Fit::Unchecked,
                };
            }
            match fit {
                Fit::Match(field) => j.values[v] = (Some(field), None),
                Fit::Differs(field, stored, i) => {
                    j.values[v] = (Some(field), Some(stored));
                    differs.get_or_insert(i);
                }
                Fit::Absent(field) => {
                    j.values[v] = (field, None);
                    absent = true;
                }
                Fit::Unchecked => {}
            }
        }
        if let Some(i) = differs {
            j.backed = false;
            j.reason = Some(Reason::ValueDiffers);
            j.write = Some(i);
        } else if absent {
            j.backed = false;
            j.reason = Some(Reason::NoWrite);
            j.write = None;
        }
        j
    }

    /// "removed Ann from X", read as an update of X.
    fn reversed(&self, c: &Found) -> Option<Judgement> {
        let (record, value) = match c.what {
            What::Change(ClaimKind::Delete) => (c.qualifier.clone()?, c.target.clone()),
            _ => return None,
        };
        if value.vague {
            return None;
        }
        let removal = c.what == What::Change(ClaimKind::Delete);
        let swapped = Found {
            what: What::Change(ClaimKind::Update),
            entity: None,
            target: Target { text: record.clone(), norm: record, vague: false, known: true, count: 1 },
            record: None,
            values: if removal {
                Vec::new()
            } else {
                vec![Said {
                    text: value.text.clone(),
                    reading: Reading::Words(value.norm.clone()),
                    hint: Hint::Slot(Slot::Person),
                    known: true,
                }]
            },
            qualifier: None,
            id: None,
            text: c.text.clone(),
            slot: Slot::Person,
            reversible: false,
            operation: None,
        };
        let mut j = self.change(&swapped, ClaimKind::Update);
        if removal && j.backed {
            // Removed: a list the write named no longer holds it.
            let gone = bare(&value.norm);
            let w = j.write.and_then(|i| self.turn.writes.get(i))?;
            let entity = j.write.and_then(|i| self.entity_of(i))?;
            let mut lists =
                entity.fields.iter().filter(|f| f.kind.is_multi() && w.fields.contains_key(&f.name)).peekable();
            lists.peek()?;
            let holds = |f: &crate::lexicon::FieldInfo| {
                let labels =
                    w.ref_labels.get(&f.name).into_iter().flatten().any(|l| bare(&token::normalize(l)) == gone);
                let items = w
                    .fields
                    .get(&f.name)
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().filter_map(Value::as_str).any(|s| text_equal(s, &gone)));
                labels || items
            };
            if lists.any(holds) {
                return None;
            }
        }
        j.values = vec![(None, None); c.values.len()];
        Some(j)
    }

    /// A stored write of the claimed kind to another record, whose values are the claimed ones.
    fn elsewhere(&self, c: &Found, kind: ClaimKind, used: &HashSet<usize>) -> Option<usize> {
        if c.target.vague {
            return None;
        }
        let writes = &self.turn.writes;
        let all: Vec<usize>;
        let candidates: &[usize] = match c.values.first().and_then(|v| self.holding(v)) {
            Some(holding) => holding,
            None => {
                all = (0..writes.len()).collect();
                &all
            }
        };
        candidates.iter().rev().copied().find(|&i| {
            let w = &writes[i];
            w.is_stored()
                && !used.contains(&i)
                && w.action == action_of(kind)
                && self.entity_ok(c, w)
                && !self.names(&c.target, i)
                && c.values.iter().all(|v| matches!(self.fit(v, i), Fit::Match(_) | Fit::Unchecked))
        })
    }

    fn run(&self, c: &Found, op: Option<usize>) -> Judgement {
        let writes = &self.turn.writes;
        let name = match op.and_then(|o| self.lex.operations.get(o)) {
            Some(o) => o.name.clone(),
            None => c.target.norm.replace(' ', "_"),
        };
        let runs: Vec<usize> = (0..writes.len())
            .filter(|&i| matches!(writes[i].action, Action::Run | Action::JobStarted) && writes[i].id == name)
            .collect();
        if let Some(&i) = runs.iter().rev().find(|&&i| writes[i].is_stored()) {
            if let Some(record) = c.record.as_ref().filter(|r| r.known) {
                let written = (0..writes.len()).any(|k| {
                    writes[k].is_stored()
                        && !writes[k].entity.is_empty()
                        && (self.labels[k] == bare(&record.norm) || writes[k].id.eq_ignore_ascii_case(&record.norm))
                });
                if !written {
                    return Judgement::new(Some(Reason::WrongTarget), Some(i), c);
                }
            }
            return Judgement::new(None, Some(i), c);
        }
        if let Some(&i) = runs.last() {
            let mut j = Judgement::new(Some(Reason::RefusedWrite), Some(i), c);
            if let Outcome::Refused(v) = &writes[i].outcome {
                j.violations = v.iter().map(|v| v.code).collect();
            }
            return j;
        }
        let other = (0..writes.len())
            .rev()
            .find(|&i| writes[i].is_stored() && matches!(writes[i].action, Action::Run | Action::JobStarted));
        match other {
            Some(i) if op.is_some() => Judgement::new(Some(Reason::WrongTarget), Some(i), c),
            _ => Judgement::new(Some(Reason::NoWrite), None, c),
        }
    }

    fn job(&self, c: &Found, op: Option<usize>, finished: bool) -> Judgement {
        let writes = &self.turn.writes;
        let name = op.and_then(|o| self.lex.operations.get(o)).map(|o| o.name.clone());
        let jobs: Vec<usize> = (0..writes.len())
            .filter(|&i| matches!(writes[i].action, Action::JobStarted | Action::JobFinished))
            .filter(|&i| name.as_ref().is_none_or(|n| writes[i].id == *n))
            .collect();
        let stored: Vec<usize> = jobs.iter().copied().filter(|&i| writes[i].is_stored()).collect();
        if !finished {
            if let Some(&i) = stored.iter().rev().find(|&&i| writes[i].action == Action::JobStarted) {
                return Judgement::new(None, Some(i), c);
            }
        } else {
            let done = stored
                .iter()
                .rev()
                .copied()
                .find(|&i| writes[i].job.as_ref().is_some_and(|j| j.state == JobState::Succeeded));
            if let Some(i) = done {
                return Judgement::new(None, Some(i), c);
            }
            if let Some(&i) = stored.last() {
                let mut j = Judgement::new(Some(Reason::JobNotFinished), Some(i), c);
                j.job_state = writes[i].job.as_ref().map(|j| j.state);
                return j;
            }
        }
        if let Some(&i) = jobs.iter().rev().find(|&&i| !writes[i].is_stored()) {
            let mut j = Judgement::new(Some(Reason::RefusedWrite), Some(i), c);
            if let Outcome::Refused(v) = &writes[i].outcome {
                j.violations = v.iter().map(|v| v.code).collect();
            }
            return j;
        }
        Judgement::new(Some(Reason::NoWrite), None, c)
    }

    /// The stored writes holding a value said this way; `None` when the
    /// reading has no key (then every write is a candidate).
    fn holding(&self, said: &Said) -> Option<&[usize]> {
        let key = match &said.reading {
            Reading::Words(w) => match w.parse::<f64>() {
                Ok(n) => format!("w:{n}"),
                Err(_) => format!("w:{}", bare(w)),
            },
            Reading::Number(n) => format!("n:{n}"),
            Reading::Date(d) => format!("d:{d}"),
            Reading::Flag(b) => format!("f:{b}"),
        };
        let index = self.holding.get_or_init(|| self.index_values());
        Some(index.get(&key).map(Vec::as_slice).unwrap_or_default())
    }

    /// Every stored value of every write, under each key a claimed value could
    /// be read as (see [`Matcher::equal`], which this must never be narrower than).
    fn index_values(&self) -> HashMap<String, Vec<usize>> {
        let mut index: HashMap<String, Vec<usize>> = HashMap::new();
        let mut put = |key: String, i: usize| {
            let list = index.entry(key).or_default();
            if list.last() != Some(&i) {
                list.push(i);
            }
        };
        for (i, w) in self.turn.writes.iter().enumerate() {
            if !w.is_stored() {
                continue;
            }
            let Some(entity) = self.entity_of(i) else { continue };
            for (name, stored) in &w.fields {
                let Some(f) = entity.field(name) else { continue };
                if f.is_date()
                    && let Some(d) = self.date_of(f, stored)
                {
                    put(format!("d:{d}"), i);
                }
                for l in w.ref_labels.get(name).into_iter().flatten() {
                    put(format!("w:{}", bare(&token::normalize(l))), i);
                }
                match stored {
                    Value::Bool(b) => {
                        put(format!("f:{b}"), i);
                        let words = if *b { vocabulary::TRUE_WORDS } else { vocabulary::FALSE_WORDS };
                        for word in words {
                            put(format!("w:{word}"), i);
                        }
                    }
                    Value::Number(n) => {
                        if let Some(n) = n.as_f64() {
                            put(format!("n:{n}"), i);
                            put(format!("w:{n}"), i);
                        }
                    }
                    Value::String(s) => {
                        let norm = bare(&token::normalize(s));
                        put(format!("w:{}", norm.replace('_', " ")), i);
                        put(format!("w:{norm}"), i);
                        put(format!("w:{}", s.to_lowercase()), i);
                    }
                    Value::Array(items) => {
                        for s in items.iter().filter_map(Value::as_str) {
                            let norm = bare(&token::normalize(s));
                            put(format!("w:{}", norm.replace('_', " ")), i);
                            put(format!("w:{norm}"), i);
                            put(format!("w:{}", s.to_lowercase()), i);
                        }
                    }
                    _ => {}
                }
            }
        }
        index
    }

    /// One value against one write.
    fn fit(&self, said: &Said, i: usize) -> Fit {
        let w = &self.turn.writes[i];
        let Some(entity) = self.entity_of(i) else { return Fit::Unchecked };
        let mut fields: Vec<&crate::lexicon::FieldInfo> = match &said.hint {
            Hint::Field(names) => entity.fields.iter().filter(|f| names.contains(&f.name)).collect(),
            Hint::Currency => entity
                .fields
                .iter()
                .filter(|f| match &f.kind {
                    FieldType::Enum { values } => {
                        values.iter().any(|v| said_words(said).is_some_and(|s| token::normalize(v) == s))
                    }
                    _ => false,
                })
                .collect(),
            Hint::Slot(slot) => entity.fields.iter().filter(|f| in_slot(entity, f, *slot)).collect(),
        };
        fields.retain(|f| admits(f, &said.reading));
        if let Reading::Words(words) = &said.reading {
            let enums: Vec<&crate::lexicon::FieldInfo> =
                fields.iter().copied().filter(|f| enum_has(f, words)).collect();
            if !enums.is_empty() {
                fields = enums;
            }
        }
        if fields.is_empty() {
            // A field of another entity, or a place the app does not have: nothing to check here.
            return Fit::Unchecked;
        }
        let mut differs = None;
        for f in &fields {
            let Some(stored) = w.fields.get(&f.name) else { continue };
            if self.equal(said, f, stored, i) {
                return Fit::Match(f.name.clone());
            }
            differs.get_or_insert_with(|| (f.name.clone(), self.words(f, stored, w)));
        }
        match differs {
            Some((field, words)) => Fit::Differs(field, words, i),
            // "€92.50" says the currency with the amount; a write that names
            // no currency keeps the one the record had.
            None if said.hint == Hint::Currency => Fit::Unchecked,
            None => Fit::Absent(fields.first().map(|f| f.name.clone())),
        }
    }

    fn equal(&self, said: &Said, f: &crate::lexicon::FieldInfo, stored: &Value, i: usize) -> bool {
        match &said.reading {
            Reading::Date(d) => self.date_of(f, stored) == Some(*d),
            Reading::Number(n) => stored.as_f64().is_some_and(|s| (s - n).abs() < 1e-9),
            Reading::Flag(b) => stored.as_bool() == Some(*b),
            Reading::Words(words) => {
                let words = bare(words);
                match &f.kind {
                    FieldType::Ref { .. } | FieldType::ListRef { .. } => {
                        let labels = self.turn.writes.get(i).and_then(|w| w.ref_labels.get(&f.name));
                        labels.is_some_and(|ls| ls.iter().any(|l| bare(&token::normalize(l)) == words))
                            || ids(stored).iter().any(|id| id.eq_ignore_ascii_case(&words))
                    }
                    FieldType::Boolean => {
                        let b = stored.as_bool();
                        (vocabulary::TRUE_WORDS.contains(&words.as_str()) && b == Some(true))
                            || (vocabulary::FALSE_WORDS.contains(&words.as_str()) && b == Some(false))
                    }
                    FieldType::Number { .. } => {
                        words.parse::<f64>().ok().zip(stored.as_f64()).is_some_and(|(a, b)| (a - b).abs() < 1e-9)
                    }
                    _ => match stored {
                        Value::String(s) => text_equal(s, &words),
                        Value::Array(items) => items.iter().filter_map(Value::as_str).any(|s| text_equal(s, &words)),
                        _ => false,
                    },
                }
            }
        }
    }

    fn date_of(&self, f: &crate::lexicon::FieldInfo, stored: &Value) -> Option<jiff::civil::Date> {
        let s = stored.as_str()?;
        match f.kind {
            FieldType::String { format: Some(StringFormat::DayKey), .. } => s.parse().ok(),
            _ => {
                let ts: jiff::Timestamp = s.parse().ok().or_else(|| s.replacen(' ', "T", 1).parse().ok())?;
                Some(ts.to_zoned_datetime(self.zone.clone()).date())
            }
        }
    }

    /// A stored value in a receipt's words.
    fn words(&self, f: &crate::lexicon::FieldInfo, stored: &Value, w: &Write) -> String {
        if f.is_date()
            && let Some(d) = self.date_of(f, stored)
        {
            return d.to_string();
        }
        match (&f.kind, stored) {
            (FieldType::Ref { .. } | FieldType::ListRef { .. }, _) => match w.ref_labels.get(&f.name) {
                Some(labels) if !labels.is_empty() => labels.join(", "),
                _ => {
                    let ids = ids(stored);
                    if ids.is_empty() { "empty".into() } else { ids.join(", ") }
                }
            },
            (_, Value::Bool(b)) => if *b { "yes" } else { "no" }.into(),
            (_, Value::String(s)) if s.is_empty() => "empty".into(),
            (_, Value::String(s)) => s.clone(),
            (_, Value::Array(a)) if a.is_empty() => "empty".into(),
            (_, Value::Array(a)) => a
                .iter()
                .map(|v| v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()))
                .collect::<Vec<_>>()
                .join(", "),
            (_, Value::Null) => "empty".into(),
            (_, other) => other.to_string(),
        }
    }
}

fn said_words(said: &Said) -> Option<String> {
    match &said.reading {
        Reading::Words(w) => Some(w.clone()),
        _ => None,
    }
}

fn ids(stored: &Value) -> Vec<String> {
    match stored {
        Value::String(s) if !s.is_empty() => vec![s.clone()],
        Value::Array(items) => items.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

fn text_equal(stored: &str, words: &str) -> bool {
    let s = bare(&token::normalize(stored));
    s == words || s.replace('_', " ") == words
}

/// Everything a judgement depends on, as one key: claims with equal keys
/// are judged alike.
fn key(c: &Found) -> String {
    let values: Vec<(&Reading, &Hint)> = c.values.iter().map(|v| (&v.reading, &v.hint)).collect();
    format!(
        "{:?}|{:?}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{}|{:?}",
        c.what,
        c.entity,
        c.target.norm,
        c.target.vague,
        c.target.count,
        values,
        c.qualifier,
        c.id,
        c.record.as_ref().map(|r| (&r.norm, r.known)),
        c.reversible,
        c.operation
    )
}

/// Which write actions make a claim of this kind true.
fn compatible(kind: ClaimKind, action: Action) -> bool {
    match kind {
        ClaimKind::Create => action == Action::Create,
        // A record created with the value is a record that has it.
        ClaimKind::Update => matches!(action, Action::Update | Action::Create),
        ClaimKind::Delete => action == Action::Delete,
        ClaimKind::Run => matches!(action, Action::Run | Action::JobStarted),
        ClaimKind::Job => matches!(action, Action::JobStarted | Action::JobFinished),
    }
}

fn action_of(kind: ClaimKind) -> Action {
    match kind {
        ClaimKind::Create => Action::Create,
        ClaimKind::Update => Action::Update,
        ClaimKind::Delete => Action::Delete,
        ClaimKind::Run => Action::Run,
        ClaimKind::Job => Action::JobStarted,
    }
}

/// Fields a value of this slot may go to.
fn in_slot(entity: &EntityInfo, f: &crate::lexicon::FieldInfo, slot: Slot) -> bool {
    match slot {
        Slot::Place => matches!(f.kind, FieldType::Ref { .. }) || enum_named_status(f),
        Slot::Person => matches!(f.kind, FieldType::Ref { .. } | FieldType::ListRef { .. }),
        Slot::Label => entity.label.as_deref() == Some(f.name.as_str()),
        Slot::Date => f.is_date(),
        Slot::State => matches!(f.kind, FieldType::Boolean | FieldType::Enum { .. } | FieldType::ListEnum { .. }),
        Slot::Any => true,
    }
}

/// "moved to Approved" moves along a status.
fn enum_named_status(f: &crate::lexicon::FieldInfo) -> bool {
    matches!(f.kind, FieldType::Enum { .. }) && matches!(f.name.as_str(), "status" | "state" | "stage" | "phase")
}

/// Whether a value read this way can be a value of this field.
fn admits(f: &crate::lexicon::FieldInfo, reading: &Reading) -> bool {
    match reading {
        Reading::Date(_) => f.is_date(),
        Reading::Number(_) => matches!(f.kind, FieldType::Number { .. }),
        Reading::Flag(_) => matches!(f.kind, FieldType::Boolean),
        Reading::Words(_) => !matches!(f.kind, FieldType::Json | FieldType::Binary { .. }) && !f.is_date(),
    }
}

fn enum_has(f: &crate::lexicon::FieldInfo, words: &str) -> bool {
    match &f.kind {
        FieldType::Enum { values } | FieldType::ListEnum { values } => values.iter().any(|v| text_equal(v, words)),
        _ => false,
    }
}

/// A name without a leading article: "the Report" and "Report" are one name.
pub fn bare(norm: &str) -> String {
    let mut s = norm.trim();
    for a in ["the ", "a ", "an "] {
        if let Some(rest) = s.strip_prefix(a) {
            s = rest.trim_start();
            break;
        }
    }
    s.to_owned()
}
