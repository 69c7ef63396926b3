//! `app.toml`: the app's identity and settings.

use crate::problem::{Problems, join};
use toml::{Table, Value};

pub const FILE: &str = "app.toml";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    SingleUser,
    MultiUser,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AppConfig {
    /// `app.id`: stable across ports and restarts; clients pin it.
    pub id: String,
    pub name: String,
    pub description: String,
    pub auth_mode: AuthMode,
    /// IANA zone the app lives in (schedules, `serverTzOffsetMinutes`).
    pub timezone: String,
    pub http: HttpConfig,
    pub limits: Limits,
    /// The app's own backend process, which `http` operations call.
    pub backend: Option<BackendConfig>,
    pub mcp: McpConfig,
    pub discovery: DiscoveryConfig,
    /// Who consents to each call of a destructive operation by an agent
    /// holding a grant: its host (the default) or a person of the app.
    pub destructive_consent: DestructiveConsent,
}

/// `destructive_consent`: who says yes to one call of a destructive
/// operation that an agent holding a grant makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DestructiveConsent {
    /// `"host"`: the approval key goes back to the caller, whose host asks its
    /// person and repeats the call with it (the source documents' way).
    #[default]
    Host,
    /// `"person"`: the key works only once a person of the app approved that
    /// very call, on the app's page or with `agent-app approvals`; the agent's
    /// own credentials cannot.
    Person,
}

/// `[mcp]`: how the app presents itself as an MCP server.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct McpConfig {
    pub tools: ToolSurface,
    /// `sign_in = true|false`: whether an MCP request without a credential is
    /// answered 401 with the OAuth challenge (RFC 9728) rather than served as
    /// an anonymous reader. Unset, it follows deployed mode: on when
    /// `[http] allowed_hosts` names a host, off for a loopback-only app.
    pub sign_in: Option<bool>,
    /// `local_client_documents = true`: an OAuth client id naming a metadata
    /// document on this machine or its network (plain HTTP allowed there) is
    /// fetched; off, only public HTTPS ones are. For developing a client.
    pub local_client_documents: bool,
}

impl AppConfig {
    /// Whether `/mcp` answers a request without a credential with the OAuth
    /// challenge: as `[mcp] sign_in` says, else in deployed mode.
    pub fn mcp_sign_in(&self) -> bool {
        self.mcp.sign_in.unwrap_or(!self.http.allowed_hosts.is_empty())
    }
}

/// Which tools `tools/list` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolSurface {
    /// A fixed set of generic tools whose size does not grow with the app.
    #[default]
    Compact,
    /// The compact set plus one typed tool per operation.
    Full,
}

/// `[discovery]`: what the AI Catalog and the MCP Server Card publish.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DiscoveryConfig {
    /// The card's reverse-DNS `name` (`com.example/kanban`); derived when absent.
    pub name: Option<String>,
    /// Ask indexers not to list the app (`X-Robots-Tag: noindex`).
    pub noindex: bool,
    /// The card's `icons`, as written (`src`, optional `mimeType`, `sizes`).
    pub icons: Vec<serde_json::Value>,
    /// `_meta["openbot/presentation"]`, validated against the spec's limits.
    pub presentation: Option<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BackendConfig {
    /// Base URL, e.g. `http://127.0.0.1:9000`; routes are appended to it.
    pub url: String,
}

