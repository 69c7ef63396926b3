//! The MCP server at `/mcp`: both protocol eras on one endpoint (modern
//! 2026-07-28, stateless; legacy 2025-11-25, `initialize` and sessions),
//! served by the official `rmcp` crate.
//!
//! rmcp owns the protocol (JSON-RPC, eras, sessions, the `Mcp-*` header
//! checks); this module owns what the app says through it. The tools
//! (`tools`) and resources (`resources`) are generated from describe and are
//! thin adapters over the same `a2app_core` calls as the HTTP contract; they
//! never call the HTTP handlers. Who the caller is, is established once per
//! HTTP request by `gate`, with the contract's own rules (`core::access`),
//! before rmcp sees the request.

pub mod prompts;
pub mod resources;
pub mod sessions;
pub mod tools;
pub mod view;

use crate::http::{self, State};
use a2app_core::Error;
use a2app_core::access::Intent;
use a2app_core::caller::{Caller, CallerKind};
use axum::Router;
use axum::extract::{Request, State as S};
use axum::http::request::Parts;
use axum::http::{HeaderValue, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::ErrorData;
use rmcp::RoleServer;
use rmcp::ServerHandler;
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CustomRequest, CustomResult, ErrorCode,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

/// The path of the endpoint; the server card lives below it.
pub const PATH: &str = "/mcp";

/// The `/mcp` routes, behind the gate.
pub fn router(state: &State) -> Router {
    let handler = Handler { state: state.clone() };
    let service = StreamableHttpService::new(
        move || Ok(handler.clone()),
        Arc::new(LocalSessionManager::default()),
        transport_config(state),
    );
    Router::new().nest_service(PATH, service).layer(middleware::from_fn_with_state(state.clone(), gate))
}

/// The Host rule is the gate's alone: it applies the contract's exact rules
/// (every loopback name: `*.localhost`, `127.0.0.0/8`, `::1`, plus
/// `allowed_hosts`), which rmcp's fixed list cannot express, so rmcp's own
/// host check is off. rmcp's Origin check stays as a second line behind the
/// gate's.
fn transport_config(state: &State) -> StreamableHttpServerConfig {
    let http = &state.app.definition.config.http;
    let port = state.port;
    let origins = ["localhost", "127.0.0.1", "[::1]"]
        .iter()
        .map(|h| format!("http://{h}:{port}"))
        // A deployed host's own page (the gate still checks it against the Host).
        .chain(http.allowed_hosts.iter().map(|h| format!("https://{h}")))
        .chain(http.allowed_origins.clone());
    StreamableHttpServerConfig::default()
        // Sessions for the legacy era only; 2026-07-28 requests are always stateless.
        .with_legacy_session_mode(true)
        // Modern answers as one JSON object: no tool here streams progress.
        .with_json_response(true)
        .disable_allowed_hosts()
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_max_request_body_bytes(http::MAX_BODY)
}

/// Establishes the caller of every MCP request with the contract's rules:
/// `Host` and `Origin` (403), a wrong token (401), the read rate limit. The
/// caller travels to the handler in the request's extensions.
///
/// OAuth: a token bound to a resource works here only if it names this
/// endpoint (RFC 8707). When the app asks MCP clients to sign in
/// (`[mcp] sign_in`, on in deployed mode), a request with no credential, and
/// any with a refused one, gets 401 with the challenge that starts the OAuth
/// flow (RFC 9728: where the metadata is, and the scopes to ask).
async fn gate(S(state): S<State>, request: Request, next: Next) -> Response {
    let creds = match credentials(&state, request.headers()) {
        Ok(creds) => creds,
        Err(e @ Error::Unauthorized(_)) => {
            let base = http::oauth::base(&state, request.headers()).ok();
            return challenge(&state, base.as_deref(), e, Some("invalid_token"));
        }
        Err(e) => return http::ApiError(e).into_response(),
    };
    let base = http::oauth::base(&state, request.headers()).ok();
    let sign_in = state.app.definition.config.mcp_sign_in();
    let presented = creds.authorization.is_some() || creds.token.is_some();
    match a2app_core::access::authorize(&state.app, &creds, Intent::Read).await {
        // Signing in is asked of programs; the app's own page is the person.
        Ok(caller) if sign_in && caller.kind == CallerKind::Anonymous && caller.user.is_none() => {
            let why = if presented {
                "the credential is not valid here; sign in again (see WWW-Authenticate)"
            } else {
                "sign in first: this MCP server uses OAuth (see WWW-Authenticate)"
            };
            let e = Error::Unauthorized(why.into());
            challenge(&state, base.as_deref(), e, presented.then_some("invalid_token"))
        }
        Ok(caller) => {
            let request = match &caller.grant {
                Some(grant) => match step_up(&state, base.as_deref(), grant, request).await {
                    Ok(request) => request,
                    Err(refused) => return refused,
                },
                None => request,
            };
            let mut request = match numbers(request).await {
                Ok(request) => request,
                Err(refused) => return refused,
            };
            // A session is its opener's alone: anyone else is told, as for
            // an id never issued, that there is no such session.
            let owner = sessions::owner(&caller);
            let session = request.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
            if let Some(id) = &session
                && !state.mcp_sessions.allows(id, &owner)
            {
                return rpc_error(axum::http::StatusCode::NOT_FOUND, -32001, "Session not found");
            }
            let ending = request.method() == axum::http::Method::DELETE;
            request.extensions_mut().insert(caller);
            let response = rpc_errors(next.run(request).await).await;
            match (&session, response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok())) {
                (None, Some(opened)) => state.mcp_sessions.opened(opened, owner),
                (Some(id), _) if ending && response.status().is_success() => state.mcp_sessions.ended(id),
                _ => {}
            }
            response
        }
        // A refused credential always learns where to sign in again.
        Err(e @ Error::Unauthorized(_)) => challenge(&state, base.as_deref(), e, Some("invalid_token")),
        Err(e) => http::ApiError(e).into_response(),
    }
}

