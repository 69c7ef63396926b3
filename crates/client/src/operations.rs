//! The answers of `POST /api/ops/{name}` and `GET /api/_jobs/{id}`.
//!
//! The wire contract is fixed (see DESIGN.md section 4); these are the client's
//! readings of it, tolerant of extra keys.

use protocol::receipt::Receipt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What running an operation gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// 200: done, with its result and the receipts of its writes.
    Done { operation: String, result: Value, receipts: Vec<Receipt> },
    /// 202: a job was started; follow it at `status`.
    Job { operation: String, job_id: String, status: String },
}

impl Outcome {
    pub fn from_answer(name: &str, value: &Value) -> Outcome {
        let operation = value.get("operation").and_then(Value::as_str).unwrap_or(name).to_owned();
        if let Some(job_id) = value.get("jobId").and_then(Value::as_str) {
            let status = value
                .get("status")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| format!("/api/_jobs/{job_id}"));
            return Outcome::Job { operation, job_id: job_id.to_owned(), status };
        }
        let receipts = value.get("receipts").cloned().and_then(|r| serde_json::from_value(r).ok()).unwrap_or_default();
        Outcome::Done { operation, result: value.get("result").cloned().unwrap_or(Value::Null), receipts }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub id: String,
    #[serde(default)]
    pub operation: String,
    /// `queued`, `running`, `succeeded`, `failed` or `interrupted`.
    pub state: String,
    #[serde(default)]
    pub progress: Progress,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    #[serde(default)]
    pub done: u64,
    #[serde(default)]
    pub total: u64,
    #[serde(default)]
    pub message: String,
}

impl Job {
    pub fn is_finished(&self) -> bool {
        matches!(self.state.as_str(), "succeeded" | "failed" | "interrupted")
    }
}
