//! MCP's authorization for deployed apps (DESIGN §5): the app is its own
//! OAuth 2.1 authorization server, and its MCP endpoint the protected
//! resource. An OAuth sign-in is a grant (`grants`) asked by a client
//! instead of a key:
//!
//! 1. An MCP host finds this server in the metadata documents (RFC 9728 for
//!    the resource, RFC 8414 for the server) and registers itself (RFC 7591:
//!    a public client, no secret, with its redirect URIs).
//! 2. It sends the person's browser to `/oauth/authorize` with a PKCE S256
//!    challenge. That makes a pending grant for the client, with the scopes
//!    asked (describe's `data:<entity>:read|write` and `op:<name>`), and the
//!    browser lands on the app's consent screen.
//! 3. The person approves (all or fewer scopes) or denies there, exactly as
//!    for a key's grant. The browser goes back to the client with a one-time
//!    code valid [`CODE_SECONDS`] (or `error=access_denied`), and `iss`
//!    (RFC 9207).
//! 4. The client trades the code and its PKCE verifier at `/oauth/token` for
//!    an access token bound to `<base>/mcp` (RFC 8707) and a refresh token.
//!    Refresh tokens rotate. A refresh token or a code presented twice ends
//!    the grant: two parties hold it, and one of them stole it.
//! 5. The client signs out at `/oauth/revoke` (RFC 7009), which ends the grant.
//!
//! Revoking the grant ends every token at once. Only hashes are stored.

use crate::access::Intent;
use crate::caller::Caller;
use crate::context::Context;
use crate::grants;
use a2app_definition::Error;
use a2app_definition::secret::digest;
use a2app_store::blocking;
use a2app_store::{AuthRequest, CodeUse, GrantConflict, GrantRoom, OAuthClient, OAuthTokens};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use protocol::grant::{Grant, GrantClient, GrantStatus, Scope, TOKEN_PREFIX};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// How long an authorization code may wait to be traded.
pub const CODE_SECONDS: i64 = 60;
/// How long an OAuth access token works; the client refreshes it.
pub const ACCESS_SECONDS: i64 = 60 * 60;
/// How long a refresh token works unless rotated.
pub const REFRESH_SECONDS: i64 = 30 * 24 * 60 * 60;
/// Registered clients kept (registration is open; see `register`).
pub const MAX_CLIENTS: u64 = 1000;
pub const MAX_REDIRECT_URIS: usize = 10;
const MAX_URI_CHARS: usize = 2000;
const MAX_STATE_CHARS: usize = 1000;
const CODE_PREFIX: &str = "a2c_";
const REFRESH_PREFIX: &str = "a2r_";

/// An OAuth error answer: `{"error", "error_description"}` with its status.
#[derive(Debug, Clone, PartialEq)]
pub struct OAuthError {
    pub status: u16,
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    fn new(error: &'static str, description: impl Into<String>) -> OAuthError {
        OAuthError { status: 400, error, description: description.into() }
    }

    pub fn body(&self) -> Value {
        json!({ "error": self.error, "error_description": self.description })
    }
}

impl From<Error> for OAuthError {
    fn from(e: Error) -> OAuthError {
        match e {
            Error::ForbiddenHost(host) => OAuthError {
                status: 403,
                error: "invalid_request",
                description: format!("this app does not answer for the host {host}"),
            },
            other => {
                tracing::error!(error = %other, "oauth step failed");
                OAuthError { status: 500, error: "server_error", description: "internal error".into() }
            }
        }
    }
}

/// The MCP endpoint's URL: the resource tokens are bound to.
pub fn resource(base: &str) -> String {
    format!("{base}/mcp")
}

/// Where the protected-resource metadata of `/mcp` is (path-inserted form).
pub fn resource_metadata_url(base: &str) -> String {
    format!("{base}/.well-known/oauth-protected-resource/mcp")
}

