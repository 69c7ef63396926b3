//! The runtime's one error type and its one mapping onto the protocol's code
//! table. It lives here, below every other crate of the runtime, so identity,
//! storage and the runtime refuse in the same words; the store adds its own
//! errors' mapping (`impl From<StoreError>`).

use a2app_filter::FilterError;
use protocol::{ErrorBody, ErrorCode, Violation};
use serde_json::{Map, Value};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown entity {0}")]
    UnknownEntity(String),
    #[error("no such record")]
    NotFound,
    /// Something named in a path does not exist; the message says what.
    #[error("not found: {0}")]
    Missing(String),
    #[error("unknown operation {0}")]
    UnknownOperation(String),
    /// The guard refused the write; every violation is listed.
    #[error("the write was refused")]
    Invalid(Vec<Violation>),
    #[error("bad filter: {0}")]
    InvalidFilter(FilterError),
    #[error("bad query: {0}")]
    InvalidQuery(String),
    /// An expansion past the per-answer budget; the message says by how much.
    #[error("expand too large: {0}")]
    ExpandTooLarge(String),
    #[error("a record with this id already exists")]
    DuplicateId(String),
    #[error("the record is still referenced")]
    InUse { entity: String, field: String },
    #[error("a unique value is taken")]
    NotUnique(Vec<Violation>),
    #[error("wrong identity or password")]
    AuthFailed,
    #[error("values did not land")]
    NotStored(Vec<Violation>),
    #[error("duplicate request")]
    DuplicateRequest { id: String },
    #[error("version conflict")]
    VersionConflict(Box<Map<String, Value>>),
    /// Authenticated, or not, but not allowed to do this.
    #[error("forbidden: {0}")]
    Forbidden(String),
    /// A grant's caller without the scope this needs (the scope, as text).
    #[error("insufficient scope: {0}")]
    InsufficientScope(String),
    #[error("host {0} is not served")]
    ForbiddenHost(String),
    #[error("origin {0} may not call this app")]
    ForbiddenOrigin(String),
    #[error("unauthorized: {0}")]
    Unauthorized(String),
    /// Seconds until the caller may try again.
    #[error("rate limited")]
    RateLimited(u64),
    #[error("body too large")]
    PayloadTooLarge(usize),
    /// A destructive operation ran without an approval: a person must confirm,
    /// then the call is repeated with `key`.
    /// `person`: the key works once a person of the app approved the call
    /// (`destructive_consent = "person"`), not when the caller's host did.
    #[error("approval required")]
    ApprovalRequired { key: String, operation: String, params: Map<String, Value>, person: bool },
    /// An approval key that does not authorize this call; the message says why.
    #[error("approval refused: {0}")]
    ApprovalInvalid(String),
    /// The app's backend failed (`backend_error`, `backend_unavailable`, `backend_timeout`).
    /// `answer` is the backend's own JSON for a 4xx, which is meant for callers.
    #[error("backend: {message}")]
    Backend { code: ErrorCode, message: String, status: Option<u16>, answer: Option<Value> },
    #[error("internal: {0}")]
    Internal(String),
}

