//! `a2app`: drive any A2App by URL (or a local app by name), safely.
//!
//! A thin shell over `a2app_client`: the binary resolves the environment
//! (`A2APP_TOKEN`, the config directory, whether stderr is a terminal) into an
//! [`Env`], and the commands here turn a session's answers into text or JSON.
//! It never reads an app's files: only the client's own registry and
//! credentials, and a registered local app's token file.

pub mod add;
pub mod claims;
pub mod gateway;
pub mod grants;
pub mod index;
pub mod operations;
pub mod output;
pub mod requests;
pub mod walk;
pub mod write;

use a2app_client::config::ConfigDir;
use a2app_client::pins::Pin;
use a2app_client::session::{self, Session};
use clap::Parser;
use output::{Failure, Out, REFUSED};
use serde_json::json;
use std::time::Duration;

#[derive(Parser, Debug)]
#[command(
    name = "a2app",
    version,
    about = "Drive an A2App by URL or local name: walk it, write records, run operations",
    after_help = "The walk:
  a2app                               local apps
  a2app TARGET                        the app's root screen
  a2app TARGET ENTITY [--filter F]    records, with their labels
  a2app TARGET ENTITY ID              one record
  a2app TARGET whoami | describe [PATH] | ops
Writes and verbs:
  a2app TARGET create ENTITY field=value …     (field:=JSON sends JSON as is)
  a2app TARGET update ENTITY ID field=value …
  a2app TARGET delete ENTITY ID --yes
  a2app TARGET run OPERATION param=value … [--yes] [--no-wait]
  a2app TARGET job JOB_ID
Requests the app asks of an agent (a person consents to each capability first):
  a2app TARGET requests               the pending ones this agent may take
  a2app TARGET consent [CAPABILITY …]  (at a terminal)   a2app TARGET revoke CAPABILITY
  a2app TARGET claim REQUEST_ID [--lease SECONDS]
  a2app TARGET answer REQUEST_ID field=value …  |  --fail WHY
A grant: this agent's own key, approved by a person, limited to scopes:
  a2app TARGET grant ask SCOPE … [--agent NAME] [--wait SECONDS | --no-wait]
                                      SCOPE: data:ENTITY:read, data:ENTITY:write, op:OPERATION
  a2app TARGET grant                  the grant held for this app, as the app says now
  a2app TARGET grant revoke           end it at the app and forget it here
  (A2APP_TOKEN or a token stored with login is used instead of a grant, when given.)
The MCP gateway (stdio), for MCP hosts without a shell:
  a2app mcp                           every local app
  a2app mcp TARGET …                  exactly these apps
Adding a remote app from its domain, page, catalog or card (discovery):
  a2app add DOMAIN|URL [--allow-local]
The public App Index (crawled apps, each proven by its publisher's own catalog):
  a2app index crawl DOMAIN|URL…  |  recheck  |  search QUERY  |  list  |  serve [ADDR]
What an agent tells its person, checked against what it stored (message on stdin):
  a2app claims TARGET [--since T]     exit 0: pass, 4: withheld (each discrepancy says what to do)
Credentials:
  a2app TARGET login   (reads the token on stdin)   a2app TARGET logout   a2app TARGET forget
Exit codes: 0 ok, 1 nothing found, 2 refused or invalid, 3 unreachable, 4 withheld."
)]
pub struct Cli {
    /// The app: its URL (https://…) or the name a local app registered under.
    pub target: Option<String>,
    /// What to do: an entity, a verb and its arguments.
    pub words: Vec<String>,
    /// One JSON object on stdout, for programs.
    #[arg(long)]
    pub json: bool,
    /// Approve a destructive step (delete, a destructive operation) after it is shown.
    #[arg(long, visible_alias = "approve")]
    pub yes: bool,
    /// `run`: the approval key of a destructive call a person of the app
    /// approved on its page (apps that ask their own person, not the host's).
    #[arg(long)]
    pub approval: Option<String>,
    /// A PocketBase filter for a list, e.g. 'priority = "high"'.
    #[arg(long)]
    pub filter: Option<String>,
    /// Sort for a list, e.g. -created.
    #[arg(long)]
    pub sort: Option<String>,
    #[arg(long)]
    pub page: Option<u64>,
    #[arg(long)]
    pub per_page: Option<u64>,
    /// The Idempotency-Key of a write (default: a fresh one); repeat it to retry safely.
    #[arg(long)]
    pub key: Option<String>,
    /// Start a job and return its id without following it.
    #[arg(long)]
    pub no_wait: bool,
    /// Attribution sent as X-LUI-Agent.
    #[arg(long)]
    pub agent: Option<String>,
    /// `answer`: the request could not be done, and why.
    #[arg(long)]
    pub fail: Option<String>,
    /// `claim`: how long to hold the request, in seconds (30 to 3600; default 600).
    #[arg(long)]
    pub lease: Option<u64>,
    /// `add`: also reach apps on this machine or the local network (never link-local addresses).
    #[arg(long)]
    pub allow_local: bool,
    /// `grant ask`: a scope to ask for (repeatable; scopes may also follow `ask`).
    #[arg(long)]
    pub scope: Vec<String>,
    /// `grant ask`: how long to wait for a person's decision, in seconds.
    #[arg(long, default_value_t = 300)]
    pub wait: u64,
    /// `claims`: where the turn starts: a time, or the cursor the last check
    /// answered (default: the end of this credential's last passed check).
    #[arg(long)]
    pub since: Option<String>,
}