/// Every scope this app offers, in describe's terms: reading and writing
/// each entity, running each operation. Accounts are not writable by a
/// grant in a multi-user app, so that scope is not offered there.
pub fn scopes(app: &Context) -> Vec<String> {
    let multi = app.definition.config.auth_mode == a2app_definition::AuthMode::MultiUser;
    let mut out = BTreeSet::new();
    for name in app.definition.schema.entities.keys() {
        out.insert(Scope::Read(name.clone()));
        if !(multi && name == a2app_definition::users::ENTITY) {
            out.insert(Scope::Write(name.clone()));
        }
    }
    out.extend(app.definition.operations.iter().map(|op| Scope::Operation(op.name.clone())));
    // The order a grant keeps its scopes in: reads, writes, operations.
    out.iter().map(Scope::to_string).collect()
}

/// RFC 9728 protected-resource metadata for `/mcp`.
pub fn protected_resource(app: &Context, base: &str) -> Value {
    json!({
        "resource": resource(base),
        "authorization_servers": [base],
        "scopes_supported": scopes(app),
        "bearer_methods_supported": ["header"],
        "resource_name": app.definition.config.name,
    })
}

/// RFC 8414 authorization-server metadata.
pub fn authorization_server(app: &Context, base: &str) -> Value {
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/oauth/authorize"),
        "token_endpoint": format!("{base}/oauth/token"),
        "registration_endpoint": format!("{base}/oauth/register"),
        "revocation_endpoint": format!("{base}/oauth/revoke"),
        "revocation_endpoint_auth_methods_supported": ["none"],
        "scopes_supported": scopes(app),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "token_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": true,
    })
}

/// Dynamic client registration (RFC 7591) of a public client.
pub async fn register(app: &Context, body: &Value) -> Result<Value, OAuthError> {
    let (name, uris) = metadata(body, "invalid_client_metadata")?;
    admit(app, "registrations")?;
    let now = app.clock.now();
    let client = OAuthClient {
        id: format!("client_{}", a2app_definition::id::generate()),
        name,
        redirect_uris: uris,
        used: a2app_definition::datetime::format(now),
    };
    store_client(app, &client).await?;
    Ok(json!({
        "client_id": client.id,
        "client_id_issued_at": now.as_second(),
        "client_name": client.name,
        "redirect_uris": client.redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }))
}

async fn store_client(app: &Context, client: &OAuthClient) -> Result<(), OAuthError> {
    let store = Arc::clone(&app.store);
    let stored = client.clone();
    blocking(move || Ok(store.register_client(&stored, MAX_CLIENTS)?)).await?;
    Ok(())
}

/// Whether a client id names a Client ID Metadata Document: a URL the
/// client publishes its metadata at, fetched instead of registered.
pub fn is_document_id(client_id: &str) -> bool {
    client_id.starts_with("https://") || client_id.starts_with("http://")
}

/// The client a metadata document describes: it must name itself by the
/// URL it was read from, and hold what a registration would.
fn documented(id: &str, document: &Value) -> Result<OAuthClient, OAuthError> {
    if document.get("client_id").and_then(Value::as_str) != Some(id) {
        return Err(OAuthError::new(
            "invalid_client",
            "the client's metadata document does not name itself: its client_id must be the URL it is served at",
        ));
    }
    let (name, uris) = metadata(document, "invalid_client")?;
    Ok(OAuthClient { id: id.to_owned(), name, redirect_uris: uris, used: String::new() })
}

