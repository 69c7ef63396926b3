//! `agent-app`: acts on an app's files: `new`, `check`, `serve`, `token`, `grants`, `approvals`.

use a2app_core::app::{self, App, OpenOptions};
use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "agent-app", version, about = "Serve and check A2App apps from their files")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve an app: its records API, identity and realtime, with an embedded SQLite database.
    Serve {
        /// The app directory (app.toml, schema.json, operations.json, ui/).
        dir: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:8090")]
        http: String,
        /// Apply schema changes that lose or reinterpret stored data.
        #[arg(long)]
        allow_destructive: bool,
    },
    /// Validate app.toml, schema.json and operations.json; exit 0 only when clean.
    Check { dir: PathBuf },
    /// Write a starter app that passes `check`.
    New {
        dir: PathBuf,
        /// The app's display name.
        #[arg(long)]
        name: Option<String>,
    },
    /// Print the agent token (the loopback write credential), creating it if missing.
    Token {
        dir: PathBuf,
        /// Replace it with a new one; the old one stops working at the next start.
        #[arg(long)]
        rotate: bool,
    },
    /// List the grants agents hold or asked for (newest first); `--revoke ID` ends one at once.
    Grants {
        dir: PathBuf,
        /// The grant to revoke: its tokens stop working on their next call, served or not.
        #[arg(long, conflicts_with = "deny_pending")]
        revoke: Option<String>,
        /// Deny every grant waiting for a decision (a flood of asks), or with
        /// `--source` only those asked from that address.
        #[arg(long)]
        deny_pending: bool,
        /// With `--deny-pending`: the source whose asks to deny, as the list shows it.
        #[arg(long, requires = "deny_pending")]
        source: Option<String>,
    },
    /// List the calls of destructive operations waiting for a person's yes
    /// (`destructive_consent = "person"`); approve or deny one.
    Approvals {
        dir: PathBuf,
        /// The call to let run once (its approval key).
        #[arg(long, conflicts_with = "deny")]
        approve: Option<String>,
        /// The call to refuse (its approval key).
        #[arg(long)]
        deny: Option<String>,
    },
}

fn main() -> ExitCode {
    // reqwest is built without a TLS provider (see docs/decisions/0003): any
    // client this process makes (operation backends included) needs ring's.
    a2app_client::install_tls_provider();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Check { dir } => return check(&dir),
        Command::Serve { dir, http, allow_destructive } => serve(&dir, &http, allow_destructive),
        Command::New { dir, name } => new(&dir, name),
        Command::Token { dir, rotate } => token(&dir, rotate),
        Command::Grants { dir, revoke, deny_pending, source } => {
            let action = match (revoke, deny_pending) {
                (Some(id), _) => GrantAction::Revoke(id),
                (None, true) => GrantAction::DenyPending(source),
                (None, false) => GrantAction::List,
            };
            grants(&dir, action)
        }
        Command::Approvals { dir, approve, deny } => {
            approvals(&dir, approve.map(|k| (k, true)).or(deny.map(|k| (k, false))))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn check(dir: &Path) -> ExitCode {
    let loaded = match app::load(dir) {
        Ok(def) => match backend_routes(&def.config, &def.operations) {
            routes if routes.is_empty() => Ok(def),
            problems => Err(problems),
        },
        Err(mut problems) => {
            // Every problem at once: the routes too, when app.toml and
            // operations.json are sound on their own.
            let config =
                std::fs::read_to_string(dir.join(app::config::FILE)).ok().and_then(|t| app::config::parse(&t).ok());
            let ops = std::fs::read_to_string(dir.join(app::operations::FILE))
                .ok()
                .and_then(|t| app::operations::parse(&t, None).ok());
            if let (Some(config), Some(ops)) = (config, ops) {
                problems.extend(backend_routes(&config, &ops));
            }
            Err(problems)
        }
    };
    match loaded {
        Ok(def) => {
            let fields: usize = def.schema.entities.values().map(|e| e.fields.len()).sum();
            let requests = match def.requests.len() {
                0 => String::new(),
                n => format!(", {n} request capabilities"),
            };
            println!(
                "ok: {} ({} entities, {} fields, {} operations{requests})",
                def.config.id,
                def.schema.entities.len(),
                fields,
                def.operations.len()
            );
            ExitCode::SUCCESS
        }
        Err(problems) => {
            for p in &problems {
                println!("{p}");
            }
            eprintln!(
                "{} problem{} found in {}",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" },
                dir.display()
            );
            ExitCode::from(1)
        }
    }
}

/// The `http` operations against the routes the backend advertises, when it
/// is reachable; an unreachable or silent backend is noted, not a failure
/// (the gate must pass on a machine where the backend is not running).
fn backend_routes(
    config: &app::AppConfig,
    operations: &[app::operations::Operation],
) -> Vec<a2app_core::problem::Problem> {
    use a2app_core::operations::Backend;
    let Some(config) = &config.backend else { return Vec::new() };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("note: cannot check the backend's routes: {e}");
            return Vec::new();
        }
    };
    let backend = a2app_server::backend::HttpBackend::new(&config.url);
    match runtime.block_on(backend.routes()) {
        Ok(Some(routes)) => app::operations::check_routes(operations, &routes, &config.url),
        Ok(None) => {
            eprintln!(
                "note: the backend at {} does not advertise its routes at {}; http routes were not checked",
                config.url,
                a2app_server::backend::ROUTES_PATH
            );
            Vec::new()
        }
        Err(e) => {
            eprintln!("note: the backend at {} is not reachable ({e}); http routes were not checked", config.url);
            Vec::new()
        }
    }
}

