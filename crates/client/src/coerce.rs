//! Human input → values the app accepts, checked against the cached describe.
//!
//! "tomorrow" becomes a date in the app's own zone (from identity, never the
//! local clock); "To Do" becomes an id by one filtered GET on the target
//! entity's label field, and anything but exactly one match is refused with the
//! candidates, so nothing is written on a guess. Every value is checked against
//! the schema first, so most mistakes cost no round trip; the server's guard
//! stays the authority.

use crate::api::{Api, CallError, ListQuery};
use jiff::Timestamp;
use jiff::civil::Date;
use protocol::ErrorCode;
use protocol::calendar::relative_date;
use protocol::describe::{Describe, DescribedEntity};
use protocol::identity::Identity;
use protocol::schema::{FieldType, StringFormat};
use serde::Serialize;
use serde_json::{Map, Value};

/// The app's clock as identity reported it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AppClock {
    pub now: Timestamp,
    pub offset_minutes: i32,
}

impl AppClock {
    pub fn from_identity(identity: &Identity) -> Option<AppClock> {
        let now = parse_wire(&identity.server_now)?;
        // No zone is further than 14 h from UTC; an offset past a day is not
        // a clock to compute dates with (and minutes * 60 might overflow).
        let offset_minutes = identity.server_tz_offset_minutes;
        (offset_minutes.unsigned_abs() <= 24 * 60).then_some(AppClock { now, offset_minutes })
    }

    /// The calendar date it is now where the app is.
    pub fn today(&self) -> Date {
        let offset = jiff::tz::Offset::from_seconds(self.offset_minutes * 60).unwrap_or(jiff::tz::Offset::UTC);
        self.now.to_zoned_datetime(jiff::tz::TimeZone::fixed(offset)).date()
    }

    /// A datetime written without a zone (`2026-07-31T14:00`), as that time
    /// in the app's zone; `None` when it names a zone (or is no datetime).
    fn local(&self, text: &str) -> Option<String> {
        let t = text.trim();
        let time = t.get(10..)?;
        if time.contains(['Z', 'z', '+', '-']) {
            return None;
        }
        let civil: jiff::civil::DateTime = t.replacen(' ', "T", 1).parse().ok()?;
        let sign = if self.offset_minutes < 0 { '-' } else { '+' };
        let m = self.offset_minutes.unsigned_abs();
        Some(format!("{civil}{sign}{:02}:{:02}", m / 60, m % 60))
    }

    /// A date as a datetime value: midnight in the app's zone.
    fn midnight(&self, date: Date) -> String {
        if self.offset_minutes == 0 {
            return date.to_string();
        }
        let sign = if self.offset_minutes < 0 { '-' } else { '+' };
        let m = self.offset_minutes.unsigned_abs();
        format!("{date}T00:00:00{sign}{:02}:{:02}", m / 60, m % 60)
    }
}

/// `2026-07-30 09:15:00.000Z` (the wire form) or any RFC 3339 instant.
fn parse_wire(text: &str) -> Option<Timestamp> {
    text.parse().ok().or_else(|| text.replacen(' ', "T", 1).parse().ok())
}

/// One `field=value` (text, coerced) or `field:=json` (sent as given) argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Assignment {
    pub field: String,
    pub value: Input,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Text(String),
    Raw(Value),
}

impl Assignment {
    /// `title=Buy milk`, `meta:={"a":1}`; `None` when there is no `=`.
    pub fn parse(arg: &str) -> Option<Result<Assignment, Problem>> {
        let (field, value) = arg.split_once('=')?;
        if let Some(field) = field.strip_suffix(':') {
            let parsed = serde_json::from_str(value).map_err(|e| {
                Problem::new(ErrorCode::InvalidJson, format!("{field}:= takes JSON: {e}"))
                    .field(field)
                    .got(Value::from(value))
                    .fix(format!("quote it for the shell, e.g. '{field}:={{\"a\": 1}}', or use {field}=text"))
            });
            return Some(parsed.map(|v| Assignment { field: field.into(), value: Input::Raw(v) }));
        }
        Some(Ok(Assignment { field: field.into(), value: Input::Text(value.into()) }))
    }
}