/// A client's name and redirect URIs from its metadata (a registration or a
/// metadata document), or what is wrong with it, as `error`.
fn metadata(body: &Value, error: &'static str) -> Result<(String, Vec<String>), OAuthError> {
    let invalid = |d: String| OAuthError::new(error, d);
    let Some(fields) = body.as_object() else {
        return Err(invalid("the client metadata is a JSON object".into()));
    };
    let uris: Vec<String> = match fields.get("redirect_uris") {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_REDIRECT_URIS => {
            let uris: Vec<String> = items.iter().filter_map(Value::as_str).map(str::to_owned).collect();
            if uris.len() != items.len() {
                return Err(OAuthError::new("invalid_redirect_uri", "every redirect URI is a string"));
            }
            uris
        }
        _ => {
            return Err(OAuthError::new(
                "invalid_redirect_uri",
                format!("redirect_uris is a list of 1 to {MAX_REDIRECT_URIS} URIs"),
            ));
        }
    };
    if let Some(bad) = uris.iter().find(|u| !redirect_allowed(u)) {
        return Err(OAuthError::new(
            "invalid_redirect_uri",
            format!(
                "{} is not a redirect URI this server accepts: https://…, http://localhost or a loopback address, or an app's own scheme (com.example.app:/…), without a fragment",
                shorten(bad)
            ),
        ));
    }
    let text = |key: &str| fields.get(key).and_then(Value::as_str);
    // A member these are read from must be a text: a number read as absent
    // would register an unnamed client, or take no auth method for one asked.
    for key in ["client_name", "token_endpoint_auth_method"] {
        if fields.get(key).is_some_and(|v| !v.is_string()) {
            return Err(invalid(format!("{key} is a text")));
        }
    }
    if let Some(method) = text("token_endpoint_auth_method").filter(|m| *m != "none") {
        return Err(invalid(format!(
            "token_endpoint_auth_method {} is not supported: clients here are public (\"none\") and prove themselves with PKCE",
            shorten(method)
        )));
    }
    let listed = |key: &str, allowed: &[&str]| -> Result<(), OAuthError> {
        match fields.get(key) {
            None => Ok(()),
            Some(Value::Array(items)) if items.iter().all(|i| i.as_str().is_some_and(|s| allowed.contains(&s))) => {
                Ok(())
            }
            Some(_) => Err(invalid(format!("{key} may hold only {}", allowed.join(", ")))),
        }
    };
    listed("grant_types", &["authorization_code", "refresh_token"])?;
    listed("response_types", &["code"])?;
    let name = match text("client_name").map(str::trim) {
        None | Some("") => "an unnamed MCP client".to_owned(),
        Some(n) if n.chars().count() <= grants::MAX_AGENT_CHARS && protocol::text::is_plain(n) => n.to_owned(),
        Some(_) => {
            return Err(invalid(format!(
                "client_name is 1 to {} plain characters: a person reads it when deciding",
                grants::MAX_AGENT_CHARS
            )));
        }
    };
    Ok((name, uris))
}

/// Admits one registration or sign-in (before anything is read, fetched or
/// stored for it): each stores a row and a sign-in may fetch a document, so
/// both are held to the app's write limit for callers without a credential.
pub fn admit(app: &Context, what: &str) -> Result<(), OAuthError> {
    app.limiter.take(&Caller::anonymous(), Intent::Write, app.clock.now()).map_err(|secs| OAuthError {
        status: 429,
        error: "temporarily_unavailable",
        description: format!("too many {what} at once; try again in {secs} s"),
    })
}

/// What an authorization request asks, checked before anything is read,
/// fetched or stored for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    challenge: String,
    state: Option<String>,
    scopes: Vec<String>,
    audience: String,
}

