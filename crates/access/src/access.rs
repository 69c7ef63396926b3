//! Who may do what: the two checks of the contract, decided from what the
//! transport observed (host, origin, token), never from the transport itself.
//!
//! 1. `Host` must be loopback or listed in `allowed_hosts` (DNS rebinding).
//! 2. May you write? Decided by `Origin`: the app's own loopback origin (or an
//!    allowed one) needs nothing; no Origin (a program) needs the agent token;
//!    any other origin is refused, for reads too, since a page on another site
//!    must not read a local app either.

use crate::caller::{Caller, CallerKind};
use crate::context::Context;
use a2app_definition::Error;
use protocol::grant::Scope;

/// What a transport observed about a request.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    /// The `Host` header, port included.
    pub host: Option<String>,
    pub origin: Option<String>,
    /// The agent token as presented (`X-LUI-Token`, `X-A2App-Token`).
    pub token: Option<String>,
    /// The `Authorization` header, `Bearer ` stripped: the agent token (what MCP
    /// hosts send) or, in a multi-user app, a user's token.
    pub authorization: Option<String>,
    /// The self-asserted agent name (`X-LUI-Agent`, `X-A2App-Agent`).
    pub agent: Option<String>,
    /// `Sec-Fetch-Site`, which browsers send on every request: a `no-cors`
    /// GET from another site carries no Origin, but says `cross-site` here.
    pub fetch_site: Option<String>,
    /// The port the server listens on, to recognize its own origin.
    pub port: u16,
    /// The resource the request addresses when it is not the whole app
    /// (`<base>/mcp` for MCP): a token bound to one resource works there only.
    pub resource: Option<String>,
    /// The headers and query filters and rules may read, handed on to the caller.
    pub request: Option<std::sync::Arc<crate::caller::RequestParts>>,
}

pub use crate::caller::Intent;

/// Decides whether the request may proceed, and as whom, within the caller's
/// rate limit. In a multi-user app a user's token in `Authorization` makes the
/// caller act as that user (check 2 of the contract), on top of check 1.
pub async fn authorize(app: &Context, creds: &Credentials, intent: Intent) -> Result<Caller, Error> {
    // A grant's access token: the same Host and Origin checks as any request
    // (a read's, which never needs the agent token), then the grant decides.
    if let Some(token) = creds.authorization.as_deref().filter(|t| t.starts_with(protocol::grant::TOKEN_PREFIX)) {
        identify(app, creds, Intent::Read)?;
        let mut caller = crate::grants::authenticate(app, token).await?;
        caller.request = creds.request.clone();
        let audience = caller.grant.as_ref().and_then(|g| g.audience.as_deref());
        if let Some(audience) = audience.filter(|a| Some(*a) != creds.resource.as_deref()) {
            return Err(Error::Unauthorized(format!(
                "this token was issued for {audience} only (RFC 8707); it is not valid here"
            )));
        }
        app.limiter.take(&caller, intent, app.clock.now()).map_err(Error::RateLimited)?;
        return Ok(caller);
    }
    let mut caller = identify(app, creds, intent)?;
    caller.request = creds.request.clone();
    let multi = app.definition.config.auth_mode == a2app_definition::AuthMode::MultiUser;
    // A credential that is there is never read as absent: in a single-user
    // app `Authorization` holds the agent token or nothing of the app's.
    if !multi
        && creds.authorization.as_deref().is_some_and(|t| !constant_time_eq(t.as_bytes(), app.agent_token.as_bytes()))
    {
        return Err(Error::Unauthorized(
            "the Authorization header holds no credential of this app: send the agent token, a grant's token, or none"
                .into(),
        ));
    }
    if let Some(token) =
        creds.authorization.as_deref().filter(|t| multi && !constant_time_eq(t.as_bytes(), app.agent_token.as_bytes()))
    {
        caller.user = Some(crate::users::authenticate(app, token).await?);
    }
    app.limiter.take(&caller, intent, app.clock.now()).map_err(Error::RateLimited)?;
    Ok(caller)
}

fn identify(app: &Context, creds: &Credentials, intent: Intent) -> Result<Caller, Error> {
    let http = &app.definition.config.http;
    let host = creds.host.as_deref().unwrap_or("");
    let host_name = strip_port(host).to_ascii_lowercase();
    if !is_loopback_name(&host_name) && !http.allowed_hosts.iter().any(|h| h == &host_name) {
        return Err(Error::ForbiddenHost(host_name));
    }
    let agent = agent_name(creds.agent.as_deref())?;
    let is_agent_token = |t: &str| constant_time_eq(t.as_bytes(), app.agent_token.as_bytes());
    let token_ok = creds.token.as_deref().is_some_and(is_agent_token)
        || (creds.token.is_none() && creds.authorization.as_deref().is_some_and(is_agent_token));
    if let Some(origin) = creds.origin.as_deref().filter(|o| !o.is_empty()) {
        let own = is_own_origin(app, origin, host, creds.port)
            || http.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin));
        if !own {
            return Err(Error::ForbiddenOrigin(origin.to_owned()));
        }
        let kind = if token_ok { CallerKind::Agent } else { CallerKind::OwnUi };
        return Ok(Caller { kind, agent, user: None, grant: None, request: None });
    }
    if creds.fetch_site.as_deref() == Some("cross-site") {
        return Err(Error::ForbiddenOrigin("a page on another site".into()));
    }
    if token_ok {
        return Ok(Caller { kind: CallerKind::Agent, agent, user: None, grant: None, request: None });
    }
    if creds.token.is_some() {
        return Err(Error::Unauthorized("the agent token does not match this app's .agent-token".into()));
    }
    match intent {
        Intent::Read => Ok(Caller { kind: CallerKind::Anonymous, agent, user: None, grant: None, request: None }),
        Intent::Write => Err(Error::Unauthorized(
            "writes from a program need the agent token in X-LUI-Token (it is in the app's .agent-token file)".into(),
        )),
    }
}

