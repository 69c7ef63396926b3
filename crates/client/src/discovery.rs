//! Finding an app from what a person has (DESIGN section 6; the publishing
//! protocol of `spec/001`): a domain, an app's page, a catalog or a card.
//!
//! Only static documents are read: the `ai-catalog` link of a page (its `Link`
//! header or a `<link>` tag, never a script), the AI Catalog, the MCP server
//! card. A catalog naming several cards is never added whole: the person
//! picks one. Every fetch is bounded (1 MiB, 10 s, 5 redirects) and reaches
//! no private, loopback, link-local or cloud-metadata address: the check is
//! made on the addresses DNS answers, which are the ones connected to (a
//! resolver of our own), and again on every redirect. `allow_local` lets a
//! person reach apps on this machine or their network; link-local addresses,
//! where cloud metadata services live, stay out even then.
//!
//! The same fetches serve the public App Index's crawler (`a2app-index`)
//! through [`Rules`] and [`Fetcher::hop`]: https only, one request at a time
//! so it can pace each host and read robots.txt before each hop, under its
//! own User-Agent. A test harness may widen the reach to loopback with its
//! own CA ([`TestOnlyLoopback`]); nothing else can.

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use serde_json::Value;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

pub const MAX_BYTES: usize = 1 << 20;
pub const TIMEOUT: Duration = Duration::from_secs(10);
pub const MAX_REDIRECTS: usize = 5;

pub const CATALOG_TYPE: &str = "application/ai-catalog+json";
pub const CARD_TYPE: &str = "application/mcp-server-card+json";
pub const WELL_KNOWN: &str = "/.well-known/ai-catalog.json";

/// What a [`Fetcher`] may do. The defaults are discovery's for a person
/// (`a2app add`): public addresses, 1 MiB, 10 s, 5 redirects.
#[derive(Clone)]
pub struct Rules {
    /// Also this machine and its networks (loopback, private), never link-local:
    /// a person's `--allow-local`.
    pub allow_local: bool,
    /// Refuse plain http even where `allow_local` would take it (a crawler).
    pub https_only: bool,
    pub user_agent: String,
    pub max_bytes: usize,
    /// For one request, its answer's body included.
    pub timeout: Duration,
    pub max_redirects: usize,
    /// How names become addresses; the answers pass the address check all
    /// the same, so a lookup can narrow what is reached, never widen it.
    pub lookup: Option<Arc<dyn Lookup>>,
    /// Loopback addresses and one certificate authority of a test harness's
    /// own. Only test code sets it; see [`TestOnlyLoopback`].
    pub test_only: Option<TestOnlyLoopback>,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            allow_local: false,
            https_only: false,
            user_agent: concat!("a2app/", env!("CARGO_PKG_VERSION")).to_owned(),
            max_bytes: MAX_BYTES,
            timeout: TIMEOUT,
            max_redirects: MAX_REDIRECTS,
            lookup: None,
            test_only: None,
        }
    }
}

/// The allowance a test harness needs to serve publishers on this machine:
/// loopback addresses (127.0.0.0/8, ::1; private and link-local ones stay
/// out) become reachable, and the system's trust store is replaced by the
/// harness's own CA, so nothing but the harness's servers can answer. It is
/// never read from a file or set by a flag of a production command; only a
/// test harness builds one (the `a2app` binary from `A2APP_TEST_ONLY_…`).
#[derive(Clone)]
pub struct TestOnlyLoopback {
    /// The harness's CA certificate, PEM.
    pub ca_pem: Vec<u8>,
}

/// A name lookup a caller injects (a test giving a publisher's name a
/// private address); [`Guarded`] still checks every address it answers.
pub trait Lookup: Send + Sync + 'static {
    fn lookup(&self, host: &str) -> std::pin::Pin<Box<dyn Future<Output = std::io::Result<Vec<IpAddr>>> + Send>>;
}