/// Checks an authorization request's own parameters (PKCE, response type,
/// scopes, resource, state). Every error before the person decided is shown
/// to them, never sent to the redirect URI: registration is open, so
/// redirecting errors would make this server an open redirector (RFC 9700
/// §4.11.2).
pub fn check(app: &Context, base: &str, params: &HashMap<String, String>) -> Result<Asked, OAuthError> {
    let refused = |error: &'static str, description: &str| Err(OAuthError::new(error, description));
    let state = param(params, "state").map(str::to_owned);
    if state.as_ref().is_some_and(|s| s.chars().count() > MAX_STATE_CHARS) {
        return refused("invalid_request", "state is too long");
    }
    if param(params, "response_type") != Some("code") {
        return refused("unsupported_response_type", "only response_type=code is supported");
    }
    let challenge = match (param(params, "code_challenge"), param(params, "code_challenge_method")) {
        (Some(c), Some("S256")) if is_pkce_text(c) && c.len() == 43 => c.to_owned(),
        _ => {
            return refused(
                "invalid_request",
                "PKCE is required: code_challenge (S256, 43 characters) and code_challenge_method=S256",
            );
        }
    };
    let offered = scopes(app);
    let asked: Vec<String> = match param(params, "scope") {
        None => offered.clone(),
        // Scope tokens are separated by spaces (RFC 6749 §3.3), nothing else.
        Some(text) => text.split(' ').filter(|t| !t.is_empty()).map(str::to_owned).collect(),
    };
    if let Some(unknown) = asked.iter().find(|s| !offered.contains(s)) {
        return refused(
            "invalid_scope",
            &format!("{} is not a scope of this app; the metadata lists them", shorten(unknown)),
        );
    }
    if asked.is_empty() || asked.len() > grants::MAX_SCOPES {
        return refused("invalid_scope", &format!("ask for 1 to {} scopes", grants::MAX_SCOPES));
    }
    let audience = resource(base);
    if let Some(target) = param(params, "resource").filter(|r| r.trim_end_matches('/') != audience) {
        return refused(
            "invalid_target",
            &format!("this server issues tokens for {audience} only, not {}", shorten(target)),
        );
    }
    // A grant's order (see `scopes`): every asked scope is an offered one,
    // and every offered one parses; one that did not would be refused, never
    // dropped from what the person is asked to approve.
    let mut parsed = BTreeSet::new();
    for text in &asked {
        match Scope::parse(text) {
            Some(scope) => parsed.insert(scope),
            None => return refused("invalid_scope", &format!("{} is not a scope", shorten(text))),
        };
    }
    let asked = parsed;
    Ok(Asked { challenge, state, scopes: asked.iter().map(Scope::to_string).collect(), audience })
}

/// An authorization request that passed [`check`]: its client and redirect
/// URI, then the pending grant for the consent screen (its id). A client id
/// that is a URL ([`is_document_id`]) comes with its metadata document as
/// the caller fetched it (or why it could not).
pub async fn authorize(
    app: &Context,
    params: &HashMap<String, String>,
    asked: Asked,
    document: Option<Result<Value, String>>,
    source: &str,
) -> Result<String, OAuthError> {
    let client_id = required(params, "client_id")?;
    let client = if is_document_id(client_id) {
        let document = document.unwrap_or_else(|| Err("it was not read".into())).map_err(|why| {
            OAuthError::new("invalid_client", format!("cannot read the client's metadata document: {}", shorten(&why)))
        })?;
        documented(client_id, &document)?
    } else {
        let store = Arc::clone(&app.store);
        let id = client_id.to_owned();
        blocking(move || Ok(store.oauth_client(&id)?)).await?.ok_or_else(|| {
            OAuthError::new("invalid_client", "this client_id is not registered here; register at /oauth/register")
        })?
    };
    let redirect_uri = match param(params, "redirect_uri") {
        Some(uri) if redirect_allowed(uri) && client.redirect_uris.iter().any(|r| redirect_matches(r, uri)) => {
            uri.to_owned()
        }
        Some(uri) => {
            return Err(OAuthError::new(
                "invalid_request",
                format!("redirect_uri {} is not one this client registered", shorten(uri)),
            ));
        }
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        None => {
            return Err(OAuthError::new("invalid_request", "redirect_uri is required: the client registered several"));
        }
    };
    let now = app.clock.now();
    let created = a2app_definition::datetime::format(now);
    // Stored again at each sign-in: a document's client so the token endpoint
    // knows it, and any client's time, as room is made from the longest unused.
    store_client(app, &OAuthClient { used: created.clone(), ..client.clone() }).await?;
    let grant = Grant {
        id: a2app_definition::id::generate(),
        agent: client.name.clone(),
        public_key: String::new(),
        fingerprint: grants::fingerprint(client.id.as_bytes()),
        scopes: asked.scopes,
        status: GrantStatus::Pending,
        acts_for: String::new(),
        created: created.clone(),
        updated: created.clone(),
        expires: a2app_definition::datetime::format(now + jiff::SignedDuration::from_secs(grants::PENDING_SECONDS)),
        client: Some(GrantClient {
            id: client.id.clone(),
            name: client.name.clone(),
            redirect_uri: redirect_uri.clone(),
        }),
        source: source.to_owned(),
    };
    let request = AuthRequest {
        grant_id: grant.id.clone(),
        client_id: client.id.clone(),
        redirect_uri,
        challenge: asked.challenge,
        state: asked.state,
        audience: asked.audience,
    };
    let caller = Caller::anonymous();
    let text = format!("MCP client \"{}\" asked for a grant", grant.agent);
    let audit = grants::receipt(&caller, &grant, &created, text, "ask");
    let store = Arc::clone(&app.store);
    let stored = grant.clone();
    match blocking(move || Ok(store.ask_grant(&stored, grants::LIMITS, &audit, Some(&request))?)).await? {
        GrantRoom::Asked => Ok(grant.id),
        GrantRoom::KeyFull | GrantRoom::SourceFull | GrantRoom::Full => Err(OAuthError {
            status: 429,
            error: "temporarily_unavailable",
            description: "too many sign-ins wait for a person's decision; try again later".into(),
        }),
    }
}

