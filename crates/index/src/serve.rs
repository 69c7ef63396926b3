//! The index as a service: `GET /search?q=` answers JSON for programs and
//! agents, `GET /` a plain page with a search box for people. Both read
//! only; neither fetches anything a result names (no icon is loaded, so a
//! publisher learns nothing of who searched), and the page runs no script:
//! every word of a publisher's is escaped text under a label saying whose
//! words they are.

use crate::search::{self, DEFAULT_LIMIT, MAX_LIMIT};
use crate::store::{Hit, Store};
use axum::Router;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use protocol::{ErrorBody, ErrorCode};
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Params {
    #[serde(default)]
    q: Option<String>,
    #[serde(default)]
    limit: Option<String>,
}

/// The service's routes over `store`.
pub fn router(store: Arc<Store>) -> Router {
    Router::new().route("/search", get(search_json)).route("/", get(page)).with_state(store)
}

/// Serves `router` on `listener` until `shutdown` completes.
pub async fn run(
    store: Arc<Store>,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(listener, router(store)).with_graceful_shutdown(shutdown).await
}

async fn search_json(State(store): State<Arc<Store>>, params: Result<Query<Params>, QueryRejection>) -> Response {
    let (q, limit) = match read(params) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let Some(q) = q.filter(|q| !q.trim().is_empty()) else {
        return refuse("q is required: the words to search for");
    };
    match hits(store, q.clone(), limit).await {
        Ok(hits) => axum::Json(search::answer(&q, &hits)).into_response(),
        Err(e) => e,
    }
}

async fn page(State(store): State<Arc<Store>>, params: Result<Query<Params>, QueryRejection>) -> Response {
    let (q, limit) = match read(params) {
        Ok(p) => p,
        Err(e) => return e,
    };
    let q = q.unwrap_or_default();
    let results = if q.trim().is_empty() {
        String::new()
    } else {
        match hits(store, q.clone(), limit).await {
            Ok(hits) => results_html(&q, &hits),
            Err(e) => return e,
        }
    };
    let body = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>App Index</title>\n\
         <meta name=\"viewport\" content=\"width=device-width\"><meta name=\"referrer\" content=\"no-referrer\">\n\
         <style>body{{font:16px/1.4 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}}\
         li{{margin:1rem 0}}.said{{border-left:3px solid #bbb;padding-left:.6rem;color:#333}}\
         .label{{font-size:.8rem;color:#666}}code{{word-break:break-all}}</style></head>\n\
         <body><h1>App Index</h1>\n<form action=\"/\" method=\"get\" role=\"search\">\
         <input type=\"search\" name=\"q\" value=\"{}\" aria-label=\"Search apps\" autofocus> \
         <button type=\"submit\">Search</button></form>\n\
         <p class=\"label\">Apps whose publisher lists them in its own AI catalog. The origin and the proof were \
         checked; names and descriptions are the publisher's own words, not a sign of trust.</p>\n{results}</body></html>\n",
        escape(&q)
    );
    let mut response = (StatusCode::OK, body).into_response();
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    // No script, no image, no frame: the page is text and one form.
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

fn results_html(q: &str, hits: &[Hit]) -> String {
    if hits.is_empty() {
        return format!("<p>No app matches <b>{}</b>.</p>\n", escape(q));
    }
    let mut out = String::from("<ol>\n");
    for h in hits {
        let e = &h.entry;
        let c = &e.card;
        let title = c.title.as_deref().unwrap_or(&c.name);
        out.push_str(&format!(
            "<li><div><code>{origin}</code> · card <a href=\"{card}\" rel=\"nofollow noopener noreferrer ugc\">\
             <code>{card}</code></a></div>\n<div class=\"label\">listed by {catalog} ({source}), checked {checked}{failing}</div>\n\
             <div class=\"said\"><div class=\"label\">the publisher says:</div><b>{title}</b> <code>{name}</code><br>{description}{tools}</div></li>\n",
            origin = escape(&e.origin),
            card = escape(&e.card_url),
            catalog = escape(&e.proof.catalog),
            source = e.proof.source.as_str(),
            checked = crate::entry::time(e.proof.checked_at),
            failing = if e.failures.count > 0 {
                format!("; the last {} checks could not reach it", e.failures.count)
            } else {
                String::new()
            },
            title = escape(title),
            name = escape(&c.name),
            description = escape(&c.description),
            tools = if c.tools.is_empty() {
                String::new()
            } else {
                let names: Vec<&str> = c.tools.iter().map(|t| t.name.as_str()).collect();
                format!("<br><span class=\"label\">tools:</span> {}", escape(&names.join(", ")))
            },
        ));
    }
    out.push_str("</ol>\n");
    out
}

fn read(params: Result<Query<Params>, QueryRejection>) -> Result<(Option<String>, usize), Response> {
    let Query(p) = params.map_err(|e| refuse(&format!("the query string does not fit: {}", e.body_text())))?;
    let limit = match p.limit.as_deref() {
        None => DEFAULT_LIMIT,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => return Err(refuse(&format!("limit is a count from 1 to {MAX_LIMIT}"))),
        },
    };
    Ok((p.q, limit))
}

async fn hits(store: Arc<Store>, q: String, limit: usize) -> Result<Vec<Hit>, Response> {
    let found = tokio::task::spawn_blocking(move || store.search(&q, limit)).await;
    match found {
        Ok(Ok(hits)) => Ok(hits),
        Ok(Err(e)) => {
            tracing::error!(error = %e, "index search failed");
            Err(envelope(ErrorBody::new(ErrorCode::Internal, "the search failed")))
        }
        Err(e) => {
            tracing::error!(error = %e, "index search task failed");
            Err(envelope(ErrorBody::new(ErrorCode::Internal, "the search failed")))
        }
    }
}

fn refuse(message: &str) -> Response {
    envelope(ErrorBody::new(ErrorCode::InvalidQuery, message))
}

fn envelope(body: ErrorBody) -> Response {
    let status = StatusCode::from_u16(body.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (status, axum::Json(body)).into_response()
}

/// Text as HTML text or a quoted attribute value; control and hidden
/// characters as visible escapes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Shown as what it is: a character reference would still reorder or hide text.
            c if c.is_control() || protocol::text::is_hidden(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
