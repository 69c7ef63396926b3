//! What runs an operation besides the app's own executors: native Rust
//! handlers a library user registers ([`Registry`]), the app's backend
//! process ([`Backend`], which a transport installs), and what a handler is
//! given ([`Context`], a job's [`Progress`]). The running app holds them
//! ([`Runtime`]); `operations` calls them.

use crate::app::App;
use a2app_access::caller::Caller;
use a2app_definition::Error;
use a2app_definition::operations::{Executor, JobRun, Operation, Route};
use protocol::receipt::Receipt;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The largest backend answer read (a bigger one is `backend_error`).
pub const MAX_BACKEND_RESPONSE: usize = 1 << 20;

/// One call to the app's backend.
#[derive(Debug, Clone)]
pub struct BackendRequest {
    pub operation: String,
    pub method: String,
    pub path: String,
    /// GET and DELETE carry the params here.
    pub query: Vec<(String, String)>,
    /// POST, PUT and PATCH carry the params as a JSON object.
    pub body: Option<Value>,
    pub timeout: std::time::Duration,
    /// Who runs the operation; passed along in headers, never the token.
    pub caller: Caller,
    /// The caller's `Idempotency-Key`, passed along for the backend to honour.
    pub key: Option<String>,
}

#[derive(Debug, Clone)]
pub struct BackendResponse {
    pub status: u16,
    /// The answer as JSON (`null` when empty, a string when not JSON).
    pub body: Value,
}

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// Nothing was sent: no connection could be made.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// Sent, and no answer came in time: the work may have been done.
    #[error("timed out")]
    Timeout,
    /// Sent, and the connection broke before a status came back.
    #[error("no answer: {0}")]
    Lost(String),
    /// A status came back, but not an answer that could be read whole
    /// (larger than the limit, or cut off).
    #[error("status {status}, answer unreadable: {why}")]
    Unreadable { status: u16, why: String },
}

/// The app's own backend process, as a transport reaches it.
pub trait Backend: Send + Sync + 'static {
    fn call(&self, request: BackendRequest) -> BoxFuture<'_, Result<BackendResponse, BackendError>>;

    /// The routes the backend advertises; `Ok(None)` when it does not advertise any.
    fn routes(&self) -> BoxFuture<'_, Result<Option<Vec<Route>>, BackendError>>;
}

/// What a native handler gets.
#[derive(Clone)]
pub struct Context {
    pub app: Arc<App>,
    pub caller: Caller,
    pub operation: String,
    /// Checked and normalized: declared params only, defaults applied.
    pub params: Map<String, Value>,
    /// The caller's `Idempotency-Key`, for a handler that can honour it.
    pub key: Option<String>,
}

/// What an operation produced.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    pub result: Value,
    pub receipts: Vec<Receipt>,
}

impl From<Value> for Outcome {
    fn from(result: Value) -> Outcome {
        Outcome { result, receipts: Vec::new() }
    }
}

pub type Handler = Arc<dyn Fn(Context) -> BoxFuture<'static, Result<Outcome, Error>> + Send + Sync>;
pub type JobHandler = Arc<dyn Fn(Context, Progress) -> BoxFuture<'static, Result<Value, Error>> + Send + Sync>;

/// Native Rust handlers, by operation name. An operation whose executor is
/// `{"kind": "native"}` needs a handler; `{"kind": "job", "run": "native"}` a job handler.
#[derive(Clone, Default)]
pub struct Registry {
    handlers: HashMap<String, Handler>,
    jobs: HashMap<String, JobHandler>,
}

impl Registry {
    pub fn new() -> Registry {
        Registry::default()
    }

    /// Registers the handler of a `native` operation.
    pub fn handler<F, Fut>(mut self, name: &str, f: F) -> Registry
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Outcome, Error>> + Send + 'static,
    {
        self.handlers.insert(name.to_owned(), Arc::new(move |ctx| Box::pin(f(ctx))));
        self
    }

    /// Registers the work of a `job` operation with `"run": "native"`.
    pub fn job<F, Fut>(mut self, name: &str, f: F) -> Registry
    where
        F: Fn(Context, Progress) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, Error>> + Send + 'static,
    {
        self.jobs.insert(name.to_owned(), Arc::new(move |ctx, progress| Box::pin(f(ctx, progress))));
        self
    }

    pub(crate) fn native_handler(&self, name: &str) -> Option<Handler> {
        self.handlers.get(name).cloned()
    }

    pub(crate) fn job_handler(&self, name: &str) -> Option<JobHandler> {
        self.jobs.get(name).cloned()
    }

    /// Operations that need a handler this registry lacks.
    pub fn missing(&self, operations: &[Operation]) -> Vec<String> {
        operations
            .iter()
            .filter(|op| match &op.run {
                Executor::Native => !self.handlers.contains_key(&op.name),
                Executor::Job(spec) => spec.run == JobRun::Native && !self.jobs.contains_key(&op.name),
                _ => false,
            })
            .map(|op| op.name.clone())
            .collect()
    }
}

/// The operations state of a running app: handlers and the backend (pending
/// approvals are in the store).
pub struct Runtime {
    registry: Registry,
    backend: OnceLock<Arc<dyn Backend>>,
}

impl Runtime {
    pub fn new(registry: Registry) -> Runtime {
        Runtime { registry, backend: OnceLock::new() }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Installs the backend `http` operations call; false when one is already set.
    pub fn set_backend(&self, backend: Arc<dyn Backend>) -> bool {
        self.backend.set(backend).is_ok()
    }

    pub fn backend(&self) -> Option<&Arc<dyn Backend>> {
        self.backend.get()
    }
}

/// Reports a job's progress; each report is persisted before it returns.
#[derive(Clone)]
pub struct Progress {
    pub(crate) app: Arc<App>,
    pub(crate) job: Arc<tokio::sync::Mutex<protocol::operation::Job>>,
}

impl Progress {
    pub async fn report(&self, done: u64, total: u64, message: impl Into<String>) -> Result<(), Error> {
        let snapshot = {
            let mut job = self.job.lock().await;
            job.progress = protocol::operation::Progress { done, total, message: message.into() };
            job.updated_at = a2app_definition::datetime::format(self.app.clock.now());
            job.clone()
        };
        let store = Arc::clone(&self.app.store);
        a2app_store::blocking(move || Ok(store.put_job(&snapshot)?)).await
    }

    /// The job's id (e.g. to name a file it writes).
    pub async fn job_id(&self) -> String {
        self.job.lock().await.id.clone()
    }
}