/// After a person decided on `grant`: where to send their browser, for a
/// grant asked through OAuth (`None` for a key's grant). An approval gets
/// a one-time code; a denial `access_denied`.
pub async fn decided(app: &Context, grant: &Grant, base: &str) -> Result<Option<String>, Error> {
    if grant.client.is_none() {
        return Ok(None);
    }
    let store = Arc::clone(&app.store);
    let id = grant.id.clone();
    let Some(request) = blocking(move || Ok(store.auth_request(&id)?)).await? else { return Ok(None) };
    let state = request.state.as_deref();
    if grant.status != GrantStatus::Active {
        let params = [("error", "access_denied"), ("error_description", "the person denied access"), ("iss", base)];
        return Ok(Some(with_query(&request.redirect_uri, &params, state)));
    }
    let code = format!("{CODE_PREFIX}{}", a2app_definition::secret::secret());
    let expires = a2app_definition::datetime::format(app.clock.now() + jiff::SignedDuration::from_secs(CODE_SECONDS));
    let store = Arc::clone(&app.store);
    let (id, hash) = (grant.id.clone(), digest(&code));
    blocking(move || Ok(store.set_auth_code(&id, &hash, &expires)?)).await?;
    Ok(Some(with_query(&request.redirect_uri, &[("code", code.as_str()), ("iss", base)], state)))
}

