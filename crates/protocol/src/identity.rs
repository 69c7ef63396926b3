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
