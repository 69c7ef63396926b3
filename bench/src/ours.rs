//! Our server under test, in its own process so its memory is its own.
//!
//! The benchmark binary re-executes itself: `bench serve DIR ADDR` opens the
//! app with `a2app_core::App::open` and serves it with `a2app_server::run`,
//! exactly as `agent-app serve` does, so the server measured is always built
//! from the same source and in the same profile as the benchmark (no stale
//! `agent-app` binary can be picked up). `bench seed DIR FROM TO` fills the
//! app through `a2app_core::records::create`, the full write path, from many
//! concurrent tasks so the single writer commits in groups; it runs while the
//! server is stopped and exits, so the store is closed before the server opens it.

use crate::dataset;
use crate::peer::{self, Child, Stop};
use a2app_core::app::{self, App, OpenOptions};
use a2app_core::caller::{Caller, CallerKind};
use a2app_core::records::{self, WriteOptions};
use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Copies the example app (app.toml, schema.json) into `dir`, with the write
/// rate limit off so the limiter does not throttle the load generator.
pub fn prepare_dir(example: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let config_path = example.join("app.toml");
    let text =
        std::fs::read_to_string(&config_path).with_context(|| format!("cannot read {}", config_path.display()))?;
    let mut config: toml::Table = text.parse().with_context(|| format!("{} is not TOML", config_path.display()))?;
    let limits = config.entry("limits").or_insert_with(|| toml::Value::Table(toml::Table::new()));
    let Some(limits) = limits.as_table_mut() else { bail!("[limits] in {} is not a table", config_path.display()) };
    limits.insert("writes_per_minute".into(), toml::Value::Integer(0));
    std::fs::write(dir.join("app.toml"), toml::to_string(&config)?)?;
    std::fs::copy(example.join("schema.json"), dir.join("schema.json"))
        .with_context(|| format!("cannot copy the schema of {}", example.display()))?;
    Ok(())
}

/// The hidden `serve` mode: `agent-app serve`'s code path, stopped by EOF on stdin.
pub fn serve(dir: &Path, addr: &str) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let def = load(dir)?;
    let (app, _applied) = App::open(def, OpenOptions::default())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
        let closed = peer::stdin_closed();
        let shutdown = async move {
            let _ = closed.await;
        };
        a2app_server::run(Arc::new(app), listener, shutdown).await.context("the server stopped")
    })
}

fn load(dir: &Path) -> Result<app::AppDefinition> {
    app::load(dir).map_err(|problems| {
        let list: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        anyhow!("{} does not pass `agent-app check`: {}", dir.display(), list.join("; "))
    })
}

/// Concurrent creates while seeding; enough to fill the writer's groups.
const SEED_TASKS: u64 = 256;

/// The hidden `seed` mode: brings the app from `from` to `to` seeded cards
/// (members first, then the lists the new cards need, then the cards).
pub fn seed(dir: &Path, from: u64, to: u64) -> Result<()> {
    let def = load(dir)?;
    let (app, _applied) = App::open(def, OpenOptions::default())?;
    let app = Arc::new(app);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        if from == 0 {
            create_all(&app, "members", 0, dataset::MEMBERS, |i| (dataset::member_id(i), dataset::member(i))).await?;
        }
        let lists = (dataset::lists_for(from), dataset::lists_for(to));
        create_all(&app, "lists", lists.0, lists.1, |i| (dataset::list_id(i), dataset::list(i))).await?;
        create_all(&app, "cards", from, to, |i| (dataset::card_id(i), dataset::card(i))).await
    })
}

/// Creates records `from..to` of `entity` through `records::create`, from
/// [`SEED_TASKS`] concurrent tasks. The caller is the app's own page: the same
/// write path as an agent's, without the human copy in the agent log.
async fn create_all(
    app: &Arc<App>,
    entity: &'static str,
    from: u64,
    to: u64,
    make: fn(u64) -> (String, Map<String, Value>),
) -> Result<()> {
    let next = Arc::new(AtomicU64::new(from));
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..SEED_TASKS.min(to.saturating_sub(from)) {
        let (app, next) = (Arc::clone(app), Arc::clone(&next));
        tasks.spawn(async move {
            let caller = Caller { kind: CallerKind::OwnUi, agent: None, user: None, grant: None, request: None };
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= to {
                    return Ok::<(), anyhow::Error>(());
                }
                let (id, mut body) = make(i);
                body.insert("id".into(), Value::String(id.clone()));
                let stored = records::create(&app, &caller, entity, &Value::Object(body), &WriteOptions::default())
                    .await
                    .map_err(|e| anyhow!("seeding {entity} #{i}: {e}"))?;
                if stored.get("id").and_then(Value::as_str) != Some(id.as_str()) {
                    bail!("seeding {entity} #{i}: stored under another id");
                }
            }
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.context("a seeding task panicked")??;
    }
    Ok(())
}

/// Our server, running.
pub struct Server {
    pub child: Child,
    pub url: String,
    pub token: String,
    pub startup: Duration,
}

/// Runs `bench seed` in a child process and waits for it.
pub fn run_seed(exe: &Path, dir: &Path, from: u64, to: u64, log: &Path, timeout: Duration) -> Result<Duration> {
    let started = Instant::now();
    let mut cmd = Command::new(exe);
    cmd.arg("seed").arg(dir).arg(from.to_string()).arg(to.to_string());
    peer::run_to_end("seeding our app", cmd, log, timeout)?;
    Ok(started.elapsed())
}

/// Starts `bench serve` and waits for its first answer.
pub async fn start(client: &reqwest::Client, exe: &Path, dir: &Path, port: u16, log: &Path) -> Result<Server> {
    let mut cmd = Command::new(exe);
    cmd.arg("serve").arg(dir).arg(format!("127.0.0.1:{port}"));
    let peer::Server { child, url, startup } =
        peer::serve(client, "our server", cmd, port, log, Stop::CloseStdin).await?;
    let token_path = dir.join(".agent-token");
    let token = std::fs::read_to_string(&token_path)
        .with_context(|| format!("cannot read {}", token_path.display()))?
        .trim()
        .to_owned();
    Ok(Server { child, url, token, startup })
}