/// A refusal before anything was sent (or after a label lookup), with its fix.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Problem {
    pub code: ErrorCode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub got: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
}

impl Problem {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Problem {
        Problem { code, field: None, message: message.into(), expected: None, got: None, fix: None, candidates: vec![] }
    }
    pub fn field(mut self, f: &str) -> Self {
        self.field = Some(f.into());
        self
    }
    pub fn expected(mut self, e: impl Into<String>) -> Self {
        self.expected = Some(e.into());
        self
    }
    pub fn got(mut self, g: Value) -> Self {
        self.got = Some(g);
        self
    }
    pub fn fix(mut self, f: impl Into<String>) -> Self {
        self.fix = Some(f.into());
        self
    }
}

/// A record a label could have meant.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Candidate {
    pub id: String,
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    Create,
    Update,
}

/// A body ready to send once its label lookups are resolved.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Draft {
    pub body: Map<String, Value>,
    pub lookups: Vec<Lookup>,
    /// What was coerced, for the person: `due_date: tomorrow → 2026-07-31`.
    pub notes: Vec<String>,
}

/// A ref given by label, to be turned into an id.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup {
    pub field: String,
    /// For `list<ref>`: the position in the array.
    pub index: Option<usize>,
    pub entity: String,
    pub text: String,
}

/// The entity, or a refusal naming the ones there are.
pub fn entity<'a>(describe: &'a Describe, name: &str) -> Result<&'a DescribedEntity, Problem> {
    describe.entities.get(name).ok_or_else(|| {
        let names: Vec<&str> = describe.entities.keys().map(String::as_str).collect();
        let mut p = Problem::new(ErrorCode::UnknownEntity, format!("this app has no entity \"{name}\""))
            .expected(format!("one of {}", names.join(", ")))
            .got(Value::from(name));
        p.fix = Some(match closest(name, &names) {
            Some(c) => format!("did you mean \"{c}\"?"),
            None => format!("use one of: {}", names.join(", ")),
        });
        p
    })
}

/// Checks and coerces every assignment; all problems are reported at once.
pub fn prepare(
    describe: &Describe,
    entity_name: &str,
    action: Action,
    assignments: &[Assignment],
    clock: &AppClock,
) -> Result<Draft, Vec<Problem>> {
    let ent = entity(describe, entity_name).map_err(|p| vec![p])?;
    let mut draft = Draft::default();
    let mut problems = Vec::new();
    for a in assignments {
        match coerce_one(ent, a, clock, &mut draft) {
            Ok(value) => {
                if draft.body.insert(a.field.clone(), value).is_some() {
                    problems.push(
                        Problem::new(ErrorCode::InvalidParam, format!("{} is given twice", a.field))
                            .field(&a.field)
                            .fix("give each field once"),
                    );
                }
            }
            Err(p) => problems.push(p),
        }
    }
    if action == Action::Create {
        for (name, field) in &ent.fields {
            if field.required && field.default.is_none() && !draft.body.contains_key(name) {
                problems.push(
                    Problem::new(ErrorCode::RequiredField, format!("{entity_name} needs {name}"))
                        .field(name)
                        .expected(describe_type(&field.kind))
                        .fix(format!("add {name}=…")),
                );
            }
        }
    }
    if problems.is_empty() { Ok(draft) } else { Err(problems) }
}