impl Error {
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::UnknownEntity(_) => ErrorCode::UnknownEntity,
            Error::NotFound => ErrorCode::NotFound,
            Error::UnknownOperation(_) => ErrorCode::UnknownOperation,
            Error::Missing(_) => ErrorCode::NotFound,
            Error::Invalid(v) => v.first().map(|v| v.code).unwrap_or(ErrorCode::InvalidJson),
            Error::InvalidFilter(_) => ErrorCode::InvalidFilter,
            Error::InvalidQuery(_) => ErrorCode::InvalidQuery,
            Error::ExpandTooLarge(_) => ErrorCode::ExpandTooLarge,
            Error::DuplicateId(_) => ErrorCode::DuplicateId,
            Error::InUse { .. } => ErrorCode::InUse,
            Error::NotStored(_) => ErrorCode::NotStored,
            Error::NotUnique(_) => ErrorCode::NotUnique,
            Error::AuthFailed => ErrorCode::AuthFailed,
            Error::VersionConflict(_) => ErrorCode::VersionConflict,
            Error::DuplicateRequest { .. } => ErrorCode::DuplicateRequest,
            Error::Forbidden(_) => ErrorCode::Forbidden,
            Error::InsufficientScope(_) => ErrorCode::InsufficientScope,
            Error::ForbiddenHost(_) => ErrorCode::ForbiddenHost,
            Error::ForbiddenOrigin(_) => ErrorCode::ForbiddenOrigin,
            Error::Unauthorized(_) => ErrorCode::Unauthorized,
            Error::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge,
            Error::RateLimited(_) => ErrorCode::RateLimited,
            Error::ApprovalRequired { .. } => ErrorCode::ApprovalRequired,
            Error::ApprovalInvalid(_) => ErrorCode::ApprovalInvalid,
            Error::Backend { code, .. } => *code,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The envelope sent to the caller. Internal detail never leaves here:
    /// the caller of this function logs it.
    pub fn to_body(&self) -> ErrorBody {
        let code = self.code();
        match self {
            Error::UnknownEntity(name) => ErrorBody::new(
                code,
                format!("\"{name}\" is not an entity of this app; read /api/_a2app/describe for the list"),
            ),
            Error::NotFound => ErrorBody::new(code, "The requested resource wasn't found."),
            Error::Missing(what) => ErrorBody::new(code, what.clone()),
            Error::UnknownOperation(name) => {
                ErrorBody::new(code, format!("\"{name}\" is not an operation of this app; GET /api/_ops lists them"))
            }
            Error::Invalid(violations) => {
                let message = match violations.len() {
                    1 => violations[0].message.clone(),
                    n => format!("{n} problems with this write; each is listed in violations"),
                };
                ErrorBody::from_violations(code, message, violations.clone())
            }
            Error::InvalidFilter(f) => {
                ErrorBody::new(code, format!("invalid filter: {} at position {}", f.message, f.position))
                    .with_extra("position", Value::from(f.position))
            }
            Error::InvalidQuery(why) | Error::ExpandTooLarge(why) => ErrorBody::new(code, why.clone()),
            Error::DuplicateId(id) => {
                ErrorBody::new(code, "a record with this id already exists").with_extra("id", Value::from(id.clone()))
            }
            Error::InUse { entity, field } => ErrorBody::new(
                code,
                format!(
                    "the record is still referenced by the required field {entity}.{field}; change or delete those records first"
                ),
            ),
            Error::NotUnique(violations) => {
                ErrorBody::from_violations(code, "a value that must be unique is already taken", violations.clone())
            }
            Error::AuthFailed => ErrorBody::new(code, "Failed to authenticate: wrong identity or password."),
            Error::NotStored(violations) => ErrorBody::from_violations(
                code,
                "the write did not land as sent; nothing was changed",
                violations.clone(),
            ),
            Error::DuplicateRequest { id } => ErrorBody::new(
                code,
                format!("this Idempotency-Key was already used in the last 24 hours; the first attempt wrote record {id}, so this one wrote nothing"),
            )
            .with_extra("id", Value::from(id.clone())),
            Error::VersionConflict(current) => {
                ErrorBody::new(code, "the record changed since the version you sent; the current record is attached")
                    .with_extra("record", Value::Object((**current).clone()))
            }
            Error::ForbiddenHost(host) => ErrorBody::new(
                code,
                format!(
                    "this app does not answer to the host name \"{host}\"; its owner can allow it by adding it to [http] allowed_hosts in app.toml"
                ),
            )
            .with_extra("host", Value::from(host.clone())),
            Error::ForbiddenOrigin(origin) => ErrorBody::new(
                code,
                format!("requests from the web origin {origin} are refused; only the app's own page (or an origin in [http] allowed_origins) may call it"),
            ),
            Error::Unauthorized(why) | Error::Forbidden(why) => ErrorBody::new(code, why.clone()),
            Error::InsufficientScope(scope) => ErrorBody::new(
                code,
                format!("this grant does not hold the scope {scope}; ask the person for a grant that does"),
            )
            .with_extra("scope", Value::from(scope.clone())),
            Error::RateLimited(secs) => {
                ErrorBody::new(code, format!("too many requests from this caller; retry in {secs} s")).with_extra("retryAfter", Value::from(*secs))
            }
            Error::PayloadTooLarge(limit) => ErrorBody::new(code, format!("the request body is larger than {limit} bytes")),
            Error::ApprovalRequired { key, operation, params, person: false } => ErrorBody::new(
                code,
                format!(
                    "\"{operation}\" is destructive: a person must confirm it first. Show them the operation and its params, and once they agreed repeat the exact same call with the header X-A2App-Approval: {key}"
                ),
            )
            .with_extra("approvalKey", Value::from(key.clone()))
            .with_extra("operation", Value::from(operation.clone()))
            .with_extra("params", Value::Object(params.clone()))
            .with_extra("consent", Value::from("host")),
            Error::ApprovalRequired { key, operation, params, person: true } => ErrorBody::new(
                code,
                format!(
                    "\"{operation}\" is destructive, and this app asks a person of its own to approve each such call: they approve this one on the app's page at /_/#approval={key} (or with agent-app approvals). Tell them so; once they approved, repeat the exact same call with the header X-A2App-Approval: {key}. Approving it yourself is not possible"
                ),
            )
            .with_extra("approvalKey", Value::from(key.clone()))
            .with_extra("operation", Value::from(operation.clone()))
            .with_extra("params", Value::Object(params.clone()))
            .with_extra("consent", Value::from("person"))
            .with_extra("approvalUrl", Value::from(format!("/_/#approval={key}"))),
            Error::ApprovalInvalid(why) => ErrorBody::new(code, why.clone()),
            Error::Backend { message, status, answer, .. } => {
                let mut body = ErrorBody::new(code, message.clone());
                if let Some(s) = status {
                    body = body.with_extra("backendStatus", Value::from(*s));
                }
                if let Some(a) = answer {
                    body = body.with_extra("backend", a.clone());
                }
                body
            }
            Error::Internal(_) => ErrorBody::new(code, "Something went wrong while processing your request."),
        }
    }
}
