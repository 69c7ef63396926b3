//! What invoking an operation answers, and the state of a background job.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /api/ops/{name}` for a `crud`, `http` or native operation: 200.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Invoked {
    pub ok: bool,
    pub operation: String,
    /// The stored record (create/update), `{"deleted": n}`, a list page, or
    /// what the backend or handler answered.
    pub result: Value,
    /// One receipt per record the operation wrote, in order.
    pub receipts: Vec<crate::receipt::Receipt>,
}

/// `POST /api/ops/{name}` for a `job` operation: 202, before the work runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStarted {
    pub ok: bool,
    pub operation: String,
    pub job_id: String,
    /// Where to poll: `/api/_jobs/{jobId}`.
    pub status: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Succeeded,
    Failed,
    /// The server stopped while the job ran; it is never re-run by itself.
    Interrupted,
}

impl JobState {
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Succeeded => "succeeded",
            JobState::Failed => "failed",
            JobState::Interrupted => "interrupted",
        }
    }

    pub fn from_name(name: &str) -> Option<JobState> {
        [JobState::Queued, JobState::Running, JobState::Succeeded, JobState::Failed, JobState::Interrupted]
            .into_iter()
            .find(|s| s.as_str() == name)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub done: u64,
    pub total: u64,
    #[serde(default)]
    pub message: String,
}

/// Why a job failed: a code of the error table and words for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobError {
    pub code: crate::ErrorCode,
    pub message: String,
}

/// `GET /api/_jobs/{jobId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub id: String,
    pub operation: String,
    pub state: JobState,
    pub progress: Progress,
    pub result: Option<Value>,
    pub error: Option<JobError>,
    pub created_at: String,
    pub updated_at: String,
}

/// A call of a destructive operation waiting for a person's yes
/// (`destructive_consent = "person"`), as `GET /api/_a2app/approvals` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaitingApproval {
    /// The approval key the agent repeats the call with once approved.
    pub key: String,
    pub operation: String,
    /// The exact params the call runs with.
    pub params: serde_json::Map<String, Value>,
    /// The asking agent's name for itself (a claim, not proof), and its grant.
    pub agent: String,
    pub grant: String,
    /// `waiting`, `approved` or `denied`.
    pub status: String,
    pub created: String,
    pub expires: String,
}
