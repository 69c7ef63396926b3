//! An app directory: `app.toml`, `schema.json`, `operations.json`,
//! `requests.json`, `ui/`, and
//! the runtime state created at launch (`data/`, `logs/`, `.agent-token`).
//!
//! Loading validates every file and reports every problem at once; it is what
//! `agent-app check` runs, and `serve` refuses to start on a directory that
//! does not load.

pub mod config;
pub mod operations;
pub mod presentation;
pub mod requests;

use crate::problem::Problem;
use protocol::schema::Schema;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use config::{AppConfig, AuthMode};

/// A validated app definition.
#[derive(Debug, Clone)]
pub struct AppDefinition {
    pub dir: PathBuf,
    pub config: AppConfig,
    /// Shared with the store's writer, which needs it for every write.
    pub schema: Arc<Schema>,
    pub operations: Vec<operations::Operation>,
    /// What the app may ask an agent for (`requests.json`).
    pub requests: Vec<requests::Capability>,
}

impl AppDefinition {
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    pub fn ui_dir(&self) -> PathBuf {
        self.dir.join("ui")
    }

    pub fn token_path(&self) -> PathBuf {
        self.dir.join(".agent-token")
    }
}

/// Reads and validates an app directory. On failure, every problem found.
pub fn load(dir: &Path) -> Result<AppDefinition, Vec<Problem>> {
    let mut problems = Vec::new();
    let read = |name: &'static str, problems: &mut Vec<Problem>, required: bool| -> Option<String> {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => None,
            Err(e) => {
                let message = if e.kind() == std::io::ErrorKind::NotFound {
                    "missing: every app needs this file".to_owned()
                } else {
                    format!("cannot be read: {e}")
                };
                problems.push(Problem { file: name, path: "$".into(), message });
                None
            }
        }
    };
    let config = read(config::FILE, &mut problems, true).and_then(|text| match config::parse(&text) {
        Ok(c) => Some(c),
        Err(p) => {
            problems.extend(p.list);
            None
        }
    });
    let multi_user = config.as_ref().is_some_and(|c| c.auth_mode == AuthMode::MultiUser);
    let schema = read(crate::schema::FILE, &mut problems, true)
        .and_then(|text| kept(crate::schema::parse(&text, multi_user), &mut problems));
    // The optional files: absent is empty; present, parsed against the schema.
    let operations = match read(operations::FILE, &mut problems, false) {
        None => Some(Vec::new()),
        Some(text) => kept(operations::parse(&text, schema.as_ref()), &mut problems),
    };
    let requests = match read(requests::FILE, &mut problems, false) {
        None => Some(Vec::new()),
        Some(text) => kept(requests::parse(&text, schema.as_ref()), &mut problems),
    };
    match (config, schema, operations, requests) {
        (Some(config), Some(schema), Some(operations), Some(requests)) if problems.is_empty() => {
            Ok(AppDefinition { dir: dir.to_path_buf(), config, schema: Arc::new(schema), operations, requests })
        }
        _ => Err(problems),
    }
}

/// A parsed file's value, or its problems added to `problems`.
fn kept<T>(parsed: Result<T, crate::problem::Problems>, problems: &mut Vec<Problem>) -> Option<T> {
    match parsed {
        Ok(value) => Some(value),
        Err(p) => {
            problems.extend(p.list);
            None
        }
    }
}

/// A running app: its definition, its store, its clock and its change feed.
pub struct App {
    pub definition: AppDefinition,
    pub store: std::sync::Arc<dyn crate::store::Store>,
    pub clock: std::sync::Arc<dyn crate::clock::Clock>,
    pub realtime: crate::realtime::Hub,
    /// `schemaVersion`: the fingerprint of what describe publishes (schema,
    /// operations, request capabilities), so a client's cached describe is
    /// dropped when any of them changes.
    pub schema_version: String,
    /// The loopback write credential (`.agent-token`).
    pub agent_token: String,
    /// `logs/agent-actions.jsonl`.
    pub agent_log: crate::audit::AgentLog,
    pub limiter: crate::limits::Limiter,
    /// Operation handlers, pending approvals and the backend.
    pub operations: crate::operations::Runtime,
    /// Whether a rule reads `@request.query.*` or `@request.headers.*`, so
    /// transports hand them on (`rules::reads_request_parts`), judged once.
    pub rules_read_request: bool,
}

/// How to open an app.
#[derive(Clone)]
pub struct OpenOptions {
    /// Apply migrations that lose or reinterpret data.
    pub allow_destructive: bool,
    pub clock: std::sync::Arc<dyn crate::clock::Clock>,
    /// Native Rust handlers for operations declared `native` (or jobs with `"run": "native"`).
    pub operations: crate::operations::Registry,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            allow_destructive: false,
            clock: std::sync::Arc::new(crate::clock::SystemClock),
            operations: crate::operations::Registry::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot prepare {path}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the schema change was refused because it would lose data:\n  - {}\nre-run with --allow-destructive to apply it anyway", .0.join("\n  - "))]
    Refused(Vec<String>),
    #[error("cannot open the database: {0}")]
    Store(String),
    #[error("operations.json declares native operations with no registered handler: {}", .0.join(", "))]
    MissingHandlers(Vec<String>),
}

impl App {
    /// Creates the runtime directories, opens the database and migrates it.
    /// Returns the app and what the migration applied.
    pub fn open(definition: AppDefinition, options: OpenOptions) -> Result<(App, Vec<String>), OpenError> {
        let missing = options.operations.missing(&definition.operations);
        if !missing.is_empty() {
            return Err(OpenError::MissingHandlers(missing));
        }
        for dir in [definition.data_dir(), definition.logs_dir()] {
            std::fs::create_dir_all(&dir).map_err(|source| OpenError::Io { path: dir.clone(), source })?;
        }
        let store = crate::store::sqlite::SqliteStore::open(&definition.data_dir().join("data.db"))
            .map_err(|e| OpenError::Store(e.to_string()))?;
        let migration = crate::store::Store::migrate(&store, &definition.schema, options.allow_destructive).map_err(
            |e| match e {
                crate::store::StoreError::MigrationRefused(what) => OpenError::Refused(what),
                crate::store::StoreError::Unmigratable(why) => OpenError::Store(why),
                other => OpenError::Store(other.to_string()),
            },
        )?;
        let token_path = definition.token_path();
        let agent_token =
            crate::token::ensure(&token_path).map_err(|source| OpenError::Io { path: token_path, source })?;
        // Jobs the last process left queued or running will never finish: say so.
        let now = crate::datetime::format(options.clock.now());
        let interrupted =
            crate::store::Store::interrupt_jobs(&store, &now).map_err(|e| OpenError::Store(e.to_string()))?;
        if interrupted > 0 {
            tracing::warn!(interrupted, "jobs left running by the last process are now interrupted");
        }
        let schema_version = crate::describe::version(&definition);
        let rules_read_request = crate::rules::read_request(&definition);
        let app = App {
            store: std::sync::Arc::new(store),
            clock: options.clock,
            realtime: crate::realtime::Hub::new(),
            agent_log: crate::audit::AgentLog::new(definition.logs_dir().join("agent-actions.jsonl")),
            limiter: crate::limits::Limiter::new(definition.config.limits),
            operations: crate::operations::Runtime::new(options.operations),
            definition,
            schema_version,
            agent_token,
            rules_read_request,
        };
        Ok((app, migration.applied))
    }
}