fn coerce_one(ent: &DescribedEntity, a: &Assignment, clock: &AppClock, draft: &mut Draft) -> Result<Value, Problem> {
    let name = a.field.as_str();
    let Some(field) = ent.fields.get(name) else {
        if ent.system_fields.contains_key(name) {
            return Err(Problem::new(ErrorCode::ReadOnlyField, format!("{name} is set by the app, not written"))
                .field(name)
                .fix(format!("leave {name} out")));
        }
        let names: Vec<&str> = ent.fields.keys().map(String::as_str).collect();
        let fix = match closest(name, &names) {
            Some(c) => format!("did you mean {c}? fields: {}", names.join(", ")),
            None => format!("fields: {}", names.join(", ")),
        };
        return Err(Problem::new(ErrorCode::UnknownField, format!("there is no field \"{name}\""))
            .field(name)
            .got(Value::from(name))
            .fix(fix));
    };
    if field.read_only {
        return Err(Problem::new(ErrorCode::ReadOnlyField, format!("{name} is read-only"))
            .field(name)
            .fix(format!("leave {name} out")));
    }
    let text = match &a.value {
        // Raw JSON is the caller's exact intent: sent as given, the guard judges it.
        Input::Raw(v) => return Ok(v.clone()),
        Input::Text(t) => t.as_str(),
    };
    let bad = |code: ErrorCode, expected: String| {
        Problem::new(code, format!("{name} cannot be \"{text}\""))
            .field(name)
            .expected(expected.clone())
            .got(Value::from(text))
            .fix(format!("give {name} {expected}"))
    };
    Ok(match &field.kind {
        FieldType::String { min, max, format, .. } => {
            let value = if *format == Some(StringFormat::DayKey) {
                let date = relative_date(text, clock.today()).ok_or_else(|| {
                    bad(
                        ErrorCode::InvalidDaykey,
                        "a date: YYYY-MM-DD, today, tomorrow, friday, next friday, in 3 days".into(),
                    )
                })?;
                note(draft, name, text, &date.to_string());
                date.to_string()
            } else {
                text.to_owned()
            };
            let len = value.chars().count() as u64;
            if max.is_some_and(|m| len > m) {
                return Err(bad(ErrorCode::TooLong, format!("at most {} characters", max.unwrap_or_default())));
            }
            if min.is_some_and(|m| len < m) {
                return Err(bad(ErrorCode::InvalidString, format!("at least {} characters", min.unwrap_or_default())));
            }
            Value::from(value)
        }
        FieldType::Number { min, max, integer } => {
            let expected = range_words(*integer, *min, *max);
            let value = match number(text) {
                Ok(v) => v,
                Err(NumberError::NotANumber) => return Err(bad(ErrorCode::InvalidNumber, expected)),
                Err(NumberError::Inexact) => return Err(bad(ErrorCode::OutOfRange, INEXACT.into())),
            };
            let n = value.as_f64().unwrap_or_default();
            if *integer && n.fract() != 0.0 {
                return Err(bad(ErrorCode::InvalidNumber, expected));
            }
            if min.is_some_and(|m| n < m) || max.is_some_and(|m| n > m) {
                return Err(bad(ErrorCode::OutOfRange, expected));
            }
            value
        }
        FieldType::Boolean => match text.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "y" | "1" | "on" => Value::Bool(true),
            "false" | "no" | "n" | "0" | "off" => Value::Bool(false),
            _ => return Err(bad(ErrorCode::InvalidBoolean, "true or false".into())),
        },
        FieldType::Datetime => {
            if let Some(date) = relative_date(text, clock.today()) {
                let value = clock.midnight(date);
                note(draft, name, text, &value);
                Value::from(value)
            } else if text.len() > 10 && text.as_bytes()[..4].iter().all(u8::is_ascii_digit) {
                // A full ISO datetime: the guard parses it exactly. One without
                // a zone is a time where the app is, as a plain date is: sent
                // bare, the app would read it as UTC.
                match clock.local(text) {
                    Some(value) => {
                        note(draft, name, text, &value);
                        Value::from(value)
                    }
                    None => Value::from(text),
                }
            } else {
                return Err(bad(
                    ErrorCode::InvalidDate,
                    "a date or ISO datetime: 2026-07-31, 2026-07-31T14:00:00Z, today, tomorrow, friday, in 3 days"
                        .into(),
                ));
            }
        }
        FieldType::Enum { values } => Value::from(enum_value(name, text, values)?),
        FieldType::ListEnum { values } => Value::Array(
            split_list(text).iter().map(|v| enum_value(name, v, values).map(Value::from)).collect::<Result<_, _>>()?,
        ),
        FieldType::Ref { entity } => {
            draft.lookups.push(Lookup {
                field: name.into(),
                index: None,
                entity: entity.clone(),
                text: text.trim().into(),
            });
            Value::Null
        }
        FieldType::ListRef { entity } => {
            let items = split_list(text);
            for (i, item) in items.iter().enumerate() {
                draft.lookups.push(Lookup {
                    field: name.into(),
                    index: Some(i),
                    entity: entity.clone(),
                    text: item.clone(),
                });
            }
            Value::Array(vec![Value::Null; items.len()])
        }
        // JSON as written, or a plain word as the text it is; but what opens
        // as JSON and does not parse (`{"a":1,}`) is refused, not stored as
        // a string the person did not mean.
        FieldType::Json => match serde_json::from_str(text) {
            Ok(value) => value,
            Err(e) if text.trim_start().starts_with(['{', '[', '"']) => {
                return Err(Problem::new(ErrorCode::InvalidJson, format!("{name} is not valid JSON: {e}"))
                    .field(name)
                    .fix(format!("give {name} as JSON, or a plain text without {{, [ or \" in front")));
            }
            Err(_) => {
                draft.notes.push(format!("{name}: {} → a text", text.trim()));
                Value::from(text)
            }
        },
        FieldType::Binary { .. } => {
            return Err(Problem::new(
                ErrorCode::InvalidParam,
                format!("{name} is a file; a2app does not upload files yet"),
            )
            .field(name)
            .fix("upload it with the records API (multipart), e.g. with curl -F"));
        }
    })
}

