//! The built-in page at `/_/`: a read-mostly dashboard for the app's owner.
//!
//! It shows what the contract already publishes (identity, describe, the
//! receipts of recent writes with the agent that made each) and how to connect
//! an agent, and it is where a person approves, narrows, denies and revokes
//! the grants agents ask for. The page is static, embedded in the binary, and
//! calls only the public contract endpoints; what it learns here is where the
//! agent token lives on disk (as a path; the token itself never reaches the
//! page) and the list of grants (`/_/grants.json`, see [`grants`]).

use super::{ApiResult, State, caller, json_response};
use a2app_core::access::Intent;
use axum::Router;
use axum::extract::State as S;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

const INDEX: &str = include_str!("../../assets/dashboard/index.html");
const SCRIPT: &str = include_str!("../../assets/dashboard/dashboard.js");
const STYLE: &str = include_str!("../../assets/dashboard/dashboard.css");

/// The page's own policy: its scripts and styles only, fetches to this origin
/// only, and no framing (it shows receipts written by agents).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; \
                   base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

pub fn routes() -> Router<State> {
    Router::new()
        .route("/_", get(|| async { Redirect::to("/_/") }))
        .route("/_/", get(index))
        .route("/_/dashboard.js", get(script))
        .route("/_/dashboard.css", get(style))
        .route("/_/connect.json", get(connect))
        .route("/_/grants.json", get(grants))
        .route("/_/approvals.json", get(approvals))
}

/// An embedded asset, after the same Host and Origin checks as any read.
async fn asset(
    state: &State,
    headers: &HeaderMap,
    content_type: &'static str,
    body: &'static str,
) -> ApiResult<Response> {
    caller(state, headers, Intent::Read).await?;
    let headers = [
        (header::CONTENT_TYPE, HeaderValue::from_static(content_type)),
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        // A page that opened the consent screen (an OAuth sign-in) keeps no
        // handle on it: it cannot switch the grant shown under the person.
        (HeaderName::from_static("cross-origin-opener-policy"), HeaderValue::from_static("same-origin")),
    ];
    Ok((StatusCode::OK, headers, body).into_response())
}

async fn index(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    asset(&state, &headers, "text/html; charset=utf-8", INDEX).await
}

async fn script(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    asset(&state, &headers, "text/javascript; charset=utf-8", SCRIPT).await
}

async fn style(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    asset(&state, &headers, "text/css; charset=utf-8", STYLE).await
}

/// Where the app lives and where its agent token is (paths, never the token),
/// and whether the app has its own page at `/`.
async fn connect(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    caller(&state, &headers, Intent::Read).await?;
    let def = &state.app.definition;
    let dir = std::path::absolute(&def.dir).unwrap_or_else(|_| def.dir.clone());
    let token = std::path::absolute(def.token_path()).unwrap_or_else(|_| def.token_path());
    let body = serde_json::json!({
        "appDir": dir.display().to_string(),
        "tokenPath": token.display().to_string(),
        "mcpPath": "/mcp",
        "hasUi": def.ui_dir().join("index.html").is_file(),
    });
    Ok(json_response(StatusCode::OK, &body))
}

/// The grants, as `GET /api/_a2app/grants` lists them to the page.
///
/// Grants are listed to a person only, and the page is recognised by its
/// Origin; but a browser sends no Origin on a same-origin GET. It does send
/// `Sec-Fetch-Site: same-origin`, which no script can set, so here that
/// header stands for the page's own origin (the app's URL through the Host
/// it requested: `http://` on loopback, `https://` for a deployed host) and
/// every usual check follows: the Host, the rate limit. A request that
/// carries an Origin is taken as it is.
async fn grants(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &page(&state, headers), Intent::Read).await?;
    let items = a2app_core::grants::list(&state.app, &who).await?;
    Ok(json_response(StatusCode::OK, &serde_json::json!({ "items": items })))
}

/// The calls of destructive operations waiting for the person, as
/// `GET /api/_a2app/approvals` lists them, recognising the page as [`grants`] does.
async fn approvals(S(state): S<State>, headers: HeaderMap) -> ApiResult<Response> {
    let who = caller(&state, &page(&state, headers), Intent::Read).await?;
    let decider = a2app_core::approvals::Decider::Person(who);
    let items = a2app_core::approvals::waiting(&state.app, &decider).await?;
    Ok(json_response(StatusCode::OK, &serde_json::json!({ "items": items })))
}

/// A same-origin GET's headers with the page's Origin (see [`grants`]).
fn page(state: &State, mut headers: HeaderMap) -> HeaderMap {
    let same_origin =
        headers.get(HeaderName::from_static("sec-fetch-site")).is_some_and(|v| v.as_bytes() == b"same-origin");
    if same_origin
        && !headers.contains_key(header::ORIGIN)
        && let Some(origin) =
            super::oauth::base(state, &headers).ok().and_then(|base| HeaderValue::from_str(&base).ok())
    {
        headers.insert(header::ORIGIN, origin);
    }
    headers
}