/// `[limits]`: per-caller rate limits, per minute; 0 means unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub writes_per_minute: u32,
    pub reads_per_minute: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { writes_per_minute: 3000, reads_per_minute: 0 }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct HttpConfig {
    /// Host names answered besides loopback (deployed mode).
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed to write besides the app's own.
    pub allowed_origins: Vec<String>,
    /// Addresses of reverse proxies in front of the app, whose
    /// `X-Forwarded-For` is believed about where a request came from (for
    /// the per-source bound on pending grants). Empty: only the connecting
    /// address counts, so behind a proxy every ask shares one source.
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

/// Parses `app.toml`, reporting every problem.
pub fn parse(text: &str) -> Result<AppConfig, Problems> {
    let mut problems = Problems::new(FILE);
    let table: Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            problems.push("$", format!("not valid TOML: {}", e.message()));
            return Err(problems);
        }
    };
    let mut config = AppConfig {
        id: String::new(),
        name: String::new(),
        description: String::new(),
        auth_mode: AuthMode::SingleUser,
        timezone: "UTC".into(),
        http: HttpConfig::default(),
        limits: Limits::default(),
        mcp: McpConfig::default(),
        discovery: DiscoveryConfig::default(),
        backend: None,
        destructive_consent: DestructiveConsent::Host,
    };
    let mut saw_id = false;
    for (key, value) in &table {
        let path = join("$", key);
        match key.as_str() {
            "id" => {
                saw_id = true;
                match value.as_str() {
                    Some(id) if is_app_id(id) => config.id = id.to_owned(),
                    _ => problems.push(&path, "id must be 1-64 characters of a-z, 0-9, '-', '_' or '.'"),
                }
            }
            "name" => match value.as_str() {
                Some(n) if !n.trim().is_empty() => config.name = n.to_owned(),
                _ => problems.push(&path, "name must be a non-empty string"),
            },
            "description" => match value.as_str() {
                Some(d) => config.description = d.to_owned(),
                None => problems.push(&path, "description must be a string"),
            },
            "auth_mode" => match value.as_str() {
                Some("single-user") => config.auth_mode = AuthMode::SingleUser,
                Some("multi-user") => config.auth_mode = AuthMode::MultiUser,
                _ => problems.push(&path, "auth_mode must be \"single-user\" or \"multi-user\""),
            },
            "timezone" => match value.as_str() {
                Some(tz) if jiff::tz::TimeZone::get(tz).is_ok() => config.timezone = tz.to_owned(),
                _ => problems
                    .push(&path, format!("unknown time zone {value} (an IANA name like \"Europe/Berlin\" or \"UTC\")")),
            },
            "http" => config.http = http(value, &path, &mut problems),
            "limits" => config.limits = limits(value, &path, &mut problems),
            "backend" => config.backend = backend(value, &path, &mut problems),
            "mcp" => config.mcp = mcp(value, &path, &mut problems),
            "discovery" => config.discovery = super::presentation::discovery(value, &path, &mut problems),
            "destructive_consent" => match value.as_str() {
                Some("host") => config.destructive_consent = DestructiveConsent::Host,
                Some("person") => config.destructive_consent = DestructiveConsent::Person,
                _ => problems.push(&path, "destructive_consent must be \"host\" or \"person\""),
            },
            other => problems.push(
                &path,
                format!(
                    "unknown key \"{other}\" (allowed: id, name, description, auth_mode, timezone, http, limits, backend, mcp, discovery, destructive_consent)"
                ),
            ),
        }
    }
    if !saw_id {
        problems.push("$", "missing \"id\": the app's stable identity");
    }
    if config.name.is_empty() && !table.contains_key("name") {
        problems.push("$", "missing \"name\"");
    }
    if problems.is_empty() { Ok(config) } else { Err(problems) }
}

fn http(value: &Value, path: &str, problems: &mut Problems) -> HttpConfig {
    let mut http = HttpConfig::default();
    let Some(table) = value.as_table() else {
        problems.push(path, "http must be a table");
        return http;
    };
    for (key, value) in table {
        let kpath = join(path, key);
        let list =
            || -> Option<Vec<String>> { value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect() };
        match key.as_str() {
            "allowed_hosts" => match list() {
                Some(hosts) => http.allowed_hosts = hosts.into_iter().map(|h| h.to_ascii_lowercase()).collect(),
                None => problems.push(&kpath, "allowed_hosts must be a list of host names"),
            },
            "allowed_origins" => match list() {
                Some(origins) => http.allowed_origins = origins,
                None => {
                    problems.push(&kpath, "allowed_origins must be a list of origins like \"https://app.example.com\"")
                }
            },
            "trusted_proxies" => {
                let addresses = list().map(|items| items.iter().map(|a| a.parse().ok()).collect::<Option<Vec<_>>>());
                match addresses {
                    Some(Some(addresses)) => http.trusted_proxies = addresses,
                    _ => problems.push(&kpath, "trusted_proxies must be a list of IP addresses like \"127.0.0.1\""),
                }
            }
            other => problems.push(
                &kpath,
                format!("unknown key \"{other}\" (allowed: allowed_hosts, allowed_origins, trusted_proxies)"),
            ),
        }
    }
    http
}

fn limits(value: &Value, path: &str, problems: &mut Problems) -> Limits {
    let mut limits = Limits::default();
    let Some(table) = value.as_table() else {
        problems.push(path, "limits must be a table");
        return limits;
    };
    for (key, value) in table {
        let kpath = join(path, key);
        let Some(n) = value.as_integer().and_then(|n| u32::try_from(n).ok()) else {
            problems.push(&kpath, format!("{key} must be a whole number of requests per minute (0 = unlimited)"));
            continue;
        };
        match key.as_str() {
            "writes_per_minute" => limits.writes_per_minute = n,
            "reads_per_minute" => limits.reads_per_minute = n,
            other => {
                problems.push(&kpath, format!("unknown key \"{other}\" (allowed: writes_per_minute, reads_per_minute)"))
            }
        }
    }
    limits
}

fn mcp(value: &Value, path: &str, problems: &mut Problems) -> McpConfig {
    let mut mcp = McpConfig::default();
    let Some(table) = value.as_table() else {
        problems.push(path, "mcp must be a table");
        return mcp;
    };
    for (key, value) in table {
        let kpath = join(path, key);
        match (key.as_str(), value.as_str()) {
            ("tools", Some("compact")) => mcp.tools = ToolSurface::Compact,
            ("tools", Some("full")) => mcp.tools = ToolSurface::Full,
            ("tools", _) => problems.push(&kpath, "tools must be \"compact\" or \"full\""),
            ("sign_in", _) => match value.as_bool() {
                Some(on) => mcp.sign_in = Some(on),
                None => problems.push(&kpath, "sign_in must be true or false"),
            },
            ("local_client_documents", _) => match value.as_bool() {
                Some(on) => mcp.local_client_documents = on,
                None => problems.push(&kpath, "local_client_documents must be true or false"),
            },
            (other, _) => problems
                .push(&kpath, format!("unknown key \"{other}\" (allowed: tools, sign_in, local_client_documents)")),
        }
    }
    mcp
}

