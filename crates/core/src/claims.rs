//! Checking what an agent tells a person against what the app stored: the
//! turn (one caller's writes since a point: receipts, refused writes, jobs)
//! gathered from the store, handed to the checker (`a2app_claims`, pure),
//! and every check kept for the person's dashboard.
//!
//! A person is shown confirmations generated from stored records; an agent's
//! words are never the confirmation. A turn starts at `since`, or where the
//! caller's last check left its `cursor`: after the writes of a message that
//! passed, and where it started for one withheld (the corrected message is
//! checked against the same writes and those made since). It is the
//! caller's alone: the same credential (the agent token with the same
//! `X-LUI-Agent`, one grant, one OAuth client) that wrote.

use crate::app::App;
use a2app_access::caller::Caller;
use a2app_claims::{Action, Job, Outcome, Turn, Write};
use a2app_definition::Error;
use a2app_definition::guard::only;
use a2app_store::{ClaimCheck, Store};
use protocol::claim::Check;
use protocol::operation::JobState;
use protocol::receipt::Receipt;
use protocol::schema::Schema;
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// The longest message checked.
pub const MAX_MESSAGE: usize = a2app_claims::MAX_MESSAGE_BYTES;
/// The most stored entries (every caller's) one turn looks through.
const MAX_SCAN: u64 = 20_000;
/// The most checks kept for the dashboard.
pub const KEEP: u64 = 1_000;

/// Where a turn starts: after these sequence numbers (of the audit and of
/// the refused writes), or after a time in the receipts' wire form.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Start {
    After { audit: i64, refused: i64 },
    Since(String),
}

/// A cursor as the answer gives it: `a<audit seq>r<refused seq>`.
fn cursor_text(audit: i64, refused: i64) -> String {
    format!("a{audit}r{refused}")
}

fn parse_cursor(text: &str) -> Option<Start> {
    let (audit, refused) = text.strip_prefix('a')?.split_once('r')?;
    Some(Start::After { audit: audit.parse().ok()?, refused: refused.parse().ok()? })
}

/// A `since` as sent or as a check answered it: a cursor or a time.
fn parse_start(text: &str) -> Option<Start> {
    parse_cursor(text).or_else(|| {
        let at = a2app_definition::datetime::parse(text)?;
        Some(Start::Since(a2app_definition::datetime::format(at)))
    })
}

/// A start as a `since` reads it back.
fn start_text(start: &Start) -> String {
    match start {
        Start::After { audit, refused } => cursor_text(*audit, *refused),
        Start::Since(at) => at.clone(),
    }
}

