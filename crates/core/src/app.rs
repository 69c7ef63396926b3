//! A running app: its definition loaded and checked, its database opened and
//! migrated, its agent token, jobs left by the last process marked
//! interrupted, and the parts the runtime keeps while it serves.

use a2app_access::Context;
use a2app_access::audit::AgentLog;
use a2app_access::limits::Limiter;
use a2app_definition::problem::Problem;
use std::path::{Path, PathBuf};

pub use a2app_definition::{AppConfig, AppDefinition, AuthMode, config, operations, presentation, requests};

/// A running app: what identity and access read of it (its definition,
/// store, clock, agent token, limiter and agent log: the [`Context`], which
/// an `App` dereferences to), its change feed and its operations' runtime.
pub struct App {
    pub context: Context,
    pub realtime: a2app_store::realtime::Hub,
    /// `schemaVersion`: the fingerprint of what describe publishes (schema,
    /// operations, request capabilities), so a client's cached describe is
    /// dropped when any of them changes.
    pub schema_version: String,
    /// Operation handlers and the backend.
    pub operations: crate::handlers::Runtime,
}

/// An `App` is a `Context` to identity and access (`a2app-access` takes
/// `&Context`), and its fields read as the app's own (`app.store`).
impl std::ops::Deref for App {
    type Target = Context;

    fn deref(&self) -> &Context {
        &self.context
    }
}

impl App {
    /// The describe document, live.
    pub fn describe(&self) -> protocol::describe::Describe {
        a2app_definition::describe::describe(&self.definition, &self.schema_version)
    }

    /// One part of describe (`describe/cards`, `describe/cards/fields/title`).
    pub fn describe_part(&self, path: &str) -> Result<serde_json::Value, a2app_definition::Error> {
        a2app_definition::describe::part(&self.definition, &self.schema_version, path)
    }
}

/// Reads and validates an app directory (see `a2app_definition::load`),
/// judging its rules and crud filters with the store's compiler: what
/// `agent-app check` runs, and `serve` refuses a directory that fails it.
pub fn load(dir: &Path) -> Result<AppDefinition, Vec<Problem>> {
    a2app_definition::load(dir, Some(a2app_store::fits))
}

/// How to open an app.
#[derive(Clone)]
pub struct OpenOptions {
    /// Apply migrations that lose or reinterpret data.
    pub allow_destructive: bool,
    pub clock: std::sync::Arc<dyn a2app_definition::clock::Clock>,
    /// Native Rust handlers for operations declared `native` (or jobs with `"run": "native"`).
    pub operations: crate::handlers::Registry,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            allow_destructive: false,
            clock: std::sync::Arc::new(a2app_definition::clock::SystemClock),
            operations: crate::handlers::Registry::default(),
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
        let store = a2app_store::sqlite::SqliteStore::open(&definition.data_dir().join("data.db"))
            .map_err(|e| OpenError::Store(e.to_string()))?;
        let migration = a2app_store::Store::migrate(&store, &definition.schema, options.allow_destructive).map_err(
            |e| match e {
                a2app_store::StoreError::MigrationRefused(what) => OpenError::Refused(what),
                a2app_store::StoreError::Unmigratable(why) => OpenError::Store(why),
                other => OpenError::Store(other.to_string()),
            },
        )?;
        let token_path = definition.token_path();
        let agent_token =
            crate::token::ensure(&token_path).map_err(|source| OpenError::Io { path: token_path, source })?;
        // Jobs the last process left queued or running will never finish: say so.
        let now = a2app_definition::datetime::format(options.clock.now());
        let interrupted =
            a2app_store::Store::interrupt_jobs(&store, &now).map_err(|e| OpenError::Store(e.to_string()))?;
        if interrupted > 0 {
            tracing::warn!(interrupted, "jobs left running by the last process are now interrupted");
        }
        let schema_version = a2app_definition::describe::version(&definition);
        let rules_read_request = a2app_access::rules::read_request(&definition);
        let context = Context {
            store: std::sync::Arc::new(store),
            clock: options.clock,
            agent_log: AgentLog::new(definition.logs_dir().join("agent-actions.jsonl")),
            limiter: Limiter::new(definition.config.limits),
            definition,
            agent_token,
            rules_read_request,
        };
        let app = App {
            context,
            realtime: a2app_store::realtime::Hub::new(),
            operations: crate::handlers::Runtime::new(options.operations),
            schema_version,
        };
        Ok((app, migration.applied))
    }
}