/// The addresses of `host` by `lookup`, else by the system's resolver.
async fn addresses(lookup: Option<&Arc<dyn Lookup>>, host: &str, port: u16) -> std::io::Result<Vec<SocketAddr>> {
    match lookup {
        Some(l) => Ok(l.lookup(host).await?.into_iter().map(|ip| SocketAddr::new(ip, port)).collect()),
        None => Ok(tokio::net::lookup_host((host, port)).await?.collect()),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    #[error("{0} is not a domain or an http(s) URL")]
    BadInput(String),
    #[error("{url} leads to {what} addresses, which discovery never reaches")]
    Blocked { url: String, what: &'static str },
    #[error("cannot fetch {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("{url} answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} is larger than {MAX_BYTES} bytes")]
    TooLarge { url: String },
    #[error("{url} redirects more than {MAX_REDIRECTS} times")]
    TooManyRedirects { url: String },
    #[error("{url} is {what}, not an app page, AI catalog or MCP server card")]
    Unrecognized { url: String, what: String },
    #[error("{url} links no AI catalog")]
    NoCatalog { url: String },
    #[error("the catalog at {url} lists no MCP server card")]
    NoCard { url: String },
    #[error("the catalog at {url} lists {} cards; a whole catalog is never added", .cards.len())]
    SeveralCards { url: String, cards: Vec<Listed> },
    #[error("the card at {url} names no {scheme} remote")]
    NoRemote { url: String, scheme: &'static str },
}

/// One JSON document at exactly `input` by the same guarded GET as
/// discovery's (the address checked after resolution, the size and time
/// limits), following no redirect: what an app's server uses to read an
/// OAuth client's metadata document, which must be served at the URL the
/// client names.
pub async fn fetch_json(input: &str, allow_local: bool) -> Result<Value, DiscoveryError> {
    let url = Url::parse(input).map_err(|_| DiscoveryError::BadInput(input.to_owned()))?;
    let fetcher = Fetcher::with_rules(Rules { allow_local, max_redirects: 0, ..Rules::default() })?;
    let doc = fetcher.get(&url).await.map_err(|e| match e {
        DiscoveryError::TooManyRedirects { url } => {
            DiscoveryError::BadInput(format!("{url} redirects; the document must be served at that very URL"))
        }
        other => other,
    })?;
    serde_json::from_slice(&doc.body)
        .map_err(|_| DiscoveryError::Unrecognized { url: redacted(&doc.url), what: "not JSON".into() })
}

/// A card a catalog lists.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Listed {
    pub url: String,
    pub name: String,
}

/// The card found, and the app it names.
#[derive(Debug, Clone)]
pub struct Found {
    pub card_url: Url,
    pub card: Value,
    /// The app's base URL: the card's MCP remote without its `/mcp`.
    pub base: Url,
    /// The card's title, else its name.
    pub title: String,
}

/// Finds the card `input` leads to.
pub async fn find(input: &str, allow_local: bool) -> Result<Found, DiscoveryError> {
    crate::install_tls_provider();
    let fetcher = Fetcher::new(allow_local)?;
    let start = start_url(input, allow_local)?;
    let mut doc = fetcher.get(&start).await?;
    if doc.is_html() {
        let catalog = doc.catalog_link().ok_or_else(|| DiscoveryError::NoCatalog { url: doc.url.to_string() })?;
        doc = fetcher.get(&catalog).await?;
    }
    let json = doc.json()?;
    if doc.is_catalog(&json) {
        let cards = listed(&doc.url, &json);
        let card = match cards.as_slice() {
            [] => return Err(DiscoveryError::NoCard { url: doc.url.to_string() }),
            [one] => one.url.clone(),
            _ => return Err(DiscoveryError::SeveralCards { url: doc.url.to_string(), cards }),
        };
        let url = Url::parse(&card).map_err(|_| DiscoveryError::BadInput(card.clone()))?;
        doc = fetcher.get(&url).await?;
        let json = doc.json()?;
        return found(doc.url, json, allow_local);
    }
    if doc.is_card(&json) {
        return found(doc.url, json, allow_local);
    }
    Err(DiscoveryError::Unrecognized { url: doc.url.to_string(), what: doc.kind() })
}

/// Finds the card `input` leads to, and checks that the app it names is
/// within reach by the same rules: a card may name any address.
pub async fn find_app(input: &str, allow_local: bool) -> Result<Found, DiscoveryError> {
    let found = find(input, allow_local).await?;
    let timed_out =
        || DiscoveryError::Unreachable { url: found.base.to_string(), detail: "no DNS answer in time".into() };
    tokio::time::timeout(TIMEOUT, vet(&found.base, allow_local)).await.map_err(|_| timed_out())??;
    Ok(found)
}

/// Every address `url`'s host has must be within discovery's reach.
async fn vet(url: &Url, allow_local: bool) -> Result<(), DiscoveryError> {
    check(url, &Rules { allow_local, ..Rules::default() }).await?;
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    let port = url.port_or_known_default().unwrap_or(443);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), port))
        .await
        .map_err(|e| DiscoveryError::Unreachable { url: url.to_string(), detail: e.to_string() })?
        .collect();
    match addrs.iter().find_map(|a| blocked(a.ip(), allow_local)) {
        Some(what) => Err(DiscoveryError::Blocked { url: url.to_string(), what }),
        None => Ok(()),
    }
}

