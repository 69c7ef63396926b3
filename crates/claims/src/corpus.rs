//! The labeled corpus's format, for every harness that runs it: the
//! in-memory one in this crate's tests and one that makes the same writes
//! through a real server.
//!
//! A corpus file holds apps and cases. An app is a directory of app files
//! with the records that exist before every case (its `seed`). A case is a
//! setup of writes, made as HTTP writes are made, then a message, and what
//! checking the message against those writes must answer: the verdict and,
//! per claim in order, its kind and reason.
//!
//! ```json
//! { "apps": { "kanban": { "dir": "examples/kanban", "today": "2026-07-30",
//!     "seed": [ { "alias": "todo", "entity": "lists", "body": { "name": "To Do" } },
//!               { "alias": "login", "entity": "cards", "body": { "title": "Fix login", "list": "@todo" } } ] } },
//!   "cases": [ { "name": "moved-to-done", "app": "kanban",
//!     "setup": [ { "action": "update", "entity": "cards", "record": "@login", "body": { "list": "@done" },
//!                  "expect": "stored" } ],
//!     "message": "I moved 'Fix login' to Done.",
//!     "verdict": "pass", "claims": ["update backed"] } ] }
//! ```
//!
//! A step becomes one request: `create` is `POST
//! /api/collections/{entity}/records` with `body`, `update` is `PATCH
//! …/records/{id}`, `delete` is `DELETE …/records/{id}`, `run` is `POST
//! /api/ops/{operation}` with `body` as the params. A string `@alias` in a
//! body, anywhere in it, is the id of the seed record or of the record an
//! earlier step created `as` that alias. `idempotencyKey` is sent as the
//! `Idempotency-Key` header. `expect` is what the app must answer: `stored`,
//! `replay` (a key already used: the app names the first write and stores
//! nothing), or `{"refused": [codes]}` (nothing stored; the violations' codes,
//! in any order). A `run` of a job operation may say which `job` state the
//! job must have reached before the message is checked.

use indexmap::IndexMap;
use protocol::ErrorCode;
use protocol::claim::Verdict;
use protocol::describe::{Describe, DescribedApp, DescribedEntity, DescribedOperation, DescribedParam, SystemField};
use protocol::operation::JobState;
use protocol::schema::Schema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Corpus {
    pub apps: IndexMap<String, App>,
    pub cases: Vec<Case>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct App {
    /// The app's directory, from the workspace root.
    pub dir: String,
    /// The app's date while the cases run (YYYY-MM-DD): what "Friday" counts from.
    pub today: String,
    /// Records made, in order, before every case.
    pub seed: Vec<Seed>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Seed {
    pub alias: String,
    pub entity: String,
    pub body: Map<String, Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Case {
    pub name: String,
    pub app: String,
    #[serde(default)]
    pub setup: Vec<Step>,
    pub message: String,
    pub verdict: Verdict,
    /// Per claim, in order: its kind and `backed` or its reason ("update backed", "delete wrong_target").
    pub claims: Vec<String>,
    /// The message is not in a language the checker reads.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unreadable: bool,
    /// What the case is about.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

impl Case {
    /// Whether the message claims something the writes do not back (or cannot be read).
    pub fn is_false_claim(&self) -> bool {
        self.verdict == Verdict::Withheld
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    pub action: StepAction,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub entity: String,
    /// `update`, `delete`: the record, as `@alias`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// `create`: the alias later steps name the new record by.
    #[serde(default, rename = "as", skip_serializing_if = "Option::is_none")]
    pub alias: Option<String>,
    /// `run`: the operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// The body (`create`, `update`) or the params (`run`).
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub body: Map<String, Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    pub expect: Expect,
    /// `run` of a job operation: the state the job is in when the message is checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobState>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepAction {
    Create,
    Update,
    Delete,
    Run,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expect {
    Stored,
    Replay,
    Refused(Vec<ErrorCode>),
}

/// Reads a corpus file's text.
pub fn parse(text: &str) -> Result<Corpus, serde_json::Error> {
    serde_json::from_str(text)
}

/// An app's describe from its `schema.json` and `operations.json` texts, as
/// the server publishes it (without conventions and requests, which the
/// checker does not read): for a harness that checks without a server.
pub fn describe(id: &str, timezone: &str, schema: &str, operations: Option<&str>) -> Result<Describe, String> {
    let schema: Schema = serde_json::from_str(schema).map_err(|e| format!("schema.json: {e}"))?;
    let ops: Vec<Map<String, Value>> = match operations {
        Some(text) => serde_json::from_str(text).map_err(|e| format!("operations.json: {e}"))?,
        None => Vec::new(),
    };
    let system = |kind: &str, format: &str| SystemField { kind: kind.into(), read_only: true, format: format.into() };
    let entities = schema
        .entities
        .into_iter()
        .map(|(name, e)| {
            let system_fields = IndexMap::from([
                ("id".to_owned(), system("string", "15 characters of [a-z0-9]")),
                ("created".to_owned(), system("datetime", "YYYY-MM-DD HH:MM:SS.mmmZ (UTC)")),
                ("updated".to_owned(), system("datetime", "YYYY-MM-DD HH:MM:SS.mmmZ (UTC)")),
            ]);
            let described = DescribedEntity {
                label: e.label,
                records: format!("/api/collections/{name}/records"),
                fields: e.fields,
                system_fields,
                indexes: e.indexes,
            };
            (name, described)
        })
        .collect();
    let operations = ops
        .iter()
        .map(|op| {
            let text = |k: &str| op.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
            let params: IndexMap<String, DescribedParam> = op
                .get("params")
                .and_then(Value::as_object)
                .map(|p| {
                    p.iter().filter_map(|(k, v)| Some((k.clone(), serde_json::from_value(v.clone()).ok()?))).collect()
                })
                .unwrap_or_default();
            DescribedOperation {
                name: text("name"),
                description: text("description"),
                params,
                executor: op
                    .get("executor")
                    .and_then(|e| e.get("kind"))
                    .and_then(Value::as_str)
                    .unwrap_or("crud")
                    .to_owned(),
                destructive: op.get("destructive").and_then(Value::as_bool).unwrap_or(false),
                schedule: op.get("schedule").and_then(Value::as_str).map(str::to_owned),
                url: format!("/api/ops/{}", text("name")),
                consent: None,
            }
        })
        .collect();
    Ok(Describe {
        app: DescribedApp {
            id: id.to_owned(),
            name: id.to_owned(),
            description: String::new(),
            auth_mode: "single-user".into(),
            timezone: timezone.to_owned(),
        },
        schema_version: "corpus".into(),
        entities,
        operations,
        requests: Vec::new(),
        conventions: IndexMap::new(),
    })
}