/// `POST /api/_a2app/claims` `{"message": …, "since"?: …}`: the check of
/// `message` against the caller's turn.
pub async fn check(app: &Arc<App>, caller: &Caller, body: &Value) -> Result<Check, Error> {
    let fields = only(body, &["message", "since"])?;
    let mut problems = Vec::new();
    let message = match fields.get("message") {
        Some(Value::String(m)) if m.len() <= MAX_MESSAGE => Some(m.clone()),
        Some(Value::String(m)) => {
            problems.push(
                Violation::new(
                    ErrorCode::TooLong,
                    format!("message is {} bytes; at most {MAX_MESSAGE} are checked", m.len()),
                )
                .field("message"),
            );
            None
        }
        Some(other) => {
            problems.push(
                Violation::new(
                    ErrorCode::InvalidString,
                    "message is the agent's text, as it would show it to the person",
                )
                .field("message")
                .got(other.clone()),
            );
            None
        }
        None => {
            problems.push(
                Violation::new(ErrorCode::RequiredField, "message is required: the agent's text for the person")
                    .field("message"),
            );
            None
        }
    };
    let start = match fields.get("since") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match parse_start(s) {
            Some(start) => Some(start),
            None => {
                problems.push(
                    Violation::new(
                        ErrorCode::InvalidParam,
                        "since is a time (2026-07-30 09:15:00.000Z) or the cursor a check answered",
                    )
                    .field("since")
                    .got(Value::String(s.clone())),
                );
                None
            }
        },
        Some(other) => {
            problems.push(
                Violation::new(ErrorCode::InvalidParam, "since is a time or the cursor a check answered")
                    .field("since")
                    .got(other.clone()),
            );
            None
        }
    };
    let Some(message) = message.filter(|_| problems.is_empty()) else { return Err(Error::Invalid(problems)) };
    let who = (caller.label(), caller.agent.clone());
    let start = match start {
        Some(start) => start,
        None => {
            let (store, (label, agent)) = (Arc::clone(&app.store), who.clone());
            let last = a2app_store::blocking(move || Ok(store.last_check(&label, agent.as_deref())?)).await?;
            last.as_deref().and_then(parse_start).unwrap_or(Start::After { audit: 0, refused: 0 })
        }
    };
    let (turn, end) = turn(app, &who, crate::records::labels_from(caller), start.clone()).await?;
    let zone = jiff::tz::TimeZone::get(&app.definition.config.timezone).unwrap_or(jiff::tz::TimeZone::UTC);
    let today = zone.to_datetime(app.clock.now()).date();
    let describe = app.describe();
    let checker = a2app_claims::Checker::new(a2app_claims::App { describe: &describe, today, zone });
    let mut answer = checker.check(&turn, &message);
    // A withheld message is corrected and checked again against the same
    // writes and those made since: its turn stays open. A pass closes it.
    let cursor = match answer.verdict {
        protocol::claim::Verdict::Pass => end,
        protocol::claim::Verdict::Withheld => start_text(&start),
    };
    answer.cursor = Some(cursor.clone());
    let kept = ClaimCheck {
        seq: 0,
        at: a2app_definition::datetime::format(app.clock.now()),
        caller: who.0,
        agent: who.1,
        verdict: match answer.verdict {
            protocol::claim::Verdict::Pass => "pass".into(),
            protocol::claim::Verdict::Withheld => "withheld".into(),
        },
        discrepancies: serde_json::to_value(&answer.discrepancies).unwrap_or(Value::Null),
        cursor,
    };
    let store = Arc::clone(&app.store);
    a2app_store::blocking(move || Ok(store.keep_check(&kept, KEEP)?)).await?;
    Ok(answer)
}

/// The checks kept, newest first (the dashboard's list).
pub async fn checks(app: &Arc<App>, limit: u64) -> Result<Vec<ClaimCheck>, Error> {
    let store = Arc::clone(&app.store);
    a2app_store::blocking(move || Ok(store.claim_checks(limit)?)).await
}

/// The caller's writes from `start`, oldest first, and the cursor after them.
async fn turn(
    app: &Arc<App>,
    who: &(String, Option<String>),
    readable: Option<BTreeSet<String>>,
    start: Start,
) -> Result<(Turn, String), Error> {
    let (store, schema) = (Arc::clone(&app.store), Arc::clone(&app.definition.schema));
    let who = who.clone();
    a2app_store::blocking(move || {
        let (audit_after, refused_after, since) = match &start {
            Start::After { audit, refused } => (*audit, *refused, String::new()),
            Start::Since(at) => (0, 0, at.clone()),
        };
        let entries = store.audit_after(audit_after, &since, MAX_SCAN)?;
        let refused = store.refused_writes(refused_after, &since, MAX_SCAN)?;
        let cursor =
            cursor_text(entries.last().map_or(audit_after, |e| e.seq), refused.last().map_or(refused_after, |r| r.seq));
        let mine = |caller: &str, agent: &Option<String>| caller == who.0 && *agent == who.1;
        let mut reader = Reader { store: store.as_ref(), schema: &schema, readable, labels: HashMap::new() };
        let mut writes: Vec<Write> = Vec::new();
        for entry in entries.iter().filter(|e| mine(&e.receipt.caller, &e.receipt.agent)) {
            writes.extend(reader.stored(&entry.receipt)?);
        }
        for r in refused.iter().filter(|r| mine(&r.caller, &r.agent)) {
            writes.push(reader.refused(r)?);
        }
        // Both lists are in time order; merged, stably, a refusal after the
        // writes of its millisecond.
        writes.sort_by(|a, b| a.at.cmp(&b.at));
        Ok((Turn { writes }, cursor))
    })
    .await
}