/// A bare domain (or `host:port`) means its well-known catalog; a URL is
/// fetched as given. Plain HTTP only for hosts a person allowed as local.
pub fn start_url(input: &str, allow_local: bool) -> Result<Url, DiscoveryError> {
    let bad = || DiscoveryError::BadInput(input.to_owned());
    let text = input.trim();
    let lower = text.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        let url = Url::parse(text).map_err(|_| bad())?;
        if url.host_str().is_none_or(str::is_empty) {
            return Err(bad());
        }
        return Ok(url);
    }
    let host_like = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    if !host_like {
        return Err(bad());
    }
    // HTTPS, except for an app on this machine or its network the person allowed.
    let https = Url::parse(&format!("https://{text}{WELL_KNOWN}")).map_err(|_| bad())?;
    let host = https.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']');
    let local_name = host == "localhost" || host.ends_with(".localhost");
    let local_ip = host.parse::<IpAddr>().is_ok_and(|ip| blocked(ip, false).is_some());
    if allow_local && (local_name || local_ip) {
        return Url::parse(&format!("http://{text}{WELL_KNOWN}")).map_err(|_| bad());
    }
    Ok(https)
}

/// The cards a catalog lists, as absolute URLs.
pub fn listed(base: &Url, catalog: &Value) -> Vec<Listed> {
    let entries = catalog.get("entries").and_then(Value::as_array).cloned().unwrap_or_default();
    entries
        .iter()
        .filter(|e| {
            let kind = e.get("type").or_else(|| e.get("mediaType")).and_then(Value::as_str).unwrap_or_default();
            kind.eq_ignore_ascii_case(CARD_TYPE)
        })
        .filter_map(|e| {
            let url = base.join(e.get("url")?.as_str()?).ok()?;
            let name = ["displayName", "name", "identifier"]
                .iter()
                .find_map(|k| e.get(*k).and_then(Value::as_str))
                .unwrap_or_default()
                .to_owned();
            Some(Listed { url: url.to_string(), name })
        })
        .fold(Vec::new(), |mut cards: Vec<Listed>, card| {
            // One card listed twice is still one card.
            if !cards.iter().any(|c| c.url == card.url) {
                cards.push(card);
            }
            cards
        })
}