/// What the binary resolved from the environment.
pub struct Env {
    pub config: Option<ConfigDir>,
    /// `A2APP_TOKEN`.
    pub token: Option<String>,
    pub agent: Option<String>,
    /// A fresh Idempotency-Key, used unless `--key` is given.
    pub fresh_key: String,
    /// stderr is a terminal: draw a progress bar instead of plain lines.
    pub terminal: bool,
    /// stdin is a terminal: `a2app mcp` was started by a person, not a host.
    pub interactive: bool,
    pub poll: Duration,
    /// The clock and randomness a grant signs with (the library reads neither).
    pub world: a2app_client::grants::World,
}

/// One command's context: the session and how to show things.
pub struct Ctx<'a> {
    pub cli: &'a Cli,
    pub env: &'a Env,
    pub out: Out,
    /// The target as typed, echoed in next-move hints.
    pub target: String,
    pub session: Session,
}

impl Ctx<'_> {
    pub fn key(&self) -> String {
        self.cli.key.clone().unwrap_or_else(|| self.env.fresh_key.clone())
    }

    /// A hint line: the command, echoing the target as typed.
    pub fn hint(&self, rest: &str) -> String {
        let target = if self.target.contains(' ') { format!("'{}'", self.target) } else { self.target.clone() };
        format!("a2app {target} {rest}").trim_end().to_owned()
    }
}

pub async fn run(cli: Cli, env: Env) -> u8 {
    // The gateway's stdout is the protocol's: its failures go to stderr as text.
    let out = Out { json: cli.json && cli.target.as_deref() != Some("mcp") };
    match dispatch(&cli, &env, out).await {
        Ok(code) => code,
        Err(f) => out.fail(&f),
    }
}