/// The token endpoint: `authorization_code` (with PKCE) or `refresh_token`.
pub async fn token(app: &Context, params: &HashMap<String, String>) -> Result<Value, OAuthError> {
    let now = app.clock.now();
    let at = a2app_definition::datetime::format(now);
    match param(params, "grant_type") {
        Some("authorization_code") => {
            let (code, client_id, verifier) =
                (required(params, "code")?, required(params, "client_id")?, required(params, "code_verifier")?);
            // Optional: PKCE binds the code to its client's verifier, which is
            // what echoing the redirect URI guarded before PKCE; one that is
            // sent must still be the request's.
            let redirect_uri = param(params, "redirect_uri");
            let store = Arc::clone(&app.store);
            let (hash, when) = (digest(code), at.clone());
            let request = match blocking(move || Ok(store.take_auth_code(&hash, &when)?)).await? {
                CodeUse::Live(request) => request,
                CodeUse::Replayed(grant_id) => {
                    // Two parties hold the code (RFC 6749 §4.1.2): what it
                    // bought ends, for the person to sign in again.
                    end_grant(app, &grant_id, "its authorization code was used twice").await?;
                    return Err(OAuthError::new(
                        "invalid_grant",
                        "this code was used before, so the sign-in it made is revoked; sign in again",
                    ));
                }
                CodeUse::Unknown => {
                    return Err(OAuthError::new("invalid_grant", "the code is unknown, used or expired"));
                }
            };
            if request.client_id != client_id || redirect_uri.is_some_and(|uri| uri != request.redirect_uri) {
                return Err(OAuthError::new("invalid_grant", "the code was issued to another client or redirect_uri"));
            }
            if !(43..=128).contains(&verifier.len()) || !is_pkce_text(verifier) {
                return Err(OAuthError::new(
                    "invalid_request",
                    "code_verifier is 43 to 128 characters of [A-Za-z0-9-._~]",
                ));
            }
            if URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes())) != request.challenge {
                return Err(OAuthError::new("invalid_grant", "code_verifier does not match the code_challenge"));
            }
            check_target(param(params, "resource"), &request.audience)?;
            issue(app, &request.grant_id, &request.audience, None, &at).await
        }
        Some("refresh_token") => {
            let (refresh, client_id) = (required(params, "refresh_token")?, required(params, "client_id")?);
            let hash = digest(refresh);
            let store = Arc::clone(&app.store);
            let (key, when) = (hash.clone(), at.clone());
            let (grant_id, audience) = blocking(move || Ok(store.refresh_grant(&key, &when)?))
                .await?
                .ok_or_else(|| OAuthError::new("invalid_grant", "the refresh token is unknown or expired"))?;
            let grant = grants::get(app, &grant_id).await.map_err(|_| invalid_grant_gone())?;
            if grant.client.as_ref().is_none_or(|c| c.id != client_id) {
                return Err(OAuthError::new("invalid_grant", "the refresh token was issued to another client"));
            }
            // RFC 6749 §6: a scope sent is honoured or refused, never ignored.
            // A token here carries its grant's whole scope, so only that one is.
            if let Some(asked) = param(params, "scope") {
                let asked: BTreeSet<&str> = asked.split(' ').filter(|t| !t.is_empty()).collect();
                let held: BTreeSet<&str> = grant.scopes.iter().map(String::as_str).collect();
                if asked != held {
                    return Err(OAuthError::new(
                        "invalid_scope",
                        "a refresh here carries the grant's whole scope: send none, or exactly the scope granted",
                    ));
                }
            }
            check_target(param(params, "resource"), &audience)?;
            issue(app, &grant_id, &audience, Some(&hash), &at).await
        }
        Some(other) => Err(OAuthError::new(
            "unsupported_grant_type",
            format!("grant_type {} is not supported: authorization_code or refresh_token", shorten(other)),
        )),
        None => Err(OAuthError::new("invalid_request", "grant_type is required")),
    }
}