/// The app a card names: its Streamable HTTP remote, `/mcp` taken off.
fn found(card_url: Url, card: Value, allow_local: bool) -> Result<Found, DiscoveryError> {
    let scheme = if allow_local { "http(s)" } else { "https" };
    let remote = card
        .get("remotes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("type").and_then(Value::as_str).is_none_or(|t| t == "streamable-http"))
        .filter_map(|r| card_url.join(r.get("url")?.as_str()?).ok())
        // A remote carrying credentials would send them on: not one to use.
        .filter(|u| u.username().is_empty() && u.password().is_none())
        .find(|u| u.scheme() == "https" || (allow_local && u.scheme() == "http"))
        .ok_or_else(|| DiscoveryError::NoRemote { url: card_url.to_string(), scheme })?;
    let mut base = remote.clone();
    let path = remote.path().trim_end_matches('/');
    base.set_path(path.strip_suffix("/mcp").unwrap_or(path));
    base.set_query(None);
    base.set_fragment(None);
    let title =
        ["title", "name"].iter().find_map(|k| card.get(*k).and_then(Value::as_str)).unwrap_or_default().to_owned();
    Ok(Found { card_url, card, base, title })
}

/// A fetched document.
#[derive(Debug, Clone)]
pub struct Doc {
    /// Where it was answered from (after redirects, for [`Fetcher::get`]).
    pub url: Url,
    /// Lower-cased.
    pub content_type: String,
    /// Every `Link` header, joined with commas.
    pub link: Option<String>,
    /// Every `X-Robots-Tag` header, one value each.
    pub robots_tag: Vec<String>,
    pub body: Vec<u8>,
    /// The body was longer than the prefix asked for and was cut there
    /// ([`Fetcher::hop_prefix`]).
    pub truncated: bool,
}

impl Doc {
    pub fn is_html(&self) -> bool {
        self.content_type.starts_with("text/html") || self.content_type.starts_with("application/xhtml")
    }

    pub fn json(&self) -> Result<Value, DiscoveryError> {
        serde_json::from_slice(&self.body)
            .map_err(|_| DiscoveryError::Unrecognized { url: self.url.to_string(), what: self.kind() })
    }

    pub fn is_catalog(&self, json: &Value) -> bool {
        self.content_type.starts_with(CATALOG_TYPE) || json.get("entries").is_some_and(Value::is_array)
    }

    pub fn is_card(&self, json: &Value) -> bool {
        self.content_type.starts_with(CARD_TYPE) || json.get("remotes").is_some_and(Value::is_array)
    }

    fn kind(&self) -> String {
        if self.content_type.is_empty() { "a document without a type".into() } else { self.content_type.clone() }
    }

    /// The catalog a page links: its `Link` header, else a `<link>` tag.
    pub fn catalog_link(&self) -> Option<Url> {
        let href =
            self.link.as_deref().and_then(link_header).or_else(|| link_tag(&String::from_utf8_lossy(&self.body)))?;
        self.url.join(&href).ok()
    }

    /// The catalog the `Link` header names (a card's answer: no body is read).
    pub fn catalog_header(&self) -> Option<Url> {
        self.url.join(&self.link.as_deref().and_then(link_header)?).ok()
    }
}

/// What one request answered: a document, or where it redirects.
#[derive(Debug, Clone)]
pub enum Hop {
    Doc(Doc),
    Redirect(Url),
}

/// The target of a `rel="ai-catalog"` entry in a `Link` header.
fn link_header(value: &str) -> Option<String> {
    value.split(',').find_map(|part| {
        let (target, params) = part.trim().split_once('>')?;
        let rel = params.split(';').any(|p| {
            let Some((key, value)) = p.split_once('=') else { return false };
            key.trim().eq_ignore_ascii_case("rel")
                && value.trim().trim_matches('"').split_whitespace().any(|r| r.eq_ignore_ascii_case("ai-catalog"))
        });
        rel.then(|| target.trim().trim_start_matches('<').to_owned())
    })
}

/// The `href` of the first `<link rel="ai-catalog" …>` tag of an HTML page,
/// from a plain scan: comments and the contents of raw-text elements
/// (`script`, `style`, …) are skipped, so a link a script would write is
/// never followed.
fn link_tag(html: &str) -> Option<String> {
    const RAW_TEXT: [&str; 6] = ["script", "style", "template", "textarea", "noscript", "title"];
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    while let Some(found) = lower[at..].find('<') {
        let start = at + found;
        let rest = &lower[start..];
        if rest.starts_with("<!--") {
            at = rest.find("-->").map_or(lower.len(), |e| start + e + 3);
            continue;
        }
        if let Some(name) = RAW_TEXT.iter().find(|n| tag_named(rest, n)) {
            let close = format!("</{name}");
            at = lower[start + 1..].find(&close).map_or(lower.len(), |e| start + 1 + e + close.len());
            continue;
        }
        if tag_named(rest, "link") {
            let end = lower[start..].find('>').map_or(lower.len(), |e| start + e);
            let attrs = attributes(&html[start + 5..end]);
            let rel = attrs
                .iter()
                .any(|(k, v)| k == "rel" && v.split_whitespace().any(|r| r.eq_ignore_ascii_case("ai-catalog")));
            if rel && let Some((_, href)) = attrs.iter().find(|(k, _)| k == "href") {
                return Some(href.clone());
            }
            at = end;
            continue;
        }
        at = start + 1;
    }
    None
}

/// `<name` followed by the end of the name (`<link-preview` is not `<link`).
fn tag_named(text: &str, name: &str) -> bool {
    text.strip_prefix('<').and_then(|t| t.strip_prefix(name)).is_some_and(|after| {
        after.is_empty() || after.starts_with(|c: char| c.is_ascii_whitespace() || c == '/' || c == '>')
    })
}

/// `name="value"`, `name='value'` and `name=value` pairs, names lower-cased.
fn attributes(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let name_end = rest.find(|c: char| c == '=' || c.is_whitespace() || c == '/').unwrap_or(rest.len());
        let name = rest[..name_end].to_ascii_lowercase();
        rest = rest[name_end..].trim_start();
        if let Some(after) = rest.strip_prefix('=') {
            let after = after.trim_start();
            let (value, remaining) = match after.chars().next() {
                Some(q @ ('"' | '\'')) => {
                    let inner = &after[1..];
                    let close = inner.find(q).unwrap_or(inner.len());
                    (&inner[..close], inner.get(close + 1..).unwrap_or(""))
                }
                _ => {
                    let end = after.find(char::is_whitespace).unwrap_or(after.len());
                    (&after[..end], &after[end..])
                }
            };
            out.push((name, value.to_owned()));
            rest = remaining.trim_start();
        } else {
            if name.is_empty() {
                // A stray `/` (as in `<link / rel=…>`): step over it.
                let stepped = rest.trim_start_matches('/').trim_start();
                if stepped.len() == rest.len() {
                    break;
                }
                rest = stepped;
                continue;
            }
            rest = rest.trim_start_matches('/').trim_start();
        }
    }
    out
}

