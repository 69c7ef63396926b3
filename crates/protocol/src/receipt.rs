//! The receipt: what the system, not the model, reports a write did.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Generated from the stored record after it was read back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Receipt {
    /// One sentence for a person: `Added "Eat chicken" to To Do, due Fri 31 Jul`.
    pub text: String,
    /// `create`, `update` or `delete`.
    pub action: String,
    pub entity: String,
    pub id: String,
    /// The stored values of the fields the write named (all fields for a delete).
    pub fields: Map<String, Value>,
    /// When it was stored, wire form.
    pub at: String,
    /// The self-asserted agent name, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Who wrote: `own_ui`, `agent`, `user` or `anonymous`.
    pub caller: String,
    /// For an update: what the record held before it, of the fields it
    /// changed, its label field and its refs (what a message about the change
    /// names it by: "renamed X", "moved X from To Do").
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub before: Map<String, Value>,
}
