//! `a2app mcp`: the MCP gateway. One stdio MCP server that puts every local
//! app (or the apps it is started with) in reach of an MCP host that has no
//! shell, with nothing to register and nothing to re-sync.
//!
//! The gateway is a client of the HTTP contract like `a2app` itself: each
//! tool call opens a session (`a2app_client::session`: identity gate, the
//! app.id pin, that origin's credential) and makes the same calls the shell
//! commands make. It holds no privilege an app's own `/mcp` endpoint would
//! not give, and the guard, the receipts and the codes stay the app's.
//!
//! Which apps it drives is the person's choice, made where the host is
//! configured or where a token is stored, never the agent's: started without
//! targets it drives the local registry and the remote apps the person
//! connected (`a2app URL login`), both read on every call (an app served or
//! connected after the gateway started is there at once); started with
//! targets it drives exactly those. An `app` argument naming anything else is
//! refused with `unknown_app`, so a page or a record cannot steer the gateway
//! to a URL of its choosing.
//!
//! stdout carries the protocol and nothing else; logs go to stderr.

pub mod approval;
pub mod numbers;
pub mod queue;
pub mod tools;

use super::output::{Failure, NOTHING_FOUND, REFUSED};
use a2app_client::address::{self, Target};
use a2app_client::api::Options;
use a2app_client::config::ConfigDir;
use a2app_client::pins::Pin;
use a2app_client::registry;
use a2app_client::session::{self, Session};
use a2app_server::mcp::view;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::json;
use std::time::Duration;

/// The gateway's state: where the client's files are and which apps it drives.
#[derive(Clone)]
pub struct Gateway {
    pub(crate) config: ConfigDir,
    /// The targets it was started with, as typed; empty: every local app.
    targets: Vec<String>,
    /// `A2APP_TOKEN`, used only when exactly one target was given: with
    /// several apps in reach it cannot say which one it belongs to, and
    /// sending it to all of them would hand one app's token to the others.
    env_token: Option<String>,
    agent: Option<String>,
    /// The clock and randomness a grant signs with.
    world: a2app_client::grants::World,
    /// Approvals asked of a 2026-07-28 host, waiting for the repeat.
    pub(crate) pending: approval::Pendings,
    /// Capabilities the person declined to consent to in this process.
    pub(crate) declined: queue::Declined,
    /// Numbers of the host's calls that cannot be kept, read off stdin.
    pub(crate) numbers: numbers::Noted,
}

impl Gateway {
    pub fn new(
        config: ConfigDir,
        targets: Vec<String>,
        env_token: Option<String>,
        agent: Option<String>,
        world: a2app_client::grants::World,
    ) -> Gateway {
        let env_token = if targets.len() == 1 { env_token } else { None };
        Gateway {
            config,
            targets,
            env_token,
            agent,
            world,
            pending: approval::Pendings::default(),
            declined: queue::Declined::default(),
            numbers: numbers::Noted::default(),
        }
    }

    /// The names an `app` argument may take now, each with its registry
    /// entry when it is a local app.
    pub fn exposed(&self) -> Result<Vec<(String, Option<registry::LocalApp>)>, Failure> {
        if self.targets.is_empty() {
            let local = registry::list(&self.config).map_err(Failure::config)?;
            let remote = self.connected(&local)?;
            return Ok(local
                .into_iter()
                .map(|a| (a.id.clone(), Some(a)))
                .chain(remote.into_iter().map(|u| (u, None)))
                .collect());
        }
        let mut out = Vec::new();
        for target in &self.targets {
            let local = match address::parse(target) {
                Ok(Target::Name(name)) => registry::lookup(&self.config, &name).map_err(Failure::config)?,
                _ => None,
            };
            out.push((target.clone(), local));
        }
        Ok(out)
    }

    /// The remote apps the person connected (`a2app add` found them, or
    /// `a2app URL login` stored a token for them), by base URL, one per
    /// origin; an origin a local app serves is that local app, listed by its
    /// name.
    fn connected(&self, local: &[registry::LocalApp]) -> Result<Vec<String>, Failure> {
        let added = a2app_client::connections::list(&self.config).map_err(Failure::config)?;
        let signed_in = a2app_client::credentials::connected(&self.config).map_err(Failure::config)?;
        let mut seen: Vec<String> = local.iter().filter_map(|a| origin(&a.url)).collect();
        let mut out = Vec::new();
        for url in added.into_iter().map(|c| c.url).chain(signed_in) {
            if let Some(o) = origin(&url)
                && !seen.contains(&o)
            {
                seen.push(o);
                out.push(url);
            }
        }
        Ok(out)
    }