fn note(draft: &mut Draft, field: &str, from: &str, to: &str) {
    if from.trim() != to {
        draft.notes.push(format!("{field}: {from} → {to}"));
    }
}

fn enum_value(field: &str, text: &str, values: &[String]) -> Result<String, Problem> {
    let text = text.trim();
    if values.iter().any(|v| v == text) {
        return Ok(text.to_owned());
    }
    let mut p = Problem::new(ErrorCode::InvalidEnum, format!("{field} cannot be \"{text}\""))
        .field(field)
        .expected(format!("one of {}", values.join(", ")))
        .got(Value::from(text));
    let ci: Vec<&String> = values.iter().filter(|v| v.eq_ignore_ascii_case(text)).collect();
    let names: Vec<&str> = values.iter().map(String::as_str).collect();
    p.fix = Some(match (ci.as_slice(), closest(text, &names)) {
        ([one], _) => format!("did you mean {field}={one}?"),
        (_, Some(c)) => format!("did you mean {field}={c}? values: {}", values.join(", ")),
        _ => format!("use one of: {}", values.join(", ")),
    });
    Err(p)
}

fn split_list(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

fn range_words(integer: bool, min: Option<f64>, max: Option<f64>) -> String {
    let kind = if integer { "a whole number" } else { "a number" };
    match (min, max) {
        (Some(a), Some(b)) => format!("{kind} from {a} to {b}"),
        (Some(a), None) => format!("{kind} ≥ {a}"),
        (None, Some(b)) => format!("{kind} ≤ {b}"),
        (None, None) => kind.into(),
    }
}

fn describe_type(kind: &FieldType) -> String {
    match kind {
        FieldType::Ref { entity } => format!("a {entity} record (id or label)"),
        FieldType::Enum { values } => format!("one of {}", values.join(", ")),
        other => format!("a {}", other.name()),
    }
}

/// The nearest name within two edits, or sharing a 3+ letter prefix.
fn closest<'a>(word: &str, names: &[&'a str]) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    names
        .iter()
        .map(|n| (edit_distance(&word, &n.to_ascii_lowercase()), *n))
        .filter(|(d, n)| *d <= 2 || (word.len() >= 3 && n.to_ascii_lowercase().starts_with(&word)))
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// A PocketBase filter string literal: double-quoted, with `\` and `"` and
/// control characters escaped as the filter grammar decodes them.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `name = "To Do"`, or `(id = "…" || name = "…")` when the text could be an id.
pub fn label_filter(label_field: Option<&str>, text: &str) -> String {
    let q = quote(text);
    let id_like = text.len() == 15 && text.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    match (label_field, id_like) {
        (Some(l), true) => format!("(id = {q} || {l} = {q})"),
        (Some(l), false) => format!("{l} = {q}"),
        (None, _) => format!("id = {q}"),
    }
}

