//! The input: what the system recorded of one caller's writes in one turn.
//!
//! Plain data the server fills from its receipts and audit entries; the
//! checker reads nothing else about the app's records. A refused write is
//! kept (so a claim of it can be told "refused" rather than "never tried"),
//! but it is no write; an idempotent replay is not here at all, the server
//! having folded it into the write it repeats.

use indexmap::IndexMap;
use protocol::Violation;
use protocol::operation::JobState;
use serde_json::{Map, Value};

/// The writes of one caller since a point, oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Turn {
    pub writes: Vec<Write>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    pub action: Action,
    /// The entity written; empty for an operation or a job.
    pub entity: String,
    /// The record's id; for an operation or a job, the operation's name.
    pub id: String,
    /// The record's label as stored (its label field, else its id); for a
    /// delete, the label it had; for a refused write, the label it named or had.
    pub label: String,
    /// For an update that changed the label field: the label before.
    pub previous_label: Option<String>,
    /// The values the write named, as stored (the receipt's `fields`; as
    /// sent, for a refused write); for a delete, every field the record had.
    /// For an operation, its params.
    pub fields: Map<String, Value>,
    /// For each `ref` and `list<ref>` field in `fields`: the labels of the
    /// records it holds, in its order.
    pub ref_labels: IndexMap<String, Vec<String>>,
    /// The labels of the records this one belonged to before the write (what
    /// its `ref` fields held: its list, its category); for a create, after.
    /// How "Fix login in Backlog" is told from its namesake in To Do; empty
    /// when not known, and then a place the message names is not checked.
    pub place: Vec<String>,
    pub outcome: Outcome,
    /// The system's receipt sentence (for a refused write, what the audit says).
    pub text: String,
    /// When, in the receipts' wire form.
    pub at: String,
    /// For `JobStarted` and `JobFinished`: the job and where it is now.
    pub job: Option<Job>,
}

impl Write {
    /// A stored write with nothing but its action, entity and id; fill the rest.
    pub fn new(action: Action, entity: impl Into<String>, id: impl Into<String>) -> Write {
        Write {
            action,
            entity: entity.into(),
            id: id.into(),
            label: String::new(),
            previous_label: None,
            fields: Map::new(),
            ref_labels: IndexMap::new(),
            place: Vec::new(),
            outcome: Outcome::Stored,
            text: String::new(),
            at: String::new(),
            job: None,
        }
    }

    pub fn is_stored(&self) -> bool {
        self.outcome == Outcome::Stored
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Update,
    Delete,
    /// An operation that is not a job (its record writes are writes of their own).
    Run,
    /// An operation with a `job` executor: the job it started.
    JobStarted,
    /// The job ended: succeeded, failed or interrupted (`job.state`).
    JobFinished,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Stored,
    /// Refused before anything was stored: the guard's violations, or the
    /// operation's refusal as one violation.
    Refused(Vec<Violation>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub id: String,
    pub state: JobState,
}
