//! The identity document served at `GET /api/_a2app`.

use serde::{Deserialize, Serialize};

/// Which app answers, which contract it speaks, and its clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// Always `true`: the marker that tells an A2App from anything else on a port.
    pub a2app: bool,
    pub protocol: String,
    pub adapter_version: String,
    pub app: AppIdentity,
    pub schema_version: String,
    pub server_now: String,
    pub server_tz_offset_minutes: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppIdentity {
    pub id: String,
    pub name: String,
    pub pb_version: String,
}

/// `GET /api/_a2app/whoami`: who the caller is and what it may do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WhoAmI {
    /// `own_ui`, `agent`, `user`, `anonymous`, or `grant:<id>` for a grant's token.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// A grant's scopes: all the caller may do, within its person's rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    pub app: String,
    pub auth_mode: String,
    pub may: Permissions,
    /// What to send to be able to do more, when something is not allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Permissions {
    pub read: bool,
    pub write: bool,
    pub operations: bool,
}
