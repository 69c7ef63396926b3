//! HTTP tests over a real socket: each test starts the app on 127.0.0.1:0
//! with a temp directory and talks to it with a plain HTTP client.

#![allow(clippy::unwrap_used)] // test helpers panic on purpose: a panic is a failed test

mod access;
mod claims;
mod connection;
mod contract;
mod dashboard;
mod discovery;
mod files;
mod fuzz;
mod grants;
mod guard;
mod mcp;
mod oauth;
mod ops;
mod realtime;
mod records;
mod requests;
mod surfaces;
mod users;

use a2app_core::clock::FixedClock;
use a2app_core::{App, OpenOptions};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

pub struct TestApp {
    pub url: String,
    pub token: String,
    pub app: Arc<App>,
    pub clock: Arc<FixedClock>,
    pub http: reqwest::Client,
    pub dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// The instant every test app's clock shows.
pub const NOW: &str = "2026-07-30T09:15:00Z";

impl TestApp {
    /// Serves a copy of `examples/kanban`.
    pub async fn kanban() -> TestApp {
        TestApp::with_config(|toml| toml.to_owned()).await
    }

    /// Serves a copy of `examples/kanban` with its app.toml rewritten by `edit`.
    pub async fn with_config(edit: impl Fn(&str) -> String) -> TestApp {
        TestApp::build(edit, None, a2app_core::operations::Registry::default()).await
    }

    /// Serves a copy of `examples/kanban` with its app.toml rewritten by
    /// `edit`, its operations.json replaced when given, and native handlers.
    pub async fn build(
        edit: impl Fn(&str) -> String,
        operations: Option<&str>,
        registry: a2app_core::operations::Registry,
    ) -> TestApp {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kanban");
        TestApp::serve(&root, edit, operations, registry).await
    }

    /// Serves a copy of the app in `root`, its operations.json replaced when given.
    pub async fn example(root: &Path, operations: Option<&str>) -> TestApp {
        TestApp::serve(root, |t| t.to_owned(), operations, a2app_core::operations::Registry::default()).await
    }

    /// Serves a copy of a fixture app under `tests/fixtures/`.
    pub async fn fixture(name: &str) -> TestApp {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
        TestApp::serve(&root, |t| t.to_owned(), None, a2app_core::operations::Registry::default()).await
    }

    /// Serves the `notes` fixture (a multi-user app) with some of its notes
    /// rules replaced: `rules` maps an action (`list`, `view`, …) to its rule.
    pub async fn notes_with_rules(rules: Value) -> TestApp {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/notes");
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::copy(root.join("app.toml"), dir.path().join("app.toml")).expect("copy app.toml");
        let text = std::fs::read_to_string(root.join("schema.json")).expect("schema.json");
        let mut schema: Value = serde_json::from_str(&text).expect("the fixture's schema");
        for (action, rule) in rules.as_object().expect("rules by action") {
            schema["entities"]["notes"]["rules"][action] = rule.clone();
        }
        std::fs::write(dir.path().join("schema.json"), schema.to_string()).expect("write schema.json");
        let def = a2app_core::app::load(dir.path()).expect("the schema loads");
        TestApp::start(dir, def, a2app_core::operations::Registry::default(), false).await.expect("open")
    }

    async fn serve(
        root: &Path,
        edit: impl Fn(&str) -> String,
        operations: Option<&str>,
        registry: a2app_core::operations::Registry,
    ) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        for file in ["app.toml", "schema.json", "operations.json", "requests.json"] {
            if root.join(file).exists() {
                std::fs::copy(root.join(file), dir.path().join(file)).expect("copy example");
            }
        }
        // Fixtures bring their own page; the kanban copy stays without its ui/.
        if root.join("ui/index.html").exists() && root.starts_with(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"))
        {
            std::fs::create_dir(dir.path().join("ui")).expect("ui dir");
            std::fs::copy(root.join("ui/index.html"), dir.path().join("ui/index.html")).expect("copy ui");
        }
        let toml = std::fs::read_to_string(dir.path().join("app.toml")).expect("app.toml");
        std::fs::write(dir.path().join("app.toml"), edit(&toml)).expect("write app.toml");
        if let Some(ops) = operations {
            std::fs::write(dir.path().join("operations.json"), ops).expect("write operations.json");
        }
        let def = a2app_core::app::load(dir.path()).expect("example loads");
        TestApp::start(dir, def, registry, false).await.expect("open")
    }