/// Why a draft's lookups were not all resolved.
#[derive(Debug)]
pub enum Unresolved {
    /// Labels matching no record or several, each with its candidates.
    Refused(Vec<Problem>),
    /// A lookup's call failed (the app unreachable, or refusing the read):
    /// reported as any other call's failure, with its own code.
    Call(CallError),
}

/// Resolves every lookup of `draft` to ids; a label matching no record or
/// several is refused with the candidates, and the body is not returned.
pub async fn resolve(api: &Api, describe: &Describe, mut draft: Draft) -> Result<Draft, Unresolved> {
    let mut problems = Vec::new();
    for lookup in std::mem::take(&mut draft.lookups) {
        match resolve_one(api, describe, &lookup).await.map_err(Unresolved::Call)? {
            Ok(id) => {
                if id != lookup.text {
                    draft.notes.push(format!("{}: \"{}\" → {id}", lookup.field, lookup.text));
                }
                match (lookup.index, draft.body.get_mut(&lookup.field)) {
                    (Some(i), Some(Value::Array(items))) if i < items.len() => items[i] = Value::from(id),
                    _ => {
                        draft.body.insert(lookup.field.clone(), Value::from(id));
                    }
                }
            }
            Err(p) => problems.push(p),
        }
    }
    if problems.is_empty() { Ok(draft) } else { Err(Unresolved::Refused(problems)) }
}

/// The id `lookup` names; `Ok(Err(_))` when no record or several match.
async fn resolve_one(api: &Api, describe: &Describe, lookup: &Lookup) -> Result<Result<String, Problem>, CallError> {
    let target = describe.entities.get(&lookup.entity);
    let label = target.and_then(|e| e.label.as_deref());
    let page = api
        .list(
            &lookup.entity,
            &ListQuery { per_page: Some(10), filter: Some(label_filter(label, &lookup.text)), ..ListQuery::default() },
        )
        .await?;
    let candidate = |item: &Map<String, Value>| Candidate {
        id: item.get("id").and_then(Value::as_str).unwrap_or_default().to_owned(),
        label: label.and_then(|l| item.get(l)).and_then(Value::as_str).unwrap_or_default().to_owned(),
    };
    let found: Vec<Candidate> = page.items.iter().map(candidate).collect();
    let what = match label {
        Some(l) => format!("{} record has {l}", lookup.entity),
        None => format!("{} record has id", lookup.entity),
    };
    Ok(match found.as_slice() {
        [one] => Ok(one.id.clone()),
        [] => {
            // The failure path may look further, to say what was probably meant.
            let near = match label {
                Some(l) => api
                    .list(
                        &lookup.entity,
                        &ListQuery {
                            per_page: Some(10),
                            filter: Some(format!("{l} ~ {}", quote(&lookup.text))),
                            ..ListQuery::default()
                        },
                    )
                    .await
                    .map(|p| p.items.iter().map(candidate).collect())
                    .unwrap_or_default(),
                None => Vec::new(),
            };
            let mut p = Problem::new(ErrorCode::InvalidRef, format!("no {what} \"{}\"", lookup.text))
                .field(&lookup.field)
                .got(Value::from(lookup.text.as_str()))
                .fix(if near.is_empty() {
                    format!("check the spelling, or list the {} records to pick one", lookup.entity)
                } else {
                    "use one of the candidates' exact label or id".into()
                });
            p.candidates = near;
            Err(p)
        }
        many => {
            let mut p = Problem::new(
                ErrorCode::InvalidRef,
                format!(
                    "\"{}\" is ambiguous: {} {} records match; nothing was written",
                    lookup.text,
                    many.len(),
                    lookup.entity
                ),
            )
            .field(&lookup.field)
            .got(Value::from(lookup.text.as_str()))
            .fix(format!("give the id instead, e.g. {}={}", lookup.field, many[0].id));
            p.candidates = many.to_vec();
            Err(p)
        }
    })
}