/// Why an address is out of discovery's reach, or `None` when it may be reached.
pub fn blocked(ip: IpAddr, allow_local: bool) -> Option<&'static str> {
    blocked_in(ip, Reach { local: allow_local, loopback: allow_local })
}

/// [`blocked`] under `rules`: a test harness's allowance adds loopback alone.
pub fn blocked_by(ip: IpAddr, rules: &Rules) -> Option<&'static str> {
    blocked_in(ip, Reach::of(rules))
}

/// Which addresses beyond public ones may be reached.
#[derive(Debug, Clone, Copy)]
struct Reach {
    /// Private networks (a person's `--allow-local`).
    local: bool,
    /// This machine (`--allow-local`, or a test harness's allowance).
    loopback: bool,
}

impl Reach {
    fn of(rules: &Rules) -> Reach {
        Reach { local: rules.allow_local, loopback: rules.allow_local || rules.test_only.is_some() }
    }
}

fn blocked_in(ip: IpAddr, reach: Reach) -> Option<&'static str> {
    let ip = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    };
    let kind = match ip {
        IpAddr::V4(v4) => v4_kind(v4),
        IpAddr::V6(v6) => v6_kind(v6),
    };
    match kind {
        Kind::Metadata => Some("link-local or cloud-metadata"),
        Kind::Reserved => Some("unspecified, reserved, broadcast or multicast"),
        Kind::Loopback if !reach.loopback => Some("loopback or private"),
        Kind::Local if !reach.local => Some("loopback or private"),
        Kind::Loopback | Kind::Local | Kind::Public => None,
    }
}

enum Kind {
    /// Link-local, where cloud metadata services answer, and their known addresses.
    Metadata,
    /// This machine.
    Loopback,
    /// Private networks.
    Local,
    Reserved,
    Public,
}

fn v4_kind(ip: Ipv4Addr) -> Kind {
    let [a, b, c, _] = ip.octets();
    // Alibaba Cloud's metadata service, inside the shared 100.64/10, and Azure's wire server.
    let metadata = ip == Ipv4Addr::new(100, 100, 100, 200) || ip == Ipv4Addr::new(168, 63, 129, 16);
    if ip.is_link_local() || metadata {
        Kind::Metadata
    } else if ip.is_loopback() {
        Kind::Loopback
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Kind::Local
    } else if ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || a >= 240
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
    {
        Kind::Reserved
    } else {
        Kind::Public
    }
}