    /// The target an `app` argument names, if the gateway drives it.
    fn target(&self, app: &str) -> Result<String, Failure> {
        if self.targets.is_empty() {
            // A local app by id or display name, or a connected app by its URL.
            if let Ok(Target::Name(_)) = address::parse(app)
                && registry::lookup(&self.config, app).map_err(Failure::config)?.is_some()
            {
                return Ok(app.to_owned());
            }
            let local = registry::list(&self.config).map_err(Failure::config)?;
            let wanted = app.trim_end_matches('/');
            if let Some(url) = self.connected(&local)?.into_iter().find(|u| u == wanted) {
                return Ok(url);
            }
        } else if let Some(t) = self.targets.iter().find(|t| t.as_str() == app) {
            return Ok(t.clone());
        }
        let names: Vec<String> = self.exposed()?.into_iter().map(|(name, _)| name).collect();
        let fix = if self.targets.is_empty() {
            "call apps for the names; a local app joins when `agent-app serve DIR` starts it, and a remote one when a person adds it (`a2app add DOMAIN`) or signs in to it (`a2app URL login`)"
        } else {
            "call apps for the names; another app joins only when the person adds it to the gateway's arguments"
        };
        Err(Failure::new(NOTHING_FOUND, "unknown_app", format!("this gateway drives no app named \"{app}\""))
            .fix(fix)
            .with("apps", json!(names)))
    }

    /// A session with the app `app` names: the same gate, pin and credential
    /// as `a2app APP` in a shell.
    pub async fn connect(&self, app: &str, timeout: Option<Duration>) -> Result<Session, Failure> {
        let target = self.target(app)?;
        let mut options = Options { agent: self.agent.clone(), ..Options::default() };
        if let Some(t) = timeout {
            options.connect_timeout = t;
            options.timeout = t;
        }
        let session = session::connect(session::Connect {
            config: &self.config,
            target: &target,
            env_token: self.env_token.as_deref(),
            options,
            world: self.world,
        })
        .await?;
        if session.pin == Pin::FirstContact {
            tracing::warn!(origin = %session.origin, app_id = %session.identity.app.id, "first contact: pinned app.id");
        }
        Ok(session)
    }
}

/// The origin of a URL, or `None` if it is not one.
fn origin(url: &str) -> Option<String> {
    match address::parse(url) {
        Ok(Target::Url(u)) => Some(address::origin(&u)),
        _ => None,
    }
}

/// The gateway's MCP Apps view: the apps' own page, which learns each app's
/// describe by calling `describe` with the result's `app` (`server::mcp::view`).
const VIEW: &str = "ui://a2app-gateway/view";

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder().enable_tools().enable_resources().build();
        view::declare(&mut capabilities);
        let info = Implementation::new("a2app-gateway", env!("CARGO_PKG_VERSION")).with_title("a2app gateway");
        ServerConfig::new(capabilities).with_server_info(info).with_instructions(tools::INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The list is the same for every app and every run: hosts may keep it.
        let mut list = tools::list();
        if view::supported(ctx.client_capabilities().as_ref()) {
            list.extend(tools::show_tool());
            view::link(VIEW, &mut list);
            // The view draws an app's records; the index's results are no app's.
            if let Some(search) = list.iter_mut().find(|t| t.name == "search_apps") {
                search.meta = None;
            }
        }
        Ok(ListToolsResult::with_all_items(list).with_ttl_ms(0).with_cache_scope(CacheScope::Public))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = view::resource(VIEW.to_owned(), "a2app gateway: view".to_owned());
        Ok(ListResourcesResult::with_all_items(vec![resource]).with_ttl_ms(0).with_cache_scope(CacheScope::Public))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != VIEW {
            return Err(ErrorData::invalid_params(
                format!("no resource {}; resources/list names them", request.uri),
                Some(json!({ "uri": request.uri })),
            ));
        }
        Ok(ReadResourceResponse::Complete(view::contents(VIEW.to_owned(), &json!({ "gateway": true }))))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::list().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        tools::call(self, request, &ctx).await
    }
}

/// Serves the gateway on stdin/stdout until the host closes them.
pub async fn serve(gateway: Gateway) -> u8 {
    // stdout is the protocol's: every log line goes to stderr.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
    let stdin = numbers::Reading::new(tokio::io::stdin(), gateway.numbers.clone());
    let running = match gateway.serve((stdin, tokio::io::stdout())).await {
        Ok(running) => running,
        // stdin closed before a first request: the host (or a person's Ctrl-D) ended it.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return super::output::OK,
        Err(e) => {
            eprintln!("error: the MCP session did not start: {e}");
            return REFUSED;
        }
    };
    match running.waiting().await {
        Ok(_) => super::output::OK,
        Err(e) => {
            eprintln!("error: the MCP session ended abnormally: {e}");
            REFUSED
        }
    }
}