fn load(dir: &Path) -> Result<app::AppDefinition> {
    app::load(dir).map_err(|problems| {
        let list: Vec<String> = problems.iter().map(|p| format!("  {p}")).collect();
        anyhow::anyhow!("{} does not pass `agent-app check`:\n{}", dir.display(), list.join("\n"))
    })
}

fn serve(dir: &Path, http: &str, allow_destructive: bool) -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let def = load(dir)?;
    let options = OpenOptions { allow_destructive, ..OpenOptions::default() };
    let (app, applied) = App::open(def, options)?;
    for change in &applied {
        tracing::info!(%change, "schema migration");
    }
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the runtime")?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(http).await.with_context(|| format!("cannot listen on {http}"))?;
        let addr = listener.local_addr()?;
        let app = Arc::new(app);
        register(&app.definition, addr);
        eprintln!(
            "{} ({}) serving on http://{addr}\n  records API: http://{addr}/api/collections/{{entity}}/records\n  agent token: {}",
            app.definition.config.name,
            app.definition.config.id,
            app.definition.token_path().display()
        );
        if let Some(warning) = deployed_single_user(&app.definition.config) {
            eprintln!("{warning}");
        }
        a2app_server::run(app, listener, shutdown_signal()).await.context("the server stopped")
    })
}

/// A single-user app has no sign-in: whoever reaches its page is its person.
/// On loopback that is this machine's user; under a deployed host name it is
/// anyone who can reach that name, so serving one says so.
fn deployed_single_user(config: &app::AppConfig) -> Option<String> {
    let hosts = &config.http.allowed_hosts;
    (config.auth_mode == app::AuthMode::SingleUser && !hosts.is_empty()).then(|| {
        format!(
            "warning: this single-user app also answers {}: anyone who reaches it there acts as its owner (its page writes without signing in, and approves agents' grants and sign-ins). Put it behind your proxy's sign-in, or make it multi-user (auth_mode = \"multi-user\").",
            hosts.join(", ")
        )
    })
}