    /// Opens the app loaded from `dir` (migrating its database, destructively
    /// when allowed) and serves it.
    pub async fn start(
        dir: tempfile::TempDir,
        def: a2app_core::app::AppDefinition,
        registry: a2app_core::operations::Registry,
        allow_destructive: bool,
    ) -> Result<TestApp, a2app_core::app::OpenError> {
        let clock = Arc::new(FixedClock::new(NOW.parse().expect("instant")));
        let options = OpenOptions { clock: clock.clone(), operations: registry, allow_destructive };
        let (app, _) = App::open(def, options)?;
        let app = Arc::new(app);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(a2app_server::run(Arc::clone(&app), listener, async move {
            let _ = stopped.await;
        }));
        let token = app.agent_token.clone();
        Ok(TestApp { url, token, app, clock, http: http(), dir, _stop: stop })
    }

    /// Sends a request with the agent token and returns status and JSON body.
    pub async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let req = self
            .http
            .request(method.parse().expect("method"), format!("{}{path}", self.url))
            .header("X-LUI-Token", &self.token)
            .header("X-LUI-Agent", "tests");
        self.send(req, body).await
    }

    /// Sends a request exactly as given (no token).
    pub async fn send(&self, req: reqwest::RequestBuilder, body: Option<Value>) -> (u16, Value) {
        let req = match body {
            Some(b) => req.header("content-type", "application/json").body(b.to_string()),
            None => req,
        };
        let resp = req.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        let json =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        (status, json)
    }

    /// Signs a user up (as the owner) and in; returns (id, token).
    pub async fn user(&self, email: &str, password: &str) -> (String, String) {
        let body = json!({"email": email, "password": password, "passwordConfirm": password});
        let created = self.create("users", body).await;
        let sign_in = json!({"identity": email, "password": password});
        let (status, auth) = self.call("POST", "/api/collections/users/auth-with-password", Some(sign_in)).await;
        assert_eq!(status, 200, "{auth}");
        assert_eq!(auth["record"]["id"], created["id"]);
        (created["id"].as_str().unwrap().to_owned(), auth["token"].as_str().unwrap().to_owned())
    }

    /// Creates a record and returns it; panics unless the answer is 200.
    pub async fn create(&self, entity: &str, body: Value) -> Value {
        let (status, json) = self.call("POST", &format!("/api/collections/{entity}/records"), Some(body)).await;
        assert_eq!(status, 200, "create {entity}: {json}");
        json
    }
}

/// The codes and fields of an error envelope's violations.
/// Expected `(code, field)` pairs, as [`violations`] gives them.
pub fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected.iter().map(|(c, f)| ((*c).to_owned(), (*f).to_owned())).collect()
}

pub fn violations(body: &Value) -> Vec<(String, String)> {
    body["violations"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .map(|v| (v["code"].as_str().unwrap_or("").to_owned(), v["field"].as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// Sends a request as the agent (token) acting as a user (their token), or as
/// the owner when `user` is None.
pub async fn as_user(t: &TestApp, user: Option<&str>, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut req = t.http.request(method.parse().unwrap(), format!("{}{path}", t.url)).header("X-LUI-Token", &t.token);
    if let Some(token) = user {
        req = req.header("Authorization", token);
    }
    t.send(req, body).await
}

/// A plain HTTP client. This workspace's reqwest has no built-in TLS provider
/// (see docs/decisions/0003): one must be installed before any client is built.
pub fn http() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