/// The numbers of a JSON-RPC body that its parse (rmcp's, into doubles and
/// 64-bit integers) cannot keep, as `Numbers` in the request's extensions:
/// the tools refuse them by field where a record or params hold them. A
/// body that is no JSON is JSON-RPC's parse error, as a client expects.
async fn numbers(request: Request) -> Result<Request, Response> {
    let (mut parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, http::MAX_BODY)
        .await
        .map_err(|_| http::ApiError(Error::PayloadTooLarge(http::MAX_BODY)).into_response())?;
    if parts.method == axum::http::Method::POST
        && let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
    {
        return Err(rpc_error(axum::http::StatusCode::BAD_REQUEST, -32700, &format!("Parse error: {e}")));
    }
    let found = a2app_core::number::inexact(&bytes);
    if !found.is_empty() {
        parts.extensions.insert(Numbers(found));
    }
    Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
}

/// A JSON-RPC error answer with no request id (the request could not be
/// read, or names no session of its caller's).
fn rpc_error(status: axum::http::StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// rmcp refuses some requests in plain text (an unknown session, a wrong
/// `Accept` or content type): each becomes a JSON-RPC error with its status,
/// so every answer from `/mcp` is JSON-RPC.
async fn rpc_errors(response: Response) -> Response {
    let status = response.status();
    let json = response.headers().get(header::CONTENT_TYPE).is_some_and(|v| {
        let v = v.as_bytes();
        v.starts_with(b"application/json") || v.starts_with(b"text/event-stream")
    });
    if !(status.is_client_error() || status.is_server_error()) || json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = axum::body::to_bytes(body, 4096).await.unwrap_or_default();
    let code = match status.as_u16() {
        404 => -32001,
        500..=599 => -32603,
        _ => -32600,
    };
    let message = match String::from_utf8_lossy(&text).trim() {
        "" => status.canonical_reason().unwrap_or("Invalid Request").to_owned(),
        said if status.is_server_error() => {
            tracing::error!(%said, "mcp transport error");
            "Internal error".to_owned()
        }
        said => said.chars().take(300).collect(),
    };
    let mut answer = rpc_error(status, code, &message);
    // Keep what the transport said about the answer (Allow, WWW-Authenticate).
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            answer.headers_mut().insert(name.clone(), value.clone());
        }
    }
    answer
}

/// The numbers of an MCP request's body that cannot be kept, from its root
/// (`params.arguments.record.estimate`).
#[derive(Clone, Debug)]
pub(crate) struct Numbers(pub Vec<a2app_core::number::Inexact>);

/// What an MCP request tells about its caller: as any request's, and the
/// resource it addresses, this endpoint (a token bound to it works here).
fn credentials(state: &State, headers: &axum::http::HeaderMap) -> Result<a2app_core::access::Credentials, Error> {
    let mut creds = http::credentials(state, headers)?;
    creds.resource = http::oauth::base(state, headers).ok().as_deref().map(a2app_core::oauth::resource);
    Ok(creds)
}