/// Announces the app in the per-user registry, so `a2app ID` finds it on
/// whatever port it got. A registry that cannot be written costs only that.
fn register(def: &app::AppDefinition, addr: std::net::SocketAddr) {
    let Some(config) = a2app_cli::config_dir() else { return };
    // A wildcard bind is reached on loopback; the registry must name a host to dial.
    let host = if addr.ip().is_unspecified() {
        if addr.is_ipv4() { "127.0.0.1".to_owned() } else { "[::1]".to_owned() }
    } else if addr.is_ipv6() {
        format!("[{}]", addr.ip())
    } else {
        addr.ip().to_string()
    };
    let token_path = def.token_path();
    let entry = a2app_client::registry::LocalApp {
        id: def.config.id.clone(),
        name: def.config.name.clone(),
        url: format!("http://{host}:{}", addr.port()),
        token_path: Some(std::fs::canonicalize(&token_path).unwrap_or(token_path)),
    };
    if let Err(e) = a2app_client::registry::register(&config, entry) {
        tracing::warn!(error = %e, "cannot register the app for a2app");
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

fn new(dir: &Path, name: Option<String>) -> Result<()> {
    if name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        bail!("--name is blank; give the app a name people will see, or leave --name out to use the directory's");
    }
    if dir.exists() && !dir.is_dir() {
        bail!("{} exists and is not a directory; choose a new directory", dir.display());
    }
    if dir.exists() && dir.read_dir().map(|mut d| d.next().is_some()).unwrap_or(true) {
        bail!("{} exists and is not empty; choose a new directory", dir.display());
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // `.` or `..` has no file name of its own: the directory's real path does.
    let dir_name = std::fs::canonicalize(dir)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let id = a2app_cli::starter::id_from(&dir_name);
    let name = name.unwrap_or_else(|| if dir_name.trim().is_empty() { id.clone() } else { dir_name.clone() });
    for (file, text) in a2app_cli::starter::files(&id, &name) {
        std::fs::write(dir.join(file), text).with_context(|| format!("cannot write {file}"))?;
    }
    println!("created {} (app id \"{id}\")\nnext: agent-app serve {}", dir.display(), dir.display());
    Ok(())
}

/// An error for the app's owner at its own terminal: the code and the whole
/// cause, internal details included (an agent would get only the envelope).
fn owner_error(e: a2app_core::Error) -> anyhow::Error {
    let body = e.to_body();
    match e {
        a2app_core::Error::Internal(detail) => anyhow::anyhow!("{}: {detail}", body.code),
        _ => anyhow::anyhow!("{}: {}", body.code, body.message),
    }
}

fn token(dir: &Path, rotate: bool) -> Result<()> {
    let def = load(dir)?;
    let path = def.token_path();
    let token = if rotate { a2app_core::token::rotate(&path) } else { a2app_core::token::ensure(&path) }
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("{token}");
    Ok(())
}

/// The calls waiting for a person, read and decided through the app's own
/// database as its owner, served or not: the agent repeats its call with the
/// key and it runs (or is refused) at once.
fn approvals(dir: &Path, decision: Option<(String, bool)>) -> Result<()> {
    use a2app_client::display::terminal;
    use a2app_core::approvals::{self, Decider};
    let (app, _) = App::open(load(dir)?, OpenOptions::default())?;
    let app = Arc::new(app);
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the runtime")?;
    runtime.block_on(async {
        if let Some((key, yes)) = decision {
            let decided = approvals::decide(&app, &Decider::Files, &key, yes)
                .await
                .map_err(|e| owner_error(e).context(format!("cannot decide {key}")))?;
            println!("{} {}: {} for {}", decided.key, decided.status, decided.operation, terminal(&decided.agent));
            return Ok(());
        }
        let waiting = approvals::waiting(&app, &Decider::Files)
            .await
            .map_err(|e| owner_error(e).context("cannot list the approvals"))?;
        if waiting.is_empty() {
            println!("no calls waiting");
        }
        for a in waiting {
            let params = serde_json::Value::Object(a.params.clone());
            println!(
                "{}  {}  {}  by {}  until {}",
                a.key,
                a.operation,
                terminal(&params.to_string()),
                terminal(&a.agent),
                a.expires
            );
        }
        Ok(())
    })
}

/// What `agent-app grants` does.
enum GrantAction {
    List,
    Revoke(String),
    /// Every pending grant, or those from one source.
    DenyPending(Option<String>),
}

/// The app's grants, read and revoked through its own database as the app's
/// owner (who holds its files), whether or not it is being served: the
/// server sees a revocation at the next call of the grant's tokens. Approving
/// is left to a person in the app, where the scopes are shown in words.
fn grants(dir: &Path, action: GrantAction) -> Result<()> {
    use a2app_client::display::terminal;
    let (app, _) = App::open(load(dir)?, OpenOptions::default())?;
    let app = Arc::new(app);
    let owner = a2app_core::caller::Caller::agent(Some("agent-app".into()));
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("cannot start the runtime")?;
    runtime.block_on(async {
        match action {
            GrantAction::Revoke(id) => {
                let grant = a2app_core::grants::revoke(&app, &owner, &id)
                    .await
                    .map_err(|e| owner_error(e).context(format!("cannot revoke grant {id}")))?;
                println!("{} {}: {}", grant.id, grant.status.as_str(), terminal(&grant.agent));
                return Ok(());
            }
            GrantAction::DenyPending(source) => {
                let body = match &source {
                    Some(s) => serde_json::json!({ "source": s }),
                    None => serde_json::json!({}),
                };
                let denied = a2app_core::grants::deny_pending(&app, &owner, &body)
                    .await
                    .map_err(|e| owner_error(e).context("cannot deny the pending grants"))?;
                println!("denied {denied} pending grant{}", if denied == 1 { "" } else { "s" });
                return Ok(());
            }
            GrantAction::List => {}
        }
        let grants = a2app_core::grants::list(&app, &owner)
            .await
            .map_err(|e| owner_error(e).context("cannot list the grants"))?;
        if grants.is_empty() {
            println!("no grants");
        }
        for g in grants {
            let acts_for = if g.acts_for.is_empty() { "-" } else { g.acts_for.as_str() };
            let source = if g.source.is_empty() { "-" } else { g.source.as_str() };
            println!(
                "{}  {:<8} {}  {}  for {}  from {}  {}",
                g.id,
                g.status.as_str(),
                g.fingerprint,
                terminal(&g.agent),
                acts_for,
                source,
                g.scopes.join(" ")
            );
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serving_a_single_user_app_under_a_public_name_warns_who_its_person_is() {
        let config = |extra: &str| app::config::parse(&format!("id = \"t\"\nname = \"T\"\n{extra}")).expect("config");
        let hosts = "[http]\nallowed_hosts = [\"board.example.com\"]\n";
        let warning = deployed_single_user(&config(hosts)).expect("a warning");
        assert!(
            warning.starts_with("warning: this single-user app also answers board.example.com: anyone"),
            "{warning}"
        );
        assert_eq!(deployed_single_user(&config("")), None);
        assert_eq!(deployed_single_user(&config(&format!("auth_mode = \"multi-user\"\n{hosts}"))), None);
    }
}