/// The self-asserted agent name, as receipts and the agent log will name the
/// caller: a blank one is no name; one too long or holding characters a
/// person could not read is refused, never cut or passed on as it came.
fn agent_name(name: Option<&str>) -> Result<Option<String>, Error> {
    let max = crate::grants::MAX_AGENT_CHARS;
    match name {
        None => Ok(None),
        Some(n) if n.trim().is_empty() => Ok(None),
        Some(n) if n.chars().count() <= max && protocol::text::is_plain(n) => Ok(Some(n.to_owned())),
        Some(_) => Err(Error::InvalidQuery(format!(
            "the agent's name (X-LUI-Agent) is 1 to {max} characters of plain text, no control or hidden characters"
        ))),
    }
}

/// Whether a browser origin may call the app: its own loopback page, or one
/// listed in `[http] allowed_origins`.
pub fn origin_allowed(app: &Context, origin: &str, host: &str, port: u16) -> bool {
    is_own_origin(app, origin, host, port)
        || app.definition.config.http.allowed_origins.iter().any(|o| o.eq_ignore_ascii_case(origin))
}

/// The URL this app is reached at through `host` (the `Host` header): what
/// OAuth names as issuer and resource. A loopback host is served over plain
/// HTTP; a deployed one (`[http] allowed_hosts`) stands behind TLS, which the
/// MCP authorization spec requires of every endpoint. Any other host is
/// refused, as on every route.
pub fn base_url(app: &Context, host: &str) -> Result<String, Error> {
    let name = strip_port(host).to_ascii_lowercase();
    let valid = !host.is_empty() && host.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b));
    if valid && is_loopback_name(&name) {
        return Ok(format!("http://{}", host.to_ascii_lowercase()));
    }
    if valid && app.definition.config.http.allowed_hosts.iter().any(|h| h == &name) {
        return Ok(format!("https://{}", host.to_ascii_lowercase()));
    }
    Err(Error::ForbiddenHost(name))
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
}

fn is_loopback_name(host: &str) -> bool {
    host == "localhost"
        || host == "::1"
        || host.ends_with(".localhost")
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// The app's own page. On loopback: a loopback origin on the port the app
/// listens on (`http://localhost:PORT`, `http://127.0.0.1:PORT`,
/// `http://[::1]:PORT`), as the contract has it. Through a deployed host
/// name: that name's own origin (`https://<host>`), never a loopback one,
/// which any program could send from afar.
fn is_own_origin(app: &Context, origin: &str, host: &str, port: u16) -> bool {
    if is_loopback_name(&strip_port(host).to_ascii_lowercase()) {
        return loopback_origin(origin, port);
    }
    base_url(app, host).is_ok_and(|own| own.eq_ignore_ascii_case(origin))
}

fn loopback_origin(origin: &str, port: u16) -> bool {
    let Some(rest) = origin.strip_prefix("http://") else { return false };
    let Some((host, p)) = rest.rsplit_once(':') else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    p.parse::<u16>().is_ok_and(|p| p == port) && is_loopback_name(&host.to_ascii_lowercase())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// What `whoami` answers for an established caller.
pub fn whoami(app: &Context, caller: &Caller) -> protocol::identity::WhoAmI {
    let write = !matches!(caller.kind, CallerKind::Anonymous);
    let multi = app.definition.config.auth_mode == a2app_definition::AuthMode::MultiUser;
    let user = caller.user.as_ref().map(|u| u.id.clone());
    let hint = (!write).then(|| {
        "send the agent token in X-LUI-Token (the app's .agent-token file) to write and run operations".to_owned()
    });
    protocol::identity::WhoAmI {
        kind: caller.label(),
        agent: caller.agent.clone(),
        user,
        scopes: caller.grant.as_ref().map(|g| g.scopes.iter().map(ToString::to_string).collect()),
        app: app.definition.config.id.clone(),
        auth_mode: if multi { "multi-user".into() } else { "single-user".into() },
        may: protocol::identity::Permissions {
            read: caller
                .grant
                .as_ref()
                .is_none_or(|g| g.scopes.iter().any(|s| matches!(s, Scope::Read(_) | Scope::Write(_)))),
            write: write && caller.grant.as_ref().is_none_or(|g| g.scopes.iter().any(|s| matches!(s, Scope::Write(_)))),
            operations: write
                && caller.grant.as_ref().is_none_or(|g| g.scopes.iter().any(|s| matches!(s, Scope::Operation(_)))),
        },
        hint,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_loopback_hosts_and_own_origins() {
        for h in ["localhost:8090", "127.0.0.1:8090", "[::1]:8090", "127.0.0.2", "app.localhost:1"] {
            assert!(is_loopback_name(&strip_port(h).to_ascii_lowercase()), "{h}");
        }
        for h in ["example.com", "10.0.0.1:8090", "localhost.evil.com"] {
            assert!(!is_loopback_name(strip_port(h)), "{h}");
        }
        assert!(loopback_origin("http://localhost:8090", 8090));
        assert!(loopback_origin("http://[::1]:8090", 8090));
        assert!(!loopback_origin("http://localhost:9999", 8090));
        assert!(!loopback_origin("https://evil.example", 8090));
        assert!(!loopback_origin("null", 8090));
    }
}