/// Reads what the checker needs besides the receipts: labels, by id.
struct Reader<'a> {
    store: &'a dyn Store,
    schema: &'a Schema,
    /// The entities a grant may see the labels of (`None`: all): what it
    /// cannot read, it is told by id, as its receipts tell it.
    readable: Option<BTreeSet<String>>,
    labels: HashMap<(String, String), String>,
}

impl Reader<'_> {
    fn label_field(&self, entity: &str) -> Option<String> {
        self.schema.entities.get(entity).and_then(|e| e.label.clone())
    }

    /// A record's label as stored now, or its id.
    fn label(&mut self, entity: &str, id: &str) -> Result<String, Error> {
        let key = (entity.to_owned(), id.to_owned());
        if let Some(l) = self.labels.get(&key) {
            return Ok(l.clone());
        }
        let label = match self.current(entity, id)? {
            Some(row) => text_of(self.label_field(entity).and_then(|f| row.get(&f).cloned()).as_ref(), id),
            None => id.to_owned(),
        };
        self.labels.insert(key, label.clone());
        Ok(label)
    }

    fn current(&self, entity: &str, id: &str) -> Result<Option<Map<String, Value>>, Error> {
        let hidden = self.readable.as_ref().is_some_and(|r| !r.contains(entity));
        if hidden || !self.schema.entities.contains_key(entity) {
            return Ok(None);
        }
        Ok(self.store.get_many(self.schema, entity, &[id.to_owned()])?.into_iter().next())
    }

    /// The labels of what `row`'s `ref` fields (of `entity`) hold; only the
    /// fields in `only` when given.
    fn refs(
        &mut self,
        entity: &str,
        row: &Map<String, Value>,
        only: Option<&Map<String, Value>>,
    ) -> Result<Vec<(String, Vec<String>)>, Error> {
        let Some(ent) = self.schema.entities.get(entity) else { return Ok(Vec::new()) };
        let targets: Vec<(String, String)> = ent
            .fields
            .iter()
            .filter(|(f, _)| only.is_none_or(|o| o.contains_key(*f)))
            .filter_map(|(f, spec)| Some((f.clone(), spec.kind.target()?.to_owned())))
            .collect();
        let mut out = Vec::new();
        for (field, target) in targets {
            let Some(value) = row.get(&field) else { continue };
            let mut labels = Vec::new();
            for id in ids(value) {
                labels.push(self.label(&target, &id)?);
            }
            out.push((field, labels));
        }
        Ok(out)
    }

    /// The writes one receipt stands for: a record write, an operation run,
    /// or a job started (and, once it ended, finished).
    fn stored(&mut self, receipt: &Receipt) -> Result<Vec<Write>, Error> {
        let action = match receipt.action.as_str() {
            "create" => Action::Create,
            "update" => Action::Update,
            "delete" => Action::Delete,
            "operation" => return self.run(receipt),
            _ => return Ok(Vec::new()),
        };
        let mut w = Write::new(action, receipt.entity.clone(), receipt.id.clone());
        w.fields = receipt.fields.clone();
        w.text = receipt.text.clone();
        w.at = receipt.at.clone();
        let lf = self.label_field(&receipt.entity);
        let named = |row: &Map<String, Value>| lf.as_ref().and_then(|f| row.get(f)).cloned();
        w.label = match (action, named(&receipt.fields)) {
            (_, Some(v)) => text_of(Some(&v), &receipt.id),
            (Action::Update, None) => match named(&receipt.before) {
                Some(v) => text_of(Some(&v), &receipt.id),
                None => self.label(&receipt.entity, &receipt.id)?,
            },
            (_, None) => self.label(&receipt.entity, &receipt.id)?,
        };
        if action == Action::Update
            && let (Some(after), Some(before)) = (named(&receipt.fields), named(&receipt.before))
            && after != before
        {
            w.previous_label = Some(text_of(Some(&before), &receipt.id));
        }
        for (field, labels) in self.refs(&receipt.entity, &receipt.fields, None)? {
            w.ref_labels.insert(field, labels);
        }
        // Where the record was: before an update, as written otherwise.
        let place_row = if action == Action::Update { &receipt.before } else { &receipt.fields };
        w.place = self.refs(&receipt.entity, place_row, None)?.into_iter().flat_map(|(_, l)| l).collect();
        Ok(vec![w])
    }

    fn run(&mut self, receipt: &Receipt) -> Result<Vec<Write>, Error> {
        let Some(job_id) = crate::operations::started_job(&receipt.text) else {
            let mut w = Write::new(Action::Run, "", receipt.id.clone());
            w.fields = receipt.fields.clone();
            w.text = receipt.text.clone();
            w.at = receipt.at.clone();
            return Ok(vec![w]);
        };
        let state = self.store.job(job_id)?.map_or(JobState::Queued, |j| j.state);
        let mut started = Write::new(Action::JobStarted, "", receipt.id.clone());
        started.fields = receipt.fields.clone();
        started.text = receipt.text.clone();
        started.at = receipt.at.clone();
        started.job = Some(Job { id: job_id.to_owned(), state });
        let mut out = vec![started];
        if matches!(state, JobState::Succeeded | JobState::Failed | JobState::Interrupted) {
            let mut done = Write::new(Action::JobFinished, "", receipt.id.clone());
            done.job = Some(Job { id: job_id.to_owned(), state });
            done.text = format!("Job {job_id} of {} {}", receipt.id, state.as_str());
            done.at = receipt.at.clone();
            out.push(done);
        }
        Ok(out)
    }

    fn refused(&mut self, r: &a2app_store::RefusedWrite) -> Result<Write, Error> {
        let action = match r.action.as_str() {
            "create" => Action::Create,
            "update" => Action::Update,
            "delete" => Action::Delete,
            _ => Action::Run,
        };
        let mut w = Write::new(action, r.entity.clone(), r.id.clone());
        w.fields = r.body.clone();
        w.text = r.text.clone();
        w.at = r.at.clone();
        w.outcome = Outcome::Refused(r.violations.clone());
        if action == Action::Run {
            return Ok(w);
        }
        let lf = self.label_field(&r.entity);
        let named = lf.as_ref().and_then(|f| r.body.get(f)).cloned();
        // The record as it stands (a refused write changed nothing of it).
        let current = if r.id.is_empty() { None } else { self.current(&r.entity, &r.id)? };
        w.label = match (&named, &current, action) {
            (Some(v), _, Action::Create) => text_of(Some(v), &r.id),
            (_, Some(row), _) => text_of(lf.as_ref().and_then(|f| row.get(f)), &r.id),
            (Some(v), None, _) => text_of(Some(v), &r.id),
            (None, None, _) => r.id.clone(),
        };
        for (field, labels) in self.refs(&r.entity, &r.body, None)? {
            w.ref_labels.insert(field, labels);
        }
        let place_row = current.unwrap_or_else(|| r.body.clone());
        w.place = self.refs(&r.entity, &place_row, None)?.into_iter().flat_map(|(_, l)| l).collect();
        Ok(w)
    }
}

/// A label from a label field's value: a non-empty text or a number, else the id.
fn text_of(value: Option<&Value>, id: &str) -> String {
    a2app_definition::receipt::label_text(value, id)
}

fn ids(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) if !s.is_empty() => vec![s.clone()],
        Value::Array(items) => items.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_reads_back_as_written() {
        assert_eq!(parse_cursor(&cursor_text(12, 3)), Some(Start::After { audit: 12, refused: 3 }));
        for bad in ["", "a", "a1", "ar", "a-r", "x1r2", "a1r2x"] {
            assert_eq!(parse_cursor(bad), None, "{bad}");
        }
    }
}