fn backend(value: &Value, path: &str, problems: &mut Problems) -> Option<BackendConfig> {
    let Some(table) = value.as_table() else {
        problems.push(path, "backend must be a table with a url");
        return None;
    };
    let mut url = None;
    for (key, value) in table {
        let kpath = join(path, key);
        match key.as_str() {
            "url" => match value.as_str() {
                Some(u) if is_base_url(u) => url = Some(u.trim_end_matches('/').to_owned()),
                _ => problems.push(
                    &kpath,
                    "url must be an http:// base URL of the app's own backend process, like \"http://127.0.0.1:9000\" (no query)",
                ),
            },
            other => problems.push(&kpath, format!("unknown key \"{other}\" (allowed: url)")),
        }
    }
    if url.is_none() && !table.contains_key("url") {
        problems.push(path, "missing \"url\": where the app's backend listens");
    }
    url.map(|url| BackendConfig { url })
}

fn is_base_url(url: &str) -> bool {
    // Plain http only: the backend is the app's own process beside it, and the
    // server's client is built without TLS.
    let rest = url.strip_prefix("http://");
    rest.is_some_and(|r| !r.is_empty() && !r.starts_with('/') && !r.contains(['?', '#', ' ', '@']))
}

fn is_app_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_kanban_config() {
        let c = parse(include_str!("../../../examples/kanban/app.toml")).unwrap();
        assert_eq!(c.id, "kanban");
        assert_eq!(c.name, "Kanban Board");
        assert_eq!(c.auth_mode, AuthMode::SingleUser);
    }

    #[test]
    fn reports_every_problem() {
        let err = parse(
            "id = \"Bad Id\"\nauth_mode = \"both\"\ntimezone = \"Mars/Base\"\ncolor = 1\n[http]\nallowed_hostz = []\n",
        )
        .unwrap_err();
        let got: Vec<String> = err.list.iter().map(|p| p.path.clone()).collect();
        assert_eq!(got, ["$.id", "$.auth_mode", "$.timezone", "$.color", "$.http.allowed_hostz", "$"]);
    }

    #[test]
    fn reads_the_mcp_tool_surface() {
        let base = "id = \"t\"\nname = \"T\"\n";
        assert_eq!(parse(base).unwrap().mcp.tools, ToolSurface::Compact);
        assert_eq!(parse(&format!("{base}[mcp]\ntools = \"full\"\n")).unwrap().mcp.tools, ToolSurface::Full);
        let err = parse(&format!("{base}[mcp]\ntools = \"all\"\nlist = 1\n")).unwrap_err();
        let got: Vec<(String, String)> = err.list.iter().map(|p| (p.path.clone(), p.message.clone())).collect();
        assert_eq!(
            got,
            [
                ("$.mcp.tools".to_owned(), "tools must be \"compact\" or \"full\"".to_owned()),
                (
                    "$.mcp.list".to_owned(),
                    "unknown key \"list\" (allowed: tools, sign_in, local_client_documents)".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn mcp_sign_in_follows_deployed_mode_unless_set() {
        let base = "id = \"t\"\nname = \"T\"\n";
        let deployed = format!("{base}[http]\nallowed_hosts = [\"kanban.example.com\"]\n");
        assert!(!parse(base).unwrap().mcp_sign_in());
        assert!(parse(&deployed).unwrap().mcp_sign_in());
        assert!(parse(&format!("{base}[mcp]\nsign_in = true\n")).unwrap().mcp_sign_in());
        assert!(!parse(&format!("{deployed}[mcp]\nsign_in = false\n")).unwrap().mcp_sign_in());
        let err = parse(&format!("{base}[mcp]\nsign_in = \"yes\"\n")).unwrap_err();
        assert_eq!(err.list[0].message, "sign_in must be true or false");
    }

    #[test]
    fn reads_the_backend_url() {
        let c = parse("id = \"a\"\nname = \"A\"\n[backend]\nurl = \"http://127.0.0.1:9000/\"\n").unwrap();
        assert_eq!(c.backend, Some(BackendConfig { url: "http://127.0.0.1:9000".into() }));
        for bad in ["https://x", "ftp://x", "http://", "http://x?y=1", "127.0.0.1:9000"] {
            let err = parse(&format!("id = \"a\"\nname = \"A\"\n[backend]\nurl = \"{bad}\"\n")).unwrap_err();
            assert_eq!(err.list[0].path, "$.backend.url", "{bad}");
        }
        let err = parse("id = \"a\"\nname = \"A\"\n[backend]\n").unwrap_err();
        assert_eq!(err.list[0].path, "$.backend");
    }
}