/// The caller of an MCP request for `intent`, established again by a tool
/// that writes (the gate checked a read).
pub(crate) async fn caller(state: &State, headers: &axum::http::HeaderMap, intent: Intent) -> Result<Caller, Error> {
    a2app_core::access::authorize(&state.app, &credentials(state, headers)?, intent).await
}

/// For a grant's `tools/call` of a tool its scopes do not cover: 403 with
/// the scope to ask for (`WWW-Authenticate: Bearer error="insufficient_scope"`,
/// the scopes held and the one needed), so an OAuth client can ask the person
/// for more (MCP's step-up). Anything else goes on with its body intact.
async fn step_up(
    state: &State,
    base: Option<&str>,
    grant: &a2app_core::caller::GrantAccess,
    request: Request,
) -> Result<Request, Response> {
    let (parts, body) = request.into_parts();
    let bytes = axum::body::to_bytes(body, http::MAX_BODY)
        .await
        .map_err(|_| http::ApiError(Error::PayloadTooLarge(http::MAX_BODY)).into_response())?;
    let call: Option<serde_json::Value> = serde_json::from_slice(&bytes).ok();
    let needed = call.as_ref().filter(|c| c["method"] == "tools/call").and_then(|c| {
        let params = &c["params"];
        let name = params["name"].as_str()?;
        tools::needed_scope(&state.app, name, &params["arguments"])
    });
    let missing = needed.filter(|scope| {
        let held = |s: &protocol::grant::Scope| grant.scopes.contains(s);
        match scope {
            // Writing an entity includes reading it.
            protocol::grant::Scope::Read(e) => !held(scope) && !held(&protocol::grant::Scope::Write(e.clone())),
            _ => !held(scope),
        }
    });
    let (Some(scope), Some(base)) = (missing, base) else {
        return Ok(Request::from_parts(parts, axum::body::Body::from(bytes)));
    };
    let mut wanted: Vec<String> = grant.scopes.iter().map(ToString::to_string).collect();
    wanted.push(scope.to_string());
    let mut response = http::ApiError(Error::InsufficientScope(scope.to_string())).into_response();
    let value = format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{}\", error_description=\"this grant does not hold {scope}\"",
        wanted.join(" "),
        a2app_core::oauth::resource_metadata_url(base)
    );
    if let Ok(v) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    Err(response)
}

/// 401 with `WWW-Authenticate: Bearer resource_metadata=…, scope=…`.
fn challenge(state: &State, base: Option<&str>, e: Error, error: Option<&str>) -> Response {
    let mut response = http::ApiError(e).into_response();
    // A Host the app does not answer for was refused before this.
    let Some(base) = base else { return response };
    let scope = a2app_core::oauth::scopes(&state.app).join(" ");
    let mut value =
        format!("Bearer resource_metadata=\"{}\", scope=\"{scope}\"", a2app_core::oauth::resource_metadata_url(base));
    if let Some(error) = error {
        value.push_str(&format!(", error=\"{error}\""));
    }
    if let Ok(v) = HeaderValue::from_str(&value) {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    response
}

/// One per request (stateless) or per session (legacy): a clone of the
/// shared state, nothing more.
#[derive(Clone)]
pub struct Handler {
    state: State,
}

/// The HTTP request behind an MCP request, and the caller the gate established.
pub(crate) struct Call<'a> {
    pub parts: &'a Parts,
    pub caller: &'a Caller,
}

fn origin(ctx: &RequestContext<RoleServer>) -> Result<Call<'_>, ErrorData> {
    let parts = ctx.extensions.get::<Parts>().ok_or_else(|| internal("no HTTP request behind an MCP request"))?;
    let caller = parts.extensions.get::<Caller>().ok_or_else(|| internal("the gate did not run"))?;
    Ok(Call { parts, caller })
}

/// A generic JSON-RPC error; the detail is logged, never sent.
pub(crate) fn internal(detail: &str) -> ErrorData {
    tracing::error!(%detail, "mcp internal error");
    ErrorData::internal_error("internal error", None)
}