/// Revokes a grant, visibly (audited, shown to its person), with every
/// token; one ended already (by its person, an earlier replay or a sign-out)
/// stays as it is.
async fn end_grant(app: &Context, grant_id: &str, why: &str) -> Result<(), Error> {
    match grants::end(app, grant_id, why).await {
        Ok(()) | Err(Error::NotFound | Error::Invalid(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Token revocation (RFC 7009): a client signing out revokes its access or
/// its refresh token, expired or not, and the sign-in behind it (the grant,
/// with every token) ends, as if its person revoked it. A token unknown or
/// already revoked needs nothing done and is no error.
pub async fn revoke(app: &Context, params: &HashMap<String, String>) -> Result<(), OAuthError> {
    let token = required(params, "token")?;
    let client_id = required(params, "client_id")?;
    // `token_type_hint` is only a hint (RFC 7009 §2.1): both kinds are looked up.
    let (store, hash) = (Arc::clone(&app.store), digest(token));
    let Some(grant_id) = blocking(move || Ok(store.token_grant(&hash)?)).await? else { return Ok(()) };
    let grant = match grants::get(app, &grant_id).await {
        Ok(grant) => grant,
        Err(Error::NotFound) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    if grant.client.as_ref().is_none_or(|c| c.id != client_id) {
        return Err(OAuthError::new("unauthorized_client", "this token was not issued to this client"));
    }
    Ok(end_grant(app, &grant_id, "its client signed out").await?)
}

/// A request's parameter; one sent empty counts as left out.
fn param<'a>(params: &'a HashMap<String, String>, name: &str) -> Option<&'a str> {
    params.get(name).map(String::as_str).filter(|v| !v.is_empty())
}

/// A parameter the request cannot go without.
fn required<'a>(params: &'a HashMap<String, String>, name: &'static str) -> Result<&'a str, OAuthError> {
    param(params, name).ok_or_else(|| OAuthError::new("invalid_request", format!("{name} is required")))
}

fn invalid_grant_gone() -> OAuthError {
    OAuthError::new("invalid_grant", "the grant behind this token is gone")
}

fn check_target(given: Option<&str>, audience: &str) -> Result<(), OAuthError> {
    match given {
        Some(r) if r.trim_end_matches('/') != audience => Err(OAuthError::new(
            "invalid_target",
            format!("this grant's tokens are for {audience}, not {}", shorten(r)),
        )),
        _ => Ok(()),
    }
}

async fn issue(
    app: &Context,
    grant_id: &str,
    audience: &str,
    spent: Option<&str>,
    at: &str,
) -> Result<Value, OAuthError> {
    let access = format!("{TOKEN_PREFIX}{}", a2app_definition::secret::secret());
    let refresh = format!("{REFRESH_PREFIX}{}", a2app_definition::secret::secret());
    let now = app.clock.now();
    let tokens = OAuthTokens {
        grant_id: grant_id.to_owned(),
        audience: audience.to_owned(),
        access_hash: digest(&access),
        access_expires: a2app_definition::datetime::format(now + jiff::SignedDuration::from_secs(ACCESS_SECONDS)),
        refresh_hash: digest(&refresh),
        refresh_expires: a2app_definition::datetime::format(now + jiff::SignedDuration::from_secs(REFRESH_SECONDS)),
    };
    let store = Arc::clone(&app.store);
    let (spent, at) = (spent.map(str::to_owned), at.to_owned());
    let outcome =
        blocking(move || Ok(store.issue_oauth_tokens(&tokens, spent.as_deref(), &at, grants::MAX_TOKENS)?)).await?;
    match outcome {
        Ok(()) => {}
        Err(GrantConflict::Decided(status)) => {
            return Err(OAuthError::new("invalid_grant", format!("the grant is {}", status.as_str())));
        }
        Err(GrantConflict::Replayed) => {
            // Two holders of one refresh token: one of them stole it.
            end_grant(app, grant_id, "a refresh token was used twice").await?;
            return Err(OAuthError::new(
                "invalid_grant",
                "this refresh token was used before, so its grant is revoked; sign in again",
            ));
        }
        Err(GrantConflict::NotFound) => {
            return Err(OAuthError::new("invalid_grant", "the refresh token is unknown or expired"));
        }
    }
    let grant = grants::get(app, grant_id).await.map_err(|_| invalid_grant_gone())?;
    Ok(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": ACCESS_SECONDS,
        "refresh_token": refresh,
        "scope": grant.scopes.join(" "),
    }))
}

/// `uri` with `params` (and `state`, when the client sent one) added to its query.
fn with_query(uri: &str, params: &[(&str, &str)], state: Option<&str>) -> String {
    let mut pairs: Vec<(&str, &str)> = params.to_vec();
    if let Some(state) = state {
        pairs.push(("state", state));
    }
    let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
    let joiner = if uri.contains('?') { '&' } else { '?' };
    format!("{uri}{joiner}{query}")
}

/// A redirect URI a client may register: HTTPS, HTTP on a loopback address
/// (a native app's local listener), or a private-use scheme with a dot
/// (RFC 8252); printable ASCII only, never a fragment or user information,
/// never a script or data URL.
fn redirect_allowed(uri: &str) -> bool {
    if uri.len() > MAX_URI_CHARS || uri.contains('#') || !uri.bytes().all(|b| b.is_ascii_graphic()) {
        return false;
    }
    if let Some(rest) = uri.strip_prefix("https://") {
        let authority = &rest[..rest.find(['/', '?']).unwrap_or(rest.len())];
        return !authority.is_empty() && !authority.contains('@');
    }
    if let Some(rest) = uri.strip_prefix("http://") {
        return loopback_authority(rest).is_some();
    }
    match uri.split_once(':') {
        Some((scheme, _)) => {
            scheme.contains('.')
                && scheme.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && scheme.chars().all(|c| c.is_ascii_alphanumeric() || ".+-".contains(c))
        }
        None => false,
    }
}

/// For what follows `http://`: the loopback host and what comes after the
/// authority (path and query), when the authority is exactly a loopback
/// host (`localhost`, `127.x.y.z`, `[::1]`) and an optional numeric port.
fn loopback_authority(rest: &str) -> Option<(&str, &str)> {
    let (authority, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => v6.split_once(']')?,
        None => authority.split_once(':').map_or((authority, ""), |(h, _)| (h, &authority[h.len()..])),
    };
    let port_ok = port.is_empty()
        || port.strip_prefix(':').is_some_and(|p| (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()));
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback());
    (port_ok && loopback).then_some((host, path))
}