/// Why text is no number to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NumberError {
    NotANumber,
    /// A whole number beyond ±2^53: as a float it would be sent as a neighbour.
    Inexact,
}

/// What the app says of a whole number it cannot keep exactly.
pub const INEXACT: &str = "a whole number within ±2^53 (9007199254740992)";

/// A number as a person writes it, sent as exactly that: a whole number as an
/// integer (`9007199254740993` stays itself, for the app to judge, never the
/// float next to it), a decimal as the float it names. `inf`, `NaN` and
/// `1e400` are no number JSON can carry.
pub fn number(text: &str) -> Result<Value, NumberError> {
    const LIMIT: u64 = 1 << 53;
    let t = text.trim();
    let digits = t.strip_prefix(['-', '+']).unwrap_or(t);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        return match t.parse::<i64>() {
            Ok(i) if i.unsigned_abs() <= LIMIT => Ok(Value::from(i)),
            _ => Err(NumberError::Inexact),
        };
    }
    let n: f64 = t.parse().ok().filter(|n: &f64| n.is_finite()).ok_or(NumberError::NotANumber)?;
    Ok(if n.fract() == 0.0 && n.abs() <= LIMIT as f64 { Value::from(n as i64) } else { Value::from(n) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_identity_offset_past_a_day_gives_no_clock() {
        let identity = |offset: i32| protocol::identity::Identity {
            a2app: true,
            protocol: "1.0".into(),
            adapter_version: "1".into(),
            app: protocol::identity::AppIdentity { id: "a".into(), name: "A".into(), pb_version: "0.40.6".into() },
            schema_version: "sv".into(),
            server_now: "2026-07-30 09:15:00.000Z".into(),
            server_tz_offset_minutes: offset,
        };
        assert_eq!(AppClock::from_identity(&identity(120)).map(|c| c.offset_minutes), Some(120));
        assert_eq!(AppClock::from_identity(&identity(-24 * 60)).map(|c| c.offset_minutes), Some(-1440));
        for offset in [24 * 60 + 1, 35_791_395, i32::MAX, i32::MIN] {
            assert!(AppClock::from_identity(&identity(offset)).is_none(), "{offset}");
        }
    }

    fn clock(now: &str, offset: i32) -> AppClock {
        AppClock { now: parse_wire(now).unwrap(), offset_minutes: offset }
    }

    #[test]
    fn relative_dates_use_the_apps_day() {
        // Thursday 30 July 2026, 23:30 UTC: already Friday 31 July at UTC+2.
        let utc = clock("2026-07-30 23:30:00.000Z", 0);
        let berlin = clock("2026-07-30 23:30:00.000Z", 120);
        let rows = [
            ("today", "2026-07-30", "2026-07-31"),
            ("tomorrow", "2026-07-31", "2026-08-01"),
            ("Yesterday", "2026-07-29", "2026-07-30"),
            ("friday", "2026-07-31", "2026-08-07"),
            ("next friday", "2026-07-31", "2026-08-07"),
            ("this friday", "2026-07-31", "2026-07-31"),
            ("thursday", "2026-08-06", "2026-08-06"),
            ("in 3 days", "2026-08-02", "2026-08-03"),
            ("in 2 weeks", "2026-08-13", "2026-08-14"),
            ("2026-12-24", "2026-12-24", "2026-12-24"),
        ];
        for (text, want_utc, want_berlin) in rows {
            assert_eq!(relative_date(text, utc.today()).map(|d| d.to_string()).as_deref(), Some(want_utc), "{text}");
            assert_eq!(
                relative_date(text, berlin.today()).map(|d| d.to_string()).as_deref(),
                Some(want_berlin),
                "{text}"
            );
        }
        for text in ["someday", "in x days", "next", "2026-13-01", "in 3 months"] {
            assert_eq!(relative_date(text, utc.today()), None, "{text}");
        }
        assert_eq!(berlin.midnight(Date::constant(2026, 8, 1)), "2026-08-01T00:00:00+02:00");
        assert_eq!(
            clock("2026-07-30 12:00:00.000Z", -330).midnight(Date::constant(2026, 8, 1)),
            "2026-08-01T00:00:00-05:30"
        );
        assert_eq!(utc.midnight(Date::constant(2026, 8, 1)), "2026-08-01");
    }

    #[test]
    fn filter_literals_are_quoted_and_escaped() {
        assert_eq!(label_filter(Some("name"), "To Do"), r#"name = "To Do""#);
        assert_eq!(label_filter(Some("name"), r#"a "b" \c"#), r#"name = "a \"b\" \\c""#);
        assert_eq!(label_filter(Some("name"), "x\ny"), r#"name = "x\ny""#);
        assert_eq!(
            label_filter(Some("name"), "abcdefghij12345"),
            r#"(id = "abcdefghij12345" || name = "abcdefghij12345")"#
        );
        assert_eq!(label_filter(None, "x"), r#"id = "x""#);
    }

    fn kanban() -> Describe {
        let entity = |label: &str, fields: Value| {
            serde_json::json!({"label": label, "records": "/api/collections/x/records", "fields": fields,
                "systemFields": {"id": {"type": "string", "readOnly": true, "format": "id"}}})
        };
        serde_json::from_value(serde_json::json!({
            "app": {"id": "kanban", "name": "Kanban", "authMode": "single-user", "timezone": "UTC"},
            "schemaVersion": "sv1",
            "entities": {
                "lists": entity("name", serde_json::json!({"name": {"type": "string", "required": true, "max": 100}})),
                "cards": entity("title", serde_json::json!({
                    "title": {"type": "string", "required": true, "max": 10},
                    "list": {"type": "ref", "entity": "lists", "required": true},
                    "due_date": {"type": "datetime"},
                    "due_day": {"type": "string", "format": "YYYY-MM-DD"},
                    "priority": {"type": "enum", "values": ["none", "low", "high"], "default": "none"},
                    "labels": {"type": "list<enum>", "values": ["bug", "chore"]},
                    "points": {"type": "number", "integer": true, "min": 0, "max": 100},
                    "done": {"type": "boolean"}
                }))
            },
            "operations": [], "conventions": {}
        }))
        .unwrap()
    }

    fn args(list: &[&str]) -> Vec<Assignment> {
        list.iter().map(|a| Assignment::parse(a).unwrap().unwrap()).collect()
    }

    #[test]
    fn coerces_dates_in_the_apps_zone_and_queues_label_lookups() {
        let c = clock("2026-07-30 23:30:00.000Z", 120);
        let draft = prepare(
            &kanban(),
            "cards",
            Action::Create,
            &args(&[
                "title=Eat",
                "list=To Do",
                "due_date=tomorrow",
                "due_day=friday",
                "labels=bug, chore",
                "points=3",
                "done=yes",
            ]),
            &c,
        )
        .unwrap();
        assert_eq!(draft.body["due_date"], "2026-08-01T00:00:00+02:00");
        assert_eq!(draft.body["due_day"], "2026-08-07");
        assert_eq!(draft.body["labels"], serde_json::json!(["bug", "chore"]));
        assert_eq!(draft.body["points"], 3);
        assert_eq!(draft.body["done"], true);
        assert_eq!(
            draft.lookups,
            vec![Lookup { field: "list".into(), index: None, entity: "lists".into(), text: "To Do".into() }]
        );
    }

    #[test]
    fn numbers_times_and_json_are_sent_as_the_person_meant_them() {
        assert_eq!(number("9007199254740992"), Ok(serde_json::json!(9_007_199_254_740_992_i64)));
        assert_eq!(number(" -12 "), Ok(serde_json::json!(-12)));
        assert_eq!(number("2.50"), Ok(serde_json::json!(2.5)));
        assert_eq!(number("3e2"), Ok(serde_json::json!(300)));
        for inexact in ["9007199254740993", "-9223372036854775808", "123456789012345678901234"] {
            assert_eq!(number(inexact), Err(NumberError::Inexact), "{inexact}");
        }
        for nothing in ["", "inf", "NaN", "1e400", "0x10", "--1"] {
            assert_eq!(number(nothing), Err(NumberError::NotANumber), "{nothing}");
        }

        let mut doc = kanban();
        let meta: protocol::schema::Field = serde_json::from_value(serde_json::json!({"type": "json"})).unwrap();
        doc.entities.get_mut("cards").unwrap().fields.insert("meta".into(), meta);
        let c = clock("2026-07-30 09:00:00.000Z", 120);
        let draft =
            prepare(&doc, "cards", Action::Update, &args(&["due_date=2026-07-31T14:00", "meta=plain words"]), &c)
                .unwrap();
        assert_eq!(draft.body["due_date"], "2026-07-31T14:00:00+02:00", "a time without a zone is the app's");
        assert_eq!(draft.body["meta"], "plain words");
        assert_eq!(
            draft.notes,
            ["due_date: 2026-07-31T14:00 → 2026-07-31T14:00:00+02:00", "meta: plain words → a text"]
        );
        let zoned = prepare(&doc, "cards", Action::Update, &args(&["due_date=2026-07-31T14:00:00Z"]), &c).unwrap();
        assert_eq!(zoned.body["due_date"], "2026-07-31T14:00:00Z");
        let problems =
            prepare(&doc, "cards", Action::Update, &args(&["meta={\"a\":1,}", "points=9007199254740993"]), &c)
                .unwrap_err();
        let codes: Vec<(&str, Option<&str>)> = problems.iter().map(|p| (p.code.as_str(), p.field.as_deref())).collect();
        assert_eq!(codes, [("invalid_json", Some("meta")), ("out_of_range", Some("points"))]);
    }

    #[test]
    fn most_mistakes_are_caught_before_sending() {
        let c = clock("2026-07-30 09:00:00.000Z", 0);
        let problems = prepare(
            &kanban(),
            "cards",
            Action::Create,
            &args(&[
                "titel=x",
                "priority=High",
                "points=1.5",
                "due_date=someday",
                "done=maybe",
                "id=x",
                "due_day=2026-02-30",
            ]),
            &c,
        )
        .unwrap_err();
        let codes: Vec<(&str, Option<&str>)> = problems.iter().map(|p| (p.code.as_str(), p.field.as_deref())).collect();
        assert_eq!(
            codes,
            vec![
                ("unknown_field", Some("titel")),
                ("invalid_enum", Some("priority")),
                ("invalid_number", Some("points")),
                ("invalid_date", Some("due_date")),
                ("invalid_boolean", Some("done")),
                ("read_only_field", Some("id")),
                ("invalid_daykey", Some("due_day")),
                ("required_field", Some("title")),
                ("required_field", Some("list")),
            ]
        );
        assert_eq!(
            problems[0].fix.as_deref(),
            Some("did you mean title? fields: title, list, due_date, due_day, priority, labels, points, done")
        );
        assert_eq!(problems[1].fix.as_deref(), Some("did you mean priority=high?"));
        let unknown = prepare(&kanban(), "card", Action::Create, &[], &c).unwrap_err();
        assert_eq!(
            (unknown[0].code, unknown[0].fix.as_deref()),
            (ErrorCode::UnknownEntity, Some("did you mean \"cards\"?"))
        );
        // An update needs no required fields; a too-long title is still refused.
        let long = prepare(&kanban(), "cards", Action::Update, &args(&["title=far too long a title"]), &c).unwrap_err();
        assert_eq!(long[0].code, ErrorCode::TooLong);
    }
}