impl ServerHandler for Handler {
    // `logging` is declared for legacy (2025-11-25) clients; 2026-07-28 removed it.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let config = &self.state.app.definition.config;
        let mut capabilities =
            ServerCapabilities::builder().enable_tools().enable_resources().enable_prompts().enable_logging().build();
        view::declare(&mut capabilities);
        let mut info =
            Implementation::new(server_name(&self.state.app), env!("CARGO_PKG_VERSION")).with_title(&config.name);
        if !config.description.is_empty() {
            info = info.with_description(&config.description);
        }
        ServerConfig::new(capabilities).with_server_info(info).with_instructions(tools::instructions(&self.state.app))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        no_cursor(request.as_ref())?;
        let mut list = tools::list(&self.state.app);
        // A grant sees only the tools its scopes can use: a read-only grant
        // is not even offered a write, and surfaces are not open to grants.
        let grant = origin(&ctx)?.caller.grant.clone();
        if let Some(grant) = &grant {
            list.retain(|tool| tools::granted(&self.state.app, grant, &tool.name));
        }
        if grant.is_none() && view::supported(ctx.client_capabilities().as_ref()) {
            list.push(tools::show_tool());
            view::link(&view::uri(&self.state.app), &mut list);
        }
        Ok(ListToolsResult::with_all_items(list).with_ttl_ms(0).with_cache_scope(CacheScope::Private))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::list(&self.state.app).into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let origin = origin(&ctx)?;
        // `show` draws only in this app's view: a host that cannot show it
        // is not offered it (`list_tools`), and its call is refused as any
        // tool's it was not offered, never answered "shown to the person".
        if request.name == "show"
            && (origin.caller.grant.is_some() || !view::supported(ctx.client_capabilities().as_ref()))
        {
            return Err(ErrorData::invalid_params(
                "no tool named show for this host: it draws in the app's MCP Apps view, which this host does not declare",
                Some(serde_json::json!({"name": "show"})),
            ));
        }
        let result = tools::call(&self.state, &origin, &request.name, request.arguments.unwrap_or_default()).await?;
        Ok(CallToolResponse::Complete(result))
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        no_cursor(request.as_ref())?;
        Ok(ListPromptsResult::with_all_items(prompts::list(&self.state.app))
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        origin(&ctx)?;
        // The prompts are fixed texts: arguments would change nothing.
        if let Some(args) = request.arguments.as_ref().filter(|a| !a.is_empty()) {
            let names: Vec<&String> = args.keys().collect();
            return Err(ErrorData::invalid_params(
                format!("prompt {} takes no arguments; got {names:?}", request.name),
                None,
            ));
        }
        Ok(GetPromptResponse::Complete(prompts::get(&self.state.app, &request.name)?))
    }

    /// Legacy clients may set a level; the app sends no log messages, so
    /// every level is accepted and nothing more happens.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        no_cursor(request.as_ref())?;
        Ok(ListResourcesResult::with_all_items(resources::list(&self.state.app))
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        origin(&ctx)?;
        Ok(ReadResourceResponse::Complete(resources::read(&self.state.app, &request.uri)?))
    }

    /// rmcp passes on as custom a request of a known method whose params do
    /// not fit that method's type (`tools/call` with `arguments: false`), and
    /// by default answers "method not found" (404 in the 2026-07-28 era). For
    /// the methods served here the answer is invalid params (-32602), as
    /// JSON-RPC has it; any other method stays not found.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        match misfit(&request.method, request.params) {
            Some(why) => Err(ErrorData::invalid_params(why, None)),
            None => Err(ErrorData::new(ErrorCode::METHOD_NOT_FOUND, request.method, None)),
        }
    }
}

/// Why `params` do not fit `method`, when it is a method this server
/// answers: rmcp hands such a request over as a custom one.
fn misfit(method: &str, params: Option<serde_json::Value>) -> Option<String> {
    use serde_json::from_value;
    let params = params.unwrap_or_default();
    let error = match method {
        "tools/call" => from_value::<CallToolRequestParams>(params).err(),
        "resources/read" => from_value::<ReadResourceRequestParams>(params).err(),
        "prompts/get" => from_value::<GetPromptRequestParams>(params).err(),
        "tools/list" | "resources/list" | "prompts/list" => from_value::<Option<PaginatedRequestParams>>(params).err(),
        _ => return None,
    };
    Some(match error {
        Some(e) => format!("the params of {method} do not fit it: {e}"),
        None => format!("the params of {method} do not fit it"),
    })
}

/// The server's name in `serverInfo`: the app's id, as `a2app/<id>`.
pub fn server_name(app: &a2app_core::App) -> String {
    format!("a2app/{}", app.definition.config.id)
}

/// Every list here is whole in one answer and names no next cursor: a cursor
/// sent anyway was never issued, and answering the first page for it would
/// let a client take a page it did not ask for as the one it did.
fn no_cursor(request: Option<&PaginatedRequestParams>) -> Result<(), ErrorData> {
    match request.and_then(|r| r.cursor.as_deref()).filter(|c| !c.is_empty()) {
        Some(_) => Err(ErrorData::invalid_params("this server issues no cursors: every list comes whole", None)),
        None => Ok(()),
    }
}