async fn dispatch(cli: &Cli, env: &Env, out: Out) -> Result<u8, Failure> {
    let config = env.config.clone().ok_or_else(|| {
        Failure::new(REFUSED, "config", "no config directory: neither A2APP_CONFIG_DIR nor a home directory is set")
            .fix("set A2APP_CONFIG_DIR")
    })?;
    let Some(target) = cli.target.clone() else {
        return walk::local_apps(&config, out);
    };
    if target == "add" {
        let [input] = cli.words.as_slice() else {
            return Err(Failure::new(REFUSED, "invalid_command", "add takes one argument")
                .fix("a2app add DOMAIN | PAGE_URL | CATALOG_URL | CARD_URL [--allow-local]"));
        };
        return add::add(out, &config, input, cli.allow_local, env.world).await;
    }
    if target == "index" {
        return index::run(out, &config, &cli.words).await;
    }
    if target == "mcp" {
        let gateway = gateway::Gateway::new(
            config,
            cli.words.clone(),
            env.token.clone(),
            agent(cli, env, "a2app-gateway"),
            env.world,
        );
        if env.interactive {
            // A person at a terminal would otherwise see nothing happen.
            out.note(
                "a2app mcp is an MCP server on stdin and stdout, for an MCP host to start, e.g. \
                 {\"mcpServers\": {\"a2app\": {\"command\": \"a2app\", \"args\": [\"mcp\"]}}}; \
                 it now waits for JSON-RPC on stdin (Ctrl-D ends it)",
            );
        }
        return Ok(gateway::serve(gateway).await);
    }
    // `a2app claims TARGET`, as a person reads it, is `a2app TARGET claims`.
    let (target, words): (String, Vec<&str>) = match (target.as_str(), cli.words.as_slice()) {
        ("claims", [app]) => (app.clone(), vec!["claims"]),
        _ => (target, cli.words.iter().map(String::as_str).collect()),
    };
    if let ["forget" | "logout"] = words.as_slice() {
        let origin = session::origin_of(&config, &target)?;
        return if words[0] == "forget" { forget(out, &config, &origin) } else { logout(out, &config, &origin) };
    }
    let options =
        a2app_client::api::Options { agent: agent(cli, env, "a2app-cli"), ..a2app_client::api::Options::default() };
    let session = session::connect(session::Connect {
        config: &config,
        target: &target,
        env_token: env.token.as_deref(),
        options,
        world: env.world,
    })
    .await?;
    if session.pin == Pin::FirstContact {
        out.note(&format!(
            "⚠ First contact with {}: pinning app.id \"{}\".",
            session.origin,
            a2app_client::display::printable(&session.identity.app.id)
        ));
    }
    let mut ctx = Ctx { cli, env, out, target, session };
    let done = match words.as_slice() {
        [] => walk::root(&mut ctx).await,
        ["whoami"] => walk::whoami(&mut ctx).await,
        ["describe"] => walk::describe(&mut ctx, None).await,
        ["describe", path] => walk::describe(&mut ctx, Some(path)).await,
        ["ops" | "operations"] => operations::list(&mut ctx).await,
        ["run", name, params @ ..] => operations::run(&mut ctx, name, params).await,
        ["job", id] => operations::follow(&mut ctx, id, &format!("/api/_jobs/{id}")).await,
        ["create", entity, args @ ..] => write::create(&mut ctx, entity, args).await,
        ["update", entity, id, args @ ..] => write::update(&mut ctx, entity, id, args).await,
        ["delete", entity, id] => write::delete(&mut ctx, entity, id).await,
        ["login"] => login(&mut ctx),
        ["claims"] => claims::check(&mut ctx).await,
        ["grant"] | ["grant", "status"] => grants::status(&mut ctx).await,
        ["grant", "ask", scopes @ ..] => grants::ask(&mut ctx, scopes).await,
        ["grant", "revoke"] => grants::revoke(&mut ctx).await,
        ["requests"] => requests::list(&mut ctx).await,
        ["consent", names @ ..] => requests::consent(&mut ctx, names).await,
        ["revoke", name] => requests::revoke(&mut ctx, name).await,
        ["claim", id] => requests::claim(&mut ctx, id).await,
        ["answer", id, args @ ..] => requests::answer(&mut ctx, id, args).await,
        ["list", entity] | [entity] => walk::list(&mut ctx, entity).await,
        ["show", entity, id] | [entity, id] => walk::show(&mut ctx, entity, id).await,
        _ => Err(Failure::new(REFUSED, "invalid_command", format!("cannot read \"{}\"", cli.words.join(" ")))
            .fix("see `a2app --help`")),
    };
    done.map_err(|f| grants::explain(&ctx, f))
}

/// The attribution sent as `X-LUI-Agent` (and the name a grant is asked
/// under): `--agent`, `A2APP_AGENT`, else which of the client's faces is calling.
pub(crate) fn agent(cli: &Cli, env: &Env, default: &str) -> Option<String> {
    Some(cli.agent.clone().or_else(|| env.agent.clone()).unwrap_or_else(|| default.to_owned()))
}

/// Stores a token for this origin, read from stdin (never from argv, which others can see).
fn login(ctx: &mut Ctx<'_>) -> Result<u8, Failure> {
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| Failure::new(REFUSED, "invalid_input", format!("cannot read the token on stdin: {e}")))?;
    let token = line.trim();
    if token.is_empty() {
        return Err(
            Failure::new(REFUSED, "invalid_input", "no token on stdin").fix("echo \"$TOKEN\" | a2app URL login")
        );
    }
    let config = ctx.env.config.clone().ok_or_else(|| Failure::config("no config directory"))?;
    a2app_client::credentials::save(&config, &ctx.session.origin, ctx.session.base.as_str(), token)
        .map_err(Failure::config)?;
    let origin = ctx.session.origin.clone();
    ctx.out.done(json!({"ok": true, "origin": origin, "stored": true}), &format!("stored a token for {origin}"));
    Ok(output::OK)
}

fn logout(out: Out, config: &ConfigDir, origin: &str) -> Result<u8, Failure> {
    let had = a2app_client::credentials::remove(config, origin).map_err(Failure::config)?;
    let text =
        if had { format!("removed the token for {origin}") } else { format!("no token was stored for {origin}") };
    out.done(json!({"ok": true, "origin": origin, "removed": had}), &text);
    Ok(output::OK)
}

/// Forgets the app.id pin and the cached schema of this origin, so the next
/// contact pins whatever answers there then.
fn forget(out: Out, config: &ConfigDir, origin: &str) -> Result<u8, Failure> {
    let had = a2app_client::pins::forget(config, origin).map_err(Failure::config)?;
    a2app_client::cache::clear(config, origin);
    // A replaced app must be added again: the connection named the old one.
    a2app_client::connections::remove(config, origin).map_err(Failure::config)?;
    out.done(json!({"ok": true, "origin": origin, "forgotten": had}), &format!("forgot the pin for {origin}"));
    Ok(output::OK)
}
