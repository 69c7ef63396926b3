//! Publisher sites for the tests and the benchmark: one HTTPS server on
//! 127.0.0.1, with a certificate of the test-only CA (`tests/tls/`) for
//! `*.example.test`, `*.bench.test`, `localhost` and `127.0.0.1`, answering
//! each host name (by `Host`) from its own table of documents, which a test
//! changes while it runs. Names resolve through [`Names`], injected into the
//! crawler: every test name is 127.0.0.1 unless a test says otherwise.
//!
//! Shared by `tests/it`, the `bench` example and the CLI's tests (by path),
//! so there is one harness.

#![allow(dead_code)] // each user takes the part it needs

use a2app_client::discovery::{Lookup, TestOnlyLoopback};
use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Request, StatusCode};
use axum::response::Response;
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const CA_PEM: &[u8] = include_bytes!("../tls/ca.pem");
const CERT_PEM: &[u8] = include_bytes!("../tls/site.pem");
const KEY_PEM: &[u8] = include_bytes!("../tls/site.key");

/// The allowance only a test harness gives: loopback and the test CA.
pub fn test_only() -> TestOnlyLoopback {
    TestOnlyLoopback { ca_pem: CA_PEM.to_vec() }
}

/// One answer a site gives at a path.
#[derive(Clone, Debug)]
pub struct Page {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Waited before answering.
    pub delay: Duration,
}

impl Page {
    pub fn json(content_type: &str, value: &serde_json::Value) -> Page {
        Page::of(content_type, value.to_string().into_bytes())
    }

    pub fn of(content_type: &str, body: Vec<u8>) -> Page {
        Page { status: 200, headers: vec![("content-type".into(), content_type.into())], body, delay: Duration::ZERO }
    }

    pub fn text(body: &str) -> Page {
        Page::of("text/plain", body.as_bytes().to_vec())
    }

    pub fn html(body: &str) -> Page {
        Page::of("text/html; charset=utf-8", body.as_bytes().to_vec())
    }

    pub fn status(status: u16) -> Page {
        Page { status, headers: vec![], body: vec![], delay: Duration::ZERO }
    }

    pub fn redirect(to: &str) -> Page {
        Page::status(302).header("location", to)
    }

    pub fn header(mut self, name: &str, value: &str) -> Page {
        self.headers.push((name.into(), value.into()));
        self
    }

    pub fn delay(mut self, delay: Duration) -> Page {
        self.delay = delay;
        self
    }
}

/// A request a site saw: host, path and query, when it came and when it was answered.
#[derive(Clone, Debug)]
pub struct Seen {
    pub host: String,
    pub path: String,
    pub user_agent: String,
    pub start: Instant,
    pub end: Instant,
}

#[derive(Default)]
struct Table {
    pages: HashMap<(String, String), Page>,
    seen: Vec<Seen>,
}

/// The running server; every site is a host name on it.
#[derive(Clone)]
pub struct Web {
    pub port: u16,
    table: Arc<Mutex<Table>>,
}

impl Web {
    /// Binds 127.0.0.1 on a free port and serves until the runtime ends.
    pub async fn start() -> Web {
        a2app_client::install_tls_provider();
        let tcp = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.expect("bind");
        let port = tcp.local_addr().expect("addr").port();
        let table = Arc::new(Mutex::new(Table::default()));
        let listener = TlsListener { tcp, tls: acceptor() };
        let state = table.clone();
        let app = axum::Router::new().fallback(move |request: Request<Body>| answer(state.clone(), request));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Web { port, table }
    }

    /// `https://host:port/path`.
    pub fn url(&self, host: &str, path: &str) -> String {
        format!("https://{host}:{}{path}", self.port)
    }

    pub fn set(&self, host: &str, path: &str, page: Page) {
        self.table.lock().expect("table").pages.insert((host.into(), path.into()), page);
    }

    pub fn remove(&self, host: &str, path: &str) {
        self.table.lock().expect("table").pages.remove(&(host.to_owned(), path.to_owned()));
    }

    /// Every request so far, in the order they came.
    pub fn seen(&self) -> Vec<Seen> {
        self.table.lock().expect("table").seen.clone()
    }

    /// The paths `host` was asked for, in order.
    pub fn paths(&self, host: &str) -> Vec<String> {
        self.seen().into_iter().filter(|s| s.host == host).map(|s| s.path).collect()
    }

    pub fn forget_seen(&self) {
        self.table.lock().expect("table").seen.clear();
    }

    /// A site as a2app serves one: its catalog at the well-known path
    /// listing its card, the card, robots.txt absent (404).
    pub fn publish(&self, host: &str, app: &App) {
        self.set(host, "/.well-known/ai-catalog.json", catalog(&[self.url(host, &app.card_path)]));
        self.set(host, &app.card_path, app.page(self, host));
    }
}

/// An app's card, as its publisher writes it.
#[derive(Clone, Debug)]
pub struct App {
    pub card_path: String,
    pub name: String,
    pub title: String,
    pub description: String,
    pub tools: Vec<(String, String)>,
    /// Path of the `websiteUrl` page on the same host, if any.
    pub website: Option<String>,
}

