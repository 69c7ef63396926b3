//! The app-to-agent queue: a person asks, from the app, for one of the
//! capabilities the app declared; a linked agent claims the request, does
//! the work and answers it. The app only ever asks for a declared
//! capability with typed params: nothing else passes through.

use crate::describe::DescribedParam;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One thing the app may ask an agent to do, as `requests.json` declares it
/// and describe publishes it. A person consents to each capability, on the
/// agent's side, from these words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Capability {
    pub name: String,
    /// What the app's button says, e.g. "Summarise this board".
    pub title: String,
    /// The task, in words the person evaluates before consenting.
    pub description: String,
    /// The entities an agent reads to do it.
    #[serde(default)]
    pub reads: Vec<String>,
    /// The entities an agent writes to do it.
    #[serde(default)]
    pub writes: Vec<String>,
    /// What the person gives with the request (data, never instructions).
    #[serde(default)]
    pub params: IndexMap<String, DescribedParam>,
    /// What the agent answers with.
    #[serde(default)]
    pub result: IndexMap<String, DescribedParam>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestStatus {
    /// Asked, waiting for an agent.
    Pending,
    /// An agent holds it until `leaseUntil`; after that another may claim it.
    Claimed,
    /// Answered with a result.
    Done,
    /// The agent said it could not do it (`failure`).
    Failed,
    /// The person took it back.
    Cancelled,
}

impl RequestStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RequestStatus::Pending => "pending",
            RequestStatus::Claimed => "claimed",
            RequestStatus::Done => "done",
            RequestStatus::Failed => "failed",
            RequestStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<RequestStatus> {
        [Self::Pending, Self::Claimed, Self::Done, Self::Failed, Self::Cancelled]
            .into_iter()
            .find(|s| s.as_str() == text)
    }

    /// Done, failed or cancelled: nothing changes it any more.
    pub fn is_closed(self) -> bool {
        matches!(self, RequestStatus::Done | RequestStatus::Failed | RequestStatus::Cancelled)
    }
}

/// A request in the queue (`/api/_a2app/requests/{id}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRequest {
    pub id: String,
    pub capability: String,
    pub params: Map<String, Value>,
    pub status: RequestStatus,
    /// Who asked: `own_ui` (the app's page) or `user:<id>`.
    pub requested_by: String,
    pub created: String,
    pub updated: String,
    /// The self-asserted name of the agent holding or having answered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
}

/// What claiming answers: the request, and the key that alone may answer it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Claimed {
    pub request: AgentRequest,
    pub claim_key: String,
}