fn v6_kind(ip: Ipv6Addr) -> Kind {
    let first = ip.segments()[0];
    // AWS's metadata service answers on fd00:ec2::254 too.
    if (first & 0xffc0) == 0xfe80 || ip == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254) {
        Kind::Metadata
    } else if ip.is_loopback() {
        Kind::Loopback
    } else if (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfec0 {
        Kind::Local
    } else if ip.is_unspecified() || ip.is_multicast() {
        Kind::Reserved
    } else {
        Kind::Public
    }
}

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:a.b.c.d`), SIIT
/// (`::ffff:0:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`,
/// `64:ff9b:1::/48`) and 6to4 (`2002:AABB:CCDD::/48`). Each can reach that
/// IPv4 address, so it is judged as that address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] | [0, 0, 0, 0, 0xffff, 0, _, _] => Some(low),
        // `::` and `::1` are IPv6's own.
        [0, 0, 0, 0, 0, 0, hi, _] if hi != 0 => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] | [0x64, 0xff9b, 1, ..] => Some(low),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)),
        _ => None,
    }
}

/// The refusal `Guarded` gives, found again in the error chain of a request.
#[derive(Debug)]
struct BlockedName {
    host: String,
    what: &'static str,
}

impl std::fmt::Display for BlockedName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} resolves only to {} addresses", self.host, self.what)
    }
}

impl std::error::Error for BlockedName {}

/// The resolver discovery connects through: it answers only addresses
/// discovery may reach, so the check holds for the address connected to.
pub(crate) struct Guarded {
    reach: Reach,
    lookup: Option<Arc<dyn Lookup>>,
}

impl Resolve for Guarded {
    fn resolve(&self, name: Name) -> Resolving {
        let reach = self.reach;
        let lookup = self.lookup.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = addresses(lookup.as_ref(), &host, 0).await?;
            let allowed: Vec<SocketAddr> =
                found.iter().copied().filter(|a| blocked_in(a.ip(), reach).is_none()).collect();
            if allowed.is_empty() {
                let what = found.first().and_then(|a| blocked_in(a.ip(), reach)).unwrap_or("no");
                return Err(Box::new(BlockedName { host, what }) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// A request error as discovery's: a name the resolver refused is `Blocked`.
fn request_error(url: &Url, e: &reqwest::Error) -> DiscoveryError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(b) = err.downcast_ref::<BlockedName>() {
            return DiscoveryError::Blocked { url: url.to_string(), what: b.what };
        }
        source = err.source();
    }
    DiscoveryError::Unreachable { url: url.to_string(), detail: crate::api::chain(e) }
}

/// Guarded GETs under [`Rules`]: every URL and every address checked, the
/// body bounded, no proxy, no cookies, no redirect followed by itself.
pub struct Fetcher {
    http: reqwest::Client,
    rules: Rules,
}

impl Fetcher {
    fn new(allow_local: bool) -> Result<Fetcher, DiscoveryError> {
        Fetcher::with_rules(Rules { allow_local, ..Rules::default() })
    }

    pub fn with_rules(rules: Rules) -> Result<Fetcher, DiscoveryError> {
        let setup = |detail: String| DiscoveryError::Unreachable { url: String::new(), detail };
        let mut builder = guarded(&rules).timeout(rules.timeout).user_agent(rules.user_agent.clone());
        if let Some(test) = &rules.test_only {
            let ca = reqwest::Certificate::from_pem(&test.ca_pem).map_err(|e| setup(format!("the test CA: {e}")))?;
            builder = builder.tls_certs_only([ca]);
        }
        let http = builder.build().map_err(|e| setup(e.to_string()))?;
        Ok(Fetcher { http, rules })
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// GET with the limits: at most `max_redirects` redirects, each checked,
    /// and `timeout` for the document whatever the number of hops.
    pub async fn get(&self, url: &Url) -> Result<Doc, DiscoveryError> {
        tokio::time::timeout(self.rules.timeout, self.follow(url)).await.unwrap_or_else(|_| {
            Err(DiscoveryError::Unreachable {
                url: url.to_string(),
                detail: format!("no document within {:?}", self.rules.timeout),
            })
        })
    }

    async fn follow(&self, url: &Url) -> Result<Doc, DiscoveryError> {
        let mut url = url.clone();
        for _ in 0..=self.rules.max_redirects {
            match self.hop(&url, DISCOVERY_ACCEPT).await? {
                Hop::Doc(doc) => return Ok(doc),
                Hop::Redirect(next) => url = next,
            }
        }
        Err(DiscoveryError::TooManyRedirects { url: url.to_string() })
    }

    /// One checked request, redirects not followed: a caller that must
    /// decide before each hop (pace its host, read its robots.txt) follows
    /// them itself. A body over `max_bytes` is refused.
    pub async fn hop(&self, url: &Url, accept: &str) -> Result<Hop, DiscoveryError> {
        self.request(url, accept, None).await
    }

    /// [`Fetcher::hop`], keeping the first `keep` bytes of a longer body
    /// instead of refusing it (robots.txt, of which only a prefix is read).
    pub async fn hop_prefix(&self, url: &Url, accept: &str, keep: usize) -> Result<Hop, DiscoveryError> {
        self.request(url, accept, Some(keep)).await
    }

    async fn request(&self, url: &Url, accept: &str, keep: Option<usize>) -> Result<Hop, DiscoveryError> {
        check(url, &self.rules).await?;
        let mut resp =
            self.http.get(url.clone()).header("accept", accept).send().await.map_err(|e| request_error(url, &e))?;
        let status = resp.status();
        if status.is_redirection() {
            let next = resp
                .headers()
                .get("location")
                .and_then(|v| v.to_str().ok())
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| DiscoveryError::Status { url: url.to_string(), status: status.as_u16() })?;
            return Ok(Hop::Redirect(next));
        }
        if !status.is_success() {
            return Err(DiscoveryError::Status { url: url.to_string(), status: status.as_u16() });
        }
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let content_type = header("content-type").unwrap_or_default().to_ascii_lowercase();
        let all = |name: &str| -> Vec<String> {
            resp.headers().get_all(name).iter().filter_map(|v| v.to_str().ok()).map(str::to_owned).collect()
        };
        let links = all("link");
        let link = (!links.is_empty()).then(|| links.join(", "));
        let robots_tag = all("x-robots-tag");
        let limit = keep.unwrap_or(self.rules.max_bytes);
        if keep.is_none() && resp.content_length().is_some_and(|n| n > limit as u64) {
            return Err(DiscoveryError::TooLarge { url: url.to_string() });
        }
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = resp.chunk().await.map_err(|e| request_error(url, &e))? {
            if body.len() + chunk.len() > limit {
                if keep.is_none() {
                    return Err(DiscoveryError::TooLarge { url: url.to_string() });
                }
                body.extend_from_slice(&chunk[..limit - body.len()]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Hop::Doc(Doc { url: url.clone(), content_type, link, robots_tag, body, truncated }))
    }
}

const DISCOVERY_ACCEPT: &str =
    "application/ai-catalog+json, application/mcp-server-card+json, application/json, text/html;q=0.8";

/// A client whose names resolve through `Guarded` and which ignores proxy
/// settings: a proxy would resolve the name itself, past the check.
pub(crate) fn guarded_client(allow_local: bool) -> reqwest::ClientBuilder {
    guarded(&Rules { allow_local, ..Rules::default() })
        .timeout(TIMEOUT)
        .user_agent(concat!("a2app/", env!("CARGO_PKG_VERSION")))
}

fn guarded(rules: &Rules) -> reqwest::ClientBuilder {
    crate::install_tls_provider();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .dns_resolver(Arc::new(Guarded { reach: Reach::of(rules), lookup: rules.lookup.clone() }))
}

/// What may be fetched: http(s) without credentials in the URL, an address
/// literal within reach (the resolver sees only names), and plain HTTP only
/// to an address on this machine or its network, with `allow_local`, and
/// never under `https_only`.
async fn check(url: &Url, rules: &Rules) -> Result<(), DiscoveryError> {
    let refuse = |why: &str| DiscoveryError::BadInput(format!("{} ({why})", redacted(url)));
    let schemes: &[&str] = if rules.https_only { &["https"] } else { &["https", "http"] };
    if !schemes.contains(&url.scheme()) {
        return Err(refuse(if rules.https_only {
            "only https is read"
        } else {
            "discovery reads https, and http on this machine or network with --allow-local"
        }));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(refuse("a link carries no credentials"));
    }
    let host = url.host_str().unwrap_or_default().trim_start_matches('[').trim_end_matches(']').to_owned();
    if let Ok(ip) = host.parse::<IpAddr>()
        && let Some(what) = blocked_by(ip, rules)
    {
        return Err(DiscoveryError::Blocked { url: url.to_string(), what });
    }
    if url.scheme() == "http" {
        let port = url.port_or_known_default().unwrap_or(80);
        let addrs = match addresses(rules.lookup.as_ref(), &host, port).await {
            Ok(a) => a,
            Err(e) => return Err(DiscoveryError::Unreachable { url: url.to_string(), detail: e.to_string() }),
        };
        let local = !addrs.is_empty() && addrs.iter().all(|a| blocked(a.ip(), false).is_some());
        if !rules.allow_local || !local {
            return Err(refuse("plain http only on this machine or network, with --allow-local; use https"));
        }
    }
    Ok(())
}

/// A URL as it may be shown: without any password it carried.
fn redacted(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_password(None);
    let _ = shown.set_username("");
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_out_of_reach() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for (addr, local_ok) in [
            ("127.0.0.1", true),
            ("10.1.2.3", true),
            ("172.16.0.1", true),
            ("192.168.1.1", true),
            ("100.64.0.1", true),
            ("::1", true),
            ("fd12::1", true),
            ("::ffff:127.0.0.1", true),
            ("169.254.169.254", false),
            ("fe80::1", false),
            ("fd00:ec2::254", false),
            ("0.0.0.0", false),
            ("255.255.255.255", false),
            ("224.0.0.1", false),
            ("::", false),
            // IPv6 forms that carry an IPv4 address are judged as that address.
            ("64:ff9b::a9fe:a9fe", false),
            ("64:ff9b:1::a9fe:a9fe", false),
            ("::a9fe:a9fe", false),
            ("::ffff:0:a9fe:a9fe", false),
            ("2002:a9fe:a9fe::1", false),
            ("64:ff9b::7f00:1", true),
            ("2002:0a00:0001::1", true),
            ("fec0::1", true),
            // Known metadata addresses outside 169.254/16, and reserved ranges.
            ("100.100.100.200", false),
            ("168.63.129.16", false),
            ("240.0.0.1", false),
            ("198.18.0.1", false),
            ("192.0.0.8", false),
        ] {
            assert!(blocked(ip(addr), false).is_some(), "{addr} without --allow-local");
            assert_eq!(blocked(ip(addr), true).is_none(), local_ok, "{addr} with --allow-local");
        }
        for public in ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"] {
            assert_eq!(blocked(ip(public), false), None, "{public}");
        }
    }

    #[test]
    fn catalog_links_are_read_from_headers_and_static_tags_only() {
        assert_eq!(
            link_header(
                r#"</x.css>; rel="stylesheet", </.well-known/ai-catalog.json>; rel="ai-catalog"; type="application/ai-catalog+json""#
            ),
            Some("/.well-known/ai-catalog.json".into())
        );
        assert_eq!(link_header(r#"</a>; rel="next""#), None);
        let page = r#"<html><head><LINK href='/cat.json' REL="alternate ai-catalog"><link rel=icon href=/i.png></head>
            <script>document.write('<link rel="ai-catalog" href="/evil.json">')</script></html>"#;
        assert_eq!(link_tag(page), Some("/cat.json".into()));
        assert_eq!(link_tag("<p>no link</p><link rel=stylesheet href=a.css>"), None);
        assert_eq!(link_tag("<link rel=ai-catalog href=/c.json"), Some("/c.json".into()));
        // Links a script would write, in comments, or in other raw text are not links.
        for page in [
            r#"<script>var l='<link rel="ai-catalog" href="/c">'</script>"#,
            r#"<!-- <link rel="ai-catalog" href="/c"> -->"#,
            r#"<textarea><link rel="ai-catalog" href="/c"></textarea>"#,
            r#"<link-preview rel="ai-catalog" href="/c">"#,
        ] {
            assert_eq!(link_tag(page), None, "{page}");
        }
        assert_eq!(link_tag(r#"<script src=x></script><link / rel="ai-catalog" href="/c">"#), Some("/c".into()));
        assert_eq!(link_header(r#"</c>; rel = "ai-catalog""#), Some("/c".into()));
    }

    #[test]
    fn inputs_become_start_urls() {
        let s = |t: &str, local: bool| start_url(t, local).map(|u| u.to_string()).map_err(|e| e.to_string());
        assert_eq!(s("apps.example.com", false), Ok("https://apps.example.com/.well-known/ai-catalog.json".into()));
        assert_eq!(s("127.0.0.1:8090", true), Ok("http://127.0.0.1:8090/.well-known/ai-catalog.json".into()));
        assert_eq!(s("localhost:8090", true), Ok("http://localhost:8090/.well-known/ai-catalog.json".into()));
        // A public name stays on https even when local apps are allowed.
        assert_eq!(s("apps.example.com", true), Ok("https://apps.example.com/.well-known/ai-catalog.json".into()));
        assert_eq!(s("https://apps.example.com/kanban", false), Ok("https://apps.example.com/kanban".into()));
        assert!(s("not a host", false).is_err());
        assert!(s("C:\\apps", false).is_err());
    }

    #[test]
    fn a_catalog_lists_each_card_once() {
        let base = Url::parse("https://x.example/.well-known/ai-catalog.json").unwrap();
        let entry =
            |url: &str| serde_json::json!({"type": "application/mcp-server-card+json", "url": url, "displayName": "K"});
        let catalog = serde_json::json!({"entries": [entry("/card"), entry("https://x.example/card"), {"type": "other", "url": "/o"}]});
        assert_eq!(listed(&base, &catalog), [Listed { url: "https://x.example/card".into(), name: "K".into() }]);
    }

    #[test]
    fn a_card_names_the_app_by_its_mcp_remote() {
        let card_url = Url::parse("https://apps.example.com/kanban/mcp/server-card").unwrap();
        let card = serde_json::json!({"title": "Kanban", "remotes": [
            {"type": "sse", "url": "https://old.example.com/sse"},
            {"type": "streamable-http", "url": "https://apps.example.com/kanban/mcp"}]});
        let f = found(card_url.clone(), card, false).unwrap();
        assert_eq!((f.base.as_str(), f.title.as_str()), ("https://apps.example.com/kanban", "Kanban"));
        let with_password =
            serde_json::json!({"remotes": [{"type": "streamable-http", "url": "https://u:p@apps.example.com/mcp"}]});
        assert!(matches!(found(card_url.clone(), with_password, false), Err(DiscoveryError::NoRemote { .. })));
        let http_only =
            serde_json::json!({"remotes": [{"type": "streamable-http", "url": "http://apps.example.com/mcp"}]});
        assert!(matches!(found(card_url, http_only, false), Err(DiscoveryError::NoRemote { .. })));
    }
}