impl App {
    pub fn new(name: &str, title: &str, description: &str) -> App {
        App {
            card_path: "/mcp/server-card".into(),
            name: name.into(),
            title: title.into(),
            description: description.into(),
            tools: vec![],
            website: None,
        }
    }

    pub fn at(mut self, card_path: &str) -> App {
        self.card_path = card_path.into();
        self
    }

    pub fn card(&self, web: &Web, host: &str) -> serde_json::Value {
        let mut card = serde_json::json!({
            "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
            "name": self.name,
            "title": self.title,
            "version": "1.0.0",
            "description": self.description,
            "remotes": [{"type": "streamable-http", "url": web.url(host, "/mcp"), "supportedProtocolVersions": ["2025-11-25"]}],
        });
        if let Some(w) = &self.website {
            card["websiteUrl"] = web.url(host, w).into();
        }
        if !self.tools.is_empty() {
            card["tools"] = self
                .tools
                .iter()
                .map(|(n, d)| serde_json::json!({"name": n, "description": d}))
                .collect::<Vec<_>>()
                .into();
        }
        card
    }

    pub fn page(&self, web: &Web, host: &str) -> Page {
        Page::json("application/mcp-server-card+json", &self.card(web, host))
    }
}

/// A catalog listing `cards`.
pub fn catalog(cards: &[String]) -> Page {
    let entries: Vec<serde_json::Value> = cards
        .iter()
        .map(|url| serde_json::json!({"identifier": format!("urn:air:{url}"), "type": "application/mcp-server-card+json", "url": url}))
        .collect();
    Page::json("application/ai-catalog+json", &serde_json::json!({"specVersion": "1.0", "entries": entries}))
}

async fn answer(table: Arc<Mutex<Table>>, request: Request<Body>) -> Response {
    let start = Instant::now();
    let host = host_of(request.headers());
    let path = request.uri().path_and_query().map(|p| p.as_str().to_owned()).unwrap_or_else(|| "/".into());
    let user_agent = request.headers().get("user-agent").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let page = table.lock().expect("table").pages.get(&(host.clone(), path.clone())).cloned();
    let page = page.unwrap_or_else(|| Page::status(404));
    if !page.delay.is_zero() {
        tokio::time::sleep(page.delay).await;
    }
    let mut response = Response::new(Body::from(page.body));
    *response.status_mut() = StatusCode::from_u16(page.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in &page.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name.as_str()), HeaderValue::try_from(value.as_str())) {
            response.headers_mut().append(n, v);
        }
    }
    table.lock().expect("table").seen.push(Seen { host, path, user_agent, start, end: Instant::now() });
    response
}

fn host_of(headers: &HeaderMap) -> String {
    let host = headers.get("host").and_then(|v| v.to_str().ok()).unwrap_or_default();
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name.to_owned(),
        _ => host.to_owned(),
    }
}

fn acceptor() -> tokio_rustls::TlsAcceptor {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(CERT_PEM).collect::<Result<_, _>>().expect("test cert");
    let key = PrivateKeyDer::from_pem_slice(KEY_PEM).expect("test key");
    let config = rustls::ServerConfig::builder().with_no_client_auth().with_single_cert(certs, key).expect("tls");
    tokio_rustls::TlsAcceptor::from(Arc::new(config))
}

struct TlsListener {
    tcp: tokio::net::TcpListener,
    tls: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else { continue };
            // A failed handshake is that client's problem, not the server's.
            if let Ok(Ok(tls)) = tokio::time::timeout(Duration::from_secs(5), self.tls.accept(stream)).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Name lookups for the crawler: every `*.test` name is 127.0.0.1 unless
/// set otherwise; any other name does not resolve.
#[derive(Default, Clone)]
pub struct Names {
    overrides: Arc<Mutex<HashMap<String, Vec<IpAddr>>>>,
    failing: Arc<Mutex<Vec<String>>>,
}

impl Names {
    pub fn set(&self, host: &str, ips: &[IpAddr]) {
        self.overrides.lock().expect("names").insert(host.into(), ips.to_vec());
    }

    /// `host` no longer resolves (a DNS failure).
    pub fn fail(&self, host: &str) {
        self.failing.lock().expect("names").push(host.into());
    }

    pub fn heal(&self, host: &str) {
        self.failing.lock().expect("names").retain(|h| h != host);
    }
}

impl Lookup for Names {
    fn lookup(&self, host: &str) -> std::pin::Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>> {
        let failing = self.failing.lock().expect("names").iter().any(|h| h == host);
        let found = self.overrides.lock().expect("names").get(host).cloned();
        let host = host.to_owned();
        Box::pin(async move {
            if failing {
                return Err(std::io::Error::other(format!("{host}: no such name")));
            }
            match found {
                Some(ips) => Ok(ips),
                None if host.ends_with(".test") => Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]),
                None => Err(std::io::Error::other(format!("{host}: no such name"))),
            }
        })
    }
}