/// Whether `given` is the registered `registered`: exactly, or, for a
/// loopback HTTP URI, on any port (RFC 8252 §7.3: a native app listens on
/// whatever port it gets).
fn redirect_matches(registered: &str, given: &str) -> bool {
    if registered == given {
        return true;
    }
    match (registered.strip_prefix("http://"), given.strip_prefix("http://")) {
        (Some(r), Some(g)) => match (loopback_authority(r), loopback_authority(g)) {
            (Some(a), Some(b)) => a == b && !g.contains('#'),
            _ => false,
        },
        _ => false,
    }
}

/// PKCE's alphabet: unreserved URL characters.
fn is_pkce_text(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b))
}

/// A value echoed in an error, cut short: errors never grow with the input.
fn shorten(text: &str) -> String {
    let cut: String = text.chars().take(100).collect();
    if cut.len() < text.len() { format!("{cut}…") } else { cut }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_uris_are_https_loopback_or_an_apps_own_scheme() {
        for ok in [
            "https://client.example.com/callback",
            "http://127.0.0.1:33418/callback",
            "http://localhost/cb",
            "http://[::1]:8080/cb",
            "com.example.app:/oauth",
        ] {
            assert!(redirect_allowed(ok), "{ok}");
        }
        for bad in [
            "http://client.example.com/callback",
            "https://client.example.com/cb#frag",
            "javascript:alert(1)",
            "data:text/html,x",
            "https:///nohost",
            "http://127.0.0.1.evil.com/cb",
            "http://127.0.0.1:1@evil.example/cb",
            "http://localhost:@evil.example/cb",
            "http://[::1]:1@evil.example/cb",
            "https://trusted.example@evil.example/cb",
            "http://127.0.0.1:\r\nSet-Cookie:a=b/cb",
            "https://ex\u{e4}mple.com/cb",
            "",
        ] {
            assert!(!redirect_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn a_loopback_redirect_matches_on_any_port_and_nothing_else_does() {
        assert!(redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:5000/cb"));
        assert!(redirect_matches("http://127.0.0.1:1/cb", "http://127.0.0.1:5000/cb"));
        assert!(!redirect_matches("http://127.0.0.1/cb", "http://127.0.0.1:5000/other"));
        assert!(!redirect_matches("http://127.0.0.1/cb", "http://localhost:5000/cb"));
        assert!(!redirect_matches("https://a.example/cb", "https://a.example:444/cb"));
        assert!(!redirect_matches("http://127.0.0.1/callback", "http://127.0.0.1:1@evil.example/callback"));
        assert!(!redirect_matches("http://[::1]/cb", "http://[::1]:1@evil.example/cb"));
        assert!(redirect_matches("https://a.example/cb", "https://a.example/cb"));
    }

    #[test]
    fn the_query_keeps_the_uris_own_and_encodes_values() {
        assert_eq!(
            with_query("https://c.example/cb?x=1", &[("code", "a b"), ("iss", "http://h:1")], Some("s&t")),
            "https://c.example/cb?x=1&code=a+b&iss=http%3A%2F%2Fh%3A1&state=s%26t"
        );
        assert_eq!(with_query("https://c.example/cb", &[("code", "c")], None), "https://c.example/cb?code=c");
    }
}
