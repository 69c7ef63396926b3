//! Typed calls to one app: identity, describe, whoami, records, operations, jobs.
//!
//! Redirects are never followed: a redirect would carry `X-LUI-Token` to
//! whatever host it names. A write always carries an `Idempotency-Key` and is
//! retried, with the same key, only when its outcome is unknown (the request
//! may have been sent and the answer was lost); a request that could not even
//! be connected is simply unreachable.
//!
//! With a grant (`grants::Access`) every call carries its access token as
//! `Authorization: Bearer`, traded for first when none is current; a call the
//! app answers 401 is sent once more with a freshly traded token (a 401 did
//! nothing, so a write may repeat with its key). The grant's own endpoints
//! (ask, read, trade) carry no credential at all: none is needed.

use protocol::ErrorBody;
use protocol::describe::Describe;
use protocol::identity::WhoAmI;
use protocol::page::Page;
use protocol::receipt::Receipt;
use reqwest::{Method, StatusCode, Url};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// How to reach the app and who we say we are.
#[derive(Clone)]
pub struct Options {
    pub token: Option<String>,
    /// Attribution (`X-LUI-Agent`), not authentication.
    pub agent: Option<String>,
    pub connect_timeout: Duration,
    pub timeout: Duration,
    /// Extra attempts for a write whose outcome is unknown.
    pub write_retries: u32,
    /// `Some(allow_local)`: names resolve through discovery's address check
    /// and no proxy is used, for an app just found by discovery.
    pub discovery_rules: Option<bool>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            token: None,
            agent: None,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            write_retries: 2,
            discovery_rules: None,
        }
    }
}

/// How long an operation may take before its answer is taken for lost: the
/// longest an app lets an `http` operation run (120 s), and some.
pub const OPERATION_TIMEOUT: Duration = Duration::from_secs(130);

/// How a write is sent: how often a lost answer is tried again (same key),
/// and a timeout other than the session's.
#[derive(Debug, Clone, Copy)]
struct WritePolicy {
    retries: u32,
    timeout: Option<Duration>,
}

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Nothing was sent: DNS, refused connection, TLS.
    #[error("cannot reach {url}: {detail}")]
    Unreachable { url: String, detail: String },
    /// The request may have been processed; the answer was lost.
    #[error("no answer from {url} (the request may or may not have been carried out): {detail}")]
    OutcomeUnknown { url: String, detail: String },
    /// The app refused, with its envelope.
    #[error("{}: {}", .0.code, .0.message)]
    App(Box<ErrorBody>),
    /// Something answered that is not the app's contract.
    #[error("unexpected answer from {url}: HTTP {status}: {snippet}")]
    Unexpected { url: String, status: u16, snippet: String },
    /// The app refused with an envelope this client cannot read whole, such
    /// as a code newer than this client: its code and message as sent.
    #[error("{code}: {message}")]
    UnknownRefusal { url: String, status: u16, code: String, message: String },
    /// Refused before sending: an argument that cannot go into a request as given.
    #[error("{message}")]
    BadArgument { field: Option<String>, message: String },
}

/// One stored write and what the system says it did.
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub record: Map<String, Value>,
    pub receipt: Option<Receipt>,
}

/// Query options for a list.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub page: Option<u64>,
    pub per_page: Option<u64>,
    pub filter: Option<String>,
    pub sort: Option<String>,
    pub expand: Option<String>,
    /// The fields to return, comma-separated (`id,title`).
    pub fields: Option<String>,
}

pub struct Api {
    http: reqwest::Client,
    base: Url,
    options: Options,
    /// The grant every call acts with, instead of an agent token.
    grant: Option<Arc<crate::grants::Access>>,
}

impl Api {
    pub fn new(base: Url, options: Options) -> Result<Api, CallError> {
        crate::install_tls_provider();
        let builder = match options.discovery_rules {
            Some(allow_local) => crate::discovery::guarded_client(allow_local),
            None => reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("a2app/", env!("CARGO_PKG_VERSION"))),
        };
        let http = builder
            .connect_timeout(options.connect_timeout)
            .timeout(options.timeout)
            .build()
            .map_err(|e| CallError::Unreachable { url: base.to_string(), detail: chain(&e) })?;
        Ok(Api { http, base, options, grant: None })
    }

    /// The token sent from now on (set once the gate has passed).
    pub fn set_token(&mut self, token: Option<String>) {
        self.options.token = token;
    }

    /// The grant every call acts with from now on (set once the gate has
    /// passed, and only when no agent token is: `session` decides).
    pub fn set_grant(&mut self, grant: Option<Arc<crate::grants::Access>>) {
        self.grant = grant;
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    /// `base` + `/api/...`, keeping a base path prefix.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base.as_str().trim_end_matches('/'), path)
    }

    /// `GET /api/_a2app`, raw, without any credential: the document is public,
    /// and a credential must not go anywhere before the gate said what answers.
    pub async fn identity_raw(&self) -> Result<(u16, Vec<u8>), CallError> {
        let url = self.url("/api/_a2app");
        let resp = self.http.get(&url).send().await.map_err(|e| read_error(&url, &e))?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(|e| read_error(&url, &e))?;
        Ok((status, body.to_vec()))
    }

    pub async fn describe(&self) -> Result<Describe, CallError> {
        self.get_json("/api/_a2app/describe").await
    }

    pub async fn describe_part(&self, path: &str) -> Result<Value, CallError> {
        self.get_json(&format!("/api/_a2app/describe/{}", encode_path(path)?)).await
    }

    pub async fn whoami(&self) -> Result<WhoAmI, CallError> {
        self.get_json("/api/_a2app/whoami").await
    }

    pub async fn list(&self, entity: &str, q: &ListQuery) -> Result<Page, CallError> {
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(p) = q.page {
            query.push(("page", p.to_string()));
        }
        if let Some(p) = q.per_page {
            query.push(("perPage", p.to_string()));
        }
        for (key, value) in [("filter", &q.filter), ("sort", &q.sort), ("expand", &q.expand), ("fields", &q.fields)] {
            if let Some(v) = value {
                query.push((key, v.clone()));
            }
        }
        let path = format!("/api/collections/{}/records", encode(entity)?);
        let url = self.url(&path);
        let resp = self.send(|| self.request(Method::GET, &url).query(&query)).await?;
        decode(&url, resp.map_err(|e| read_error(&url, &e))?).await
    }

    /// The number of records, from one one-item page.
    pub async fn count(&self, entity: &str) -> Result<i64, CallError> {
        Ok(self.list(entity, &ListQuery { per_page: Some(1), ..ListQuery::default() }).await?.total_items)
    }

    pub async fn view(&self, entity: &str, id: &str) -> Result<Map<String, Value>, CallError> {
        self.view_shaped(entity, id, None, None).await
    }

    /// One record with refs inlined (`expand`) or cut to some `fields`.
    pub async fn view_shaped(
        &self,
        entity: &str,
        id: &str,
        expand: Option<&str>,
        fields: Option<&str>,
    ) -> Result<Map<String, Value>, CallError> {
        let url = self.url(&format!("/api/collections/{}/records/{}", encode(entity)?, encode(id)?));
        let query: Vec<(&str, &str)> =
            [("expand", expand), ("fields", fields)].into_iter().filter_map(|(k, v)| Some((k, v?))).collect();
        let resp = self.send(|| self.request(Method::GET, &url).query(&query)).await?;
        decode(&url, resp.map_err(|e| read_error(&url, &e))?).await
    }

    pub async fn create(&self, entity: &str, body: &Map<String, Value>, key: &str) -> Result<Written, CallError> {
        let url = self.url(&format!("/api/collections/{}/records", encode(entity)?));
        let value =
            self.write(Method::POST, &url, Some(&Value::Object(body.clone())), key, &[], self.claimed_key()).await?;
        Ok(written(value))
    }

    pub async fn update(
        &self,
        entity: &str,
        id: &str,
        body: &Map<String, Value>,
        key: &str,
    ) -> Result<Written, CallError> {
        self.update_if(entity, id, body, key, None).await
    }

    /// An update that writes nothing unless the record's `updated` is still
    /// `if_match` (else `version_conflict`).
    pub async fn update_if(
        &self,
        entity: &str,
        id: &str,
        body: &Map<String, Value>,
        key: &str,
        if_match: Option<&str>,
    ) -> Result<Written, CallError> {
        let url = self.url(&format!("/api/collections/{}/records/{}", encode(entity)?, encode(id)?));
        let headers: Vec<(&str, &str)> = if_match.map(|v| ("If-Match", v)).into_iter().collect();
        let value = self
            .write(Method::PATCH, &url, Some(&Value::Object(body.clone())), key, &headers, self.claimed_key())
            .await?;
        Ok(written(value))
    }

    pub async fn delete(&self, entity: &str, id: &str, key: &str) -> Result<(), CallError> {
        self.delete_if(entity, id, key, None).await
    }

    /// A delete that removes nothing unless the record's `updated` is still
    /// `if_match` (else `version_conflict`).
    pub async fn delete_if(&self, entity: &str, id: &str, key: &str, if_match: Option<&str>) -> Result<(), CallError> {
        let url = self.url(&format!("/api/collections/{}/records/{}", encode(entity)?, encode(id)?));
        let headers: Vec<(&str, &str)> = if_match.map(|v| ("If-Match", v)).into_iter().collect();
        self.write(Method::DELETE, &url, None, key, &headers, self.claimed_key()).await.map(|_| ())
    }

    /// Receipts stored after `since` (wire datetime), oldest first, at most 1,000.
    pub async fn receipts(&self, since: &str) -> Result<Vec<Receipt>, CallError> {
        let url = self.url("/api/_a2app/receipts");
        // The feed's largest page: receipts are read for a short span of time.
        let resp = self.send(|| self.request(Method::GET, &url).query(&[("since", since), ("limit", "1000")])).await?;
        let value: Value = decode(&url, resp.map_err(|e| read_error(&url, &e))?).await?;
        Ok(value.get("items").cloned().and_then(|v| serde_json::from_value(v).ok()).unwrap_or_default())
    }

    /// The system's receipt of a delete done after `since` (the app's clock,
    /// read just before): a delete answers 204 without a body, so its receipt
    /// is read from the receipts feed. `None` when the feed cannot be read or
    /// does not hold it.
    pub async fn delete_receipt(&self, since: &str, entity: &str, id: &str) -> Option<Receipt> {
        // The feed holds what was stored strictly after `since`, to the
        // millisecond: a delete in the same millisecond as `since` is found
        // only from one millisecond earlier.
        let stamp: jiff::Timestamp = since.trim().replacen(' ', "T", 1).parse().ok()?;
        let earlier = stamp.checked_sub(jiff::SignedDuration::from_millis(1)).ok()?;
        let receipts = self.receipts(&earlier.to_string()).await.ok()?;
        receipts.into_iter().rev().find(|r| r.action == "delete" && r.entity == entity && r.id == id)
    }

    /// `GET /api/_ops`: the declared verbs.
    pub async fn operations(&self) -> Result<Vec<protocol::describe::DescribedOperation>, CallError> {
        self.get_json("/api/_ops").await
    }

    /// `POST /api/ops/{name}`; `approval` is the key of a 428 the user approved.
    ///
    /// A lost answer is tried again (same key) only for a `job`, whose key the
    /// app claims, so a repeat answers `duplicate_request`; another executor
    /// may run again on a repeat, so its lost answer is `OutcomeUnknown` at
    /// once. The call may take as long as the app lets an operation run.
    pub async fn run(
        &self,
        op: &protocol::describe::DescribedOperation,
        params: &Map<String, Value>,
        approval: Option<&str>,
        key: &str,
    ) -> Result<Value, CallError> {
        let url = self.url(&format!("/api/ops/{}", encode(&op.name)?));
        let headers: Vec<(&str, &str)> = approval.map(|v| ("X-A2App-Approval", v)).into_iter().collect();
        let policy = WritePolicy {
            retries: if op.executor == "job" { self.options.write_retries } else { 0 },
            timeout: Some(self.options.timeout.max(OPERATION_TIMEOUT)),
        };
        self.write(Method::POST, &url, Some(&Value::Object(params.clone())), key, &headers, policy).await
    }

    /// `POST /api/_a2app/surfaces`: A2UI messages, applied all or nothing.
    /// A repeat is harmless: a surface is made again, or set to the same values.
    /// The surfaces as they now stand, a JSON array.
    pub async fn render_surfaces(&self, messages: &Value, key: &str) -> Result<Value, CallError> {
        let url = self.url("/api/_a2app/surfaces");
        let answer = self.write(Method::POST, &url, Some(messages), key, &[], self.claimed_key()).await?;
        array_member(&url, answer, "surfaces")
    }

    /// `GET /api/_a2app/surfaces/{id}`: one surface, with what the person entered.
    pub async fn surface(&self, id: &str) -> Result<Value, CallError> {
        self.get_json(&format!("/api/_a2app/surfaces/{}", encode(id)?)).await
    }

    /// `GET /api/_a2app/surfaces`: every surface's id, newest first, a JSON array.
    pub async fn surfaces(&self) -> Result<Value, CallError> {
        let path = "/api/_a2app/surfaces";
        array_member(&self.url(path), self.get_json(path).await?, "items")
    }

    /// `GET /api/_a2app/requests?status=`: a page of the app's requests, newest first.
    pub async fn requests(
        &self,
        status: Option<&str>,
        per_page: u64,
    ) -> Result<Vec<protocol::request::AgentRequest>, CallError> {
        #[derive(serde::Deserialize)]
        struct Requests {
            items: Vec<protocol::request::AgentRequest>,
        }
        let mut path = format!("/api/_a2app/requests?perPage={per_page}");
        if let Some(s) = status {
            path.push_str(&format!("&status={}", encode(s)?));
        }
        Ok(self.get_json::<Requests>(&path).await?.items)
    }

    /// `GET /api/_a2app/requests/{id}`.
    pub async fn agent_request(&self, id: &str) -> Result<protocol::request::AgentRequest, CallError> {
        self.get_json(&format!("/api/_a2app/requests/{}", encode(id)?)).await
    }

    /// `POST /api/_a2app/requests/{id}/claim`, sent once: a repeat after a
    /// lost answer would find the request held by the first, unknown, claim.
    pub async fn claim(&self, id: &str, lease_seconds: Option<u64>) -> Result<protocol::request::Claimed, CallError> {
        let body = lease_seconds.map_or_else(|| serde_json::json!({}), |s| serde_json::json!({ "leaseSeconds": s }));
        self.post_once(&format!("/api/_a2app/requests/{}/claim", encode(id)?), &body).await
    }

    /// `POST /api/_a2app/requests/{id}/answer` with the claim's key and a
    /// `result` or a `failure`; sent once (a repeat of a stored answer is
    /// refused `request_closed`, which says it landed).
    pub async fn answer(&self, id: &str, body: &Value) -> Result<protocol::request::AgentRequest, CallError> {
        self.post_once(&format!("/api/_a2app/requests/{}/answer", encode(id)?), body).await
    }

    async fn post_once<T: serde::de::DeserializeOwned>(&self, path: &str, body: &Value) -> Result<T, CallError> {
        let url = self.url(path);
        let build =
            || self.request(Method::POST, &url).header("content-type", "application/json").body(body.to_string());
        match self.send(build).await? {
            Ok(resp) => decode(&url, resp).await,
            Err(e) if e.is_connect() => Err(CallError::Unreachable { url, detail: chain(&e) }),
            Err(e) => Err(CallError::OutcomeUnknown { url, detail: chain(&e) }),
        }
    }

    /// `POST /api/_a2app/claims` `{message, since?}`: the agent's message
    /// for its person, checked against what this credential stored in its
    /// turn. Sent once: a lost answer is asked again with the same `since`.
    pub async fn check_claims(&self, message: &str, since: Option<&str>) -> Result<protocol::claim::Check, CallError> {
        let mut body = serde_json::json!({ "message": message });
        if let Some(since) = since {
            body["since"] = Value::String(since.to_owned());
        }
        self.post_once("/api/_a2app/claims", &body).await
    }

    /// `GET /api/_jobs/{id}`.
    pub async fn job(&self, id: &str) -> Result<crate::operations::Job, CallError> {
        self.get_json(&format!("/api/_jobs/{}", encode(id)?)).await
    }

    /// A GET by absolute path (e.g. a job's `status` URL as the app gave it).
    pub async fn get_json<T: serde::de::DeserializeOwned>(&self, path: &str) -> Result<T, CallError> {
        let url = self.url(path);
        let resp = self.send(|| self.request(Method::GET, &url)).await?;
        decode(&url, resp.map_err(|e| read_error(&url, &e))?).await
    }

    /// `POST /api/_a2app/grants` `{publicKey, agent, scopes}`: asks the app
    /// for a grant. No credential: a pending grant allows nothing, and a
    /// grant may not ask for another.
    pub async fn ask_grant(&self, body: &Value) -> Result<protocol::grant::Grant, CallError> {
        self.plain_post("/api/_a2app/grants", body, None).await
    }

    /// `GET /api/_a2app/grants/{id}`, without a credential (the id is enough).
    pub async fn grant(&self, id: &str) -> Result<protocol::grant::Grant, CallError> {
        let url = self.url(&format!("/api/_a2app/grants/{}", encode(id)?));
        let resp = unbuilt(self.plain(Method::GET, &url).send().await)?.map_err(|e| read_error(&url, &e))?;
        decode(&url, resp).await
    }

    /// `POST /api/_a2app/grants/{id}/revoke` with the grant's own token.
    pub async fn revoke_grant(&self, access: &crate::grants::Access) -> Result<protocol::grant::Grant, CallError> {
        let path = format!("/api/_a2app/grants/{}/revoke", encode(access.grant_id())?);
        let token = self.access_token(access).await?;
        self.plain_post(&path, &Value::Object(Map::new()), Some(&token)).await
    }

    /// The grant's current access token, or a new one traded for a fresh
    /// signature (`POST /api/_a2app/grants/{id}/token`).
    pub async fn access_token(&self, access: &crate::grants::Access) -> Result<String, CallError> {
        if let Some(token) = access.current() {
            return Ok(token);
        }
        let (body, signed_at) = access.sign();
        let path = format!("/api/_a2app/grants/{}/token", encode(access.grant_id())?);
        let got: protocol::grant::AccessToken = self.plain_post(&path, &body, None).await?;
        access.remember(&got, signed_at);
        Ok(got.token)
    }

    /// A POST sent once, with no agent token (and `bearer` if given): a
    /// repeat would be a second ask, or a spent nonce.
    async fn plain_post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &Value,
        bearer: Option<&str>,
    ) -> Result<T, CallError> {
        let url = self.url(path);
        let mut req = self.plain(Method::POST, &url).header("content-type", "application/json").body(body.to_string());
        if let Some(token) = bearer {
            req = req.bearer_auth(token);
        }
        match unbuilt(req.send().await)? {
            Ok(resp) => decode(&url, resp).await,
            Err(e) if e.is_connect() => Err(CallError::Unreachable { url, detail: chain(&e) }),
            Err(e) => Err(CallError::OutcomeUnknown { url, detail: chain(&e) }),
        }
    }

    /// Sends what `build` makes, with the grant's access token when there is
    /// a grant; after a 401 (an expired or revoked token: nothing was done),
    /// once more with a newly traded one. The outer error is the trade's.
    async fn send(
        &self,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Result<Result<reqwest::Response, reqwest::Error>, CallError> {
        let Some(access) = &self.grant else { return unbuilt(build().send().await) };
        let token = self.access_token(access).await?;
        match unbuilt(build().bearer_auth(&token).send().await)? {
            Ok(resp) if resp.status() == StatusCode::UNAUTHORIZED => {
                access.refused(&token);
                let token = self.access_token(access).await?;
                unbuilt(build().bearer_auth(&token).send().await)
            }
            other => Ok(other),
        }
    }

    /// A request with the agent token, if the session has one.
    fn request(&self, method: Method, url: &str) -> reqwest::RequestBuilder {
        let mut req = self.plain(method, url);
        if let Some(token) = &self.options.token {
            req = req.header("X-LUI-Token", token);
        }
        req
    }

    /// A request with no credential: attribution only.
    fn plain(&self, method: Method, url: &str) -> reqwest::RequestBuilder {
        let mut req = self.http.request(method, url).header("accept", "application/json");
        if let Some(agent) = &self.options.agent {
            req = req.header("X-LUI-Agent", agent);
        }
        req
    }

    /// The policy of a write whose key the app claims (a record's, a job's
    /// start, a surface render): a lost answer is tried again under its key.
    fn claimed_key(&self) -> WritePolicy {
        WritePolicy { retries: self.options.write_retries, timeout: None }
    }

    /// A write with its Idempotency-Key, tried again with the same key while
    /// `policy` allows: only where the app claims the key, so a repeat that
    /// the first attempt already carried out answers `duplicate_request`.
    async fn write(
        &self,
        method: Method,
        url: &str,
        body: Option<&Value>,
        key: &str,
        headers: &[(&str, &str)],
        policy: WritePolicy,
    ) -> Result<Value, CallError> {
        for (name, value) in [("Idempotency-Key", key)].iter().chain(headers) {
            // Sent as given, a byte outside printable ASCII reaches the app as
            // a header it cannot read, which it treats as absent.
            if !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                return Err(CallError::BadArgument {
                    field: Some((*name).to_owned()),
                    message: format!("{name} must be printable ASCII"),
                });
            }
        }
        let build = || {
            let mut req = self.request(method.clone(), url).header("Idempotency-Key", key);
            if let Some(timeout) = policy.timeout {
                req = req.timeout(timeout);
            }
            if let Some(body) = body {
                req = req.header("content-type", "application/json").body(body.to_string());
            }
            for (name, value) in headers {
                req = req.header(*name, *value);
            }
            req
        };
        let mut attempt = 0;
        loop {
            match self.send(&build).await? {
                Ok(resp) if resp.status() == StatusCode::NO_CONTENT => return Ok(Value::Null),
                // A status came back: the app took the write. An answer cut
                // off, or a success whose body is not the app's, leaves the
                // outcome unknown, never "unreachable" (nothing done).
                Ok(resp) => {
                    return decode(url, resp).await.map_err(|e| match e {
                        CallError::Unreachable { url, detail } => CallError::OutcomeUnknown { url, detail },
                        CallError::Unexpected { url, status: status @ 200..=299, snippet } => {
                            CallError::OutcomeUnknown { url, detail: format!("status {status}, but {snippet}") }
                        }
                        other => other,
                    });
                }
                Err(e) if e.is_connect() => {
                    return Err(CallError::Unreachable { url: url.into(), detail: chain(&e) });
                }
                Err(e) => {
                    // Sent, maybe processed: only the same key may try again.
                    if attempt >= policy.retries {
                        return Err(CallError::OutcomeUnknown { url: url.into(), detail: chain(&e) });
                    }
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
            }
        }
    }
}

/// A request reqwest refused to build (a header value with a line break, from
/// `--agent` or a token) was never sent: that is the caller's argument, not an
/// unreachable app, and never a write whose outcome is unknown.
fn unbuilt(
    sent: Result<reqwest::Response, reqwest::Error>,
) -> Result<Result<reqwest::Response, reqwest::Error>, CallError> {
    match sent {
        Err(e) if e.is_builder() => Err(CallError::BadArgument {
            field: None,
            message: format!(
                "this request cannot be sent as given (an agent name or token must be printable ASCII): {}",
                chain(&e)
            ),
        }),
        other => Ok(other),
    }
}

/// The array under `key` of a 2xx answer: any other document is not the
/// contract's, and is refused rather than read as an empty list.
fn array_member(url: &str, mut answer: Value, key: &str) -> Result<Value, CallError> {
    match answer.get_mut(key).map(Value::take) {
        Some(list @ Value::Array(_)) => Ok(list),
        _ => Err(CallError::Unexpected {
            url: url.into(),
            status: 200,
            snippet: format!("not the expected document (no array \"{key}\")"),
        }),
    }
}

fn written(value: Value) -> Written {
    let mut record = match value {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let receipt = record.remove("_receipt").and_then(|r| serde_json::from_value(r).ok());
    Written { record, receipt }
}

async fn decode<T: serde::de::DeserializeOwned>(url: &str, resp: reqwest::Response) -> Result<T, CallError> {
    let status = resp.status();
    let bytes = resp.bytes().await.map_err(|e| read_error(url, &e))?;
    if status.is_success() {
        return serde_json::from_slice(&bytes).map_err(|e| CallError::Unexpected {
            url: url.into(),
            status: status.as_u16(),
            snippet: format!("not the expected document ({e})"),
        });
    }
    match serde_json::from_slice::<ErrorBody>(&bytes) {
        Ok(body) if body.a2app => Err(CallError::App(Box::new(body))),
        _ => Err(unknown_refusal(url, status.as_u16(), &bytes).unwrap_or_else(|| CallError::Unexpected {
            url: url.into(),
            status: status.as_u16(),
            snippet: snippet(&bytes),
        })),
    }
}

/// An envelope marked as the app's (`a2app: true`, a code and a message)
/// that does not decode as this client's `ErrorBody`: an app newer than the
/// client. Its refusal is still the app's, not something in front of it.
fn unknown_refusal(url: &str, status: u16, bytes: &[u8]) -> Option<CallError> {
    let body: Value = serde_json::from_slice(bytes).ok()?;
    if body.get("a2app") != Some(&Value::Bool(true)) {
        return None;
    }
    // A code is a snake_case name; anything else is not an envelope to trust.
    let code = body.get("code")?.as_str()?;
    let named = code.len() <= 64
        && code.starts_with(|c: char| c.is_ascii_lowercase())
        && code.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !named {
        return None;
    }
    Some(CallError::UnknownRefusal {
        url: url.into(),
        status,
        code: code.to_owned(),
        message: body.get("message").and_then(Value::as_str).unwrap_or_default().to_owned(),
    })
}

/// A read that failed before an answer: nothing changed, so it is simply unreachable.
fn read_error(url: &str, e: &reqwest::Error) -> CallError {
    CallError::Unreachable { url: url.into(), detail: chain(e) }
}

/// The error with its causes: reqwest's own message alone says "error sending request".
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn snippet(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > 120 {
        format!("{}…", one_line.chars().take(120).collect::<String>())
    } else {
        one_line
    }
}

/// Percent-encodes one path segment. `.` and `..` are refused: a URL parser
/// resolves them (and `%2e` alike), so they would climb out of the route, and
/// above a base path to another app on the same origin, with the token.
fn encode(segment: &str) -> Result<String, CallError> {
    if segment == "." || segment == ".." {
        return Err(CallError::BadArgument {
            field: None,
            message: format!("\"{segment}\" is not a name or an id: a URL would read it as a step along the path"),
        });
    }
    let mut out = String::new();
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(out)
}

/// Encodes each segment of a `a/b` path.
fn encode_path(path: &str) -> Result<String, CallError> {
    Ok(path.split('/').map(encode).collect::<Result<Vec<_>, _>>()?.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_member_that_is_not_the_contracts_array_is_an_unexpected_answer() {
        let url = "http://127.0.0.1:1/api/_a2app/surfaces";
        assert_eq!(array_member(url, json!({"surfaces": [{"a": 1}]}), "surfaces").unwrap(), json!([{"a": 1}]));
        for answer in [json!([]), json!("ok"), json!(1), json!(null), json!({"surfaces": {}}), json!({"items": []})] {
            match array_member(url, answer.clone(), "surfaces") {
                Err(CallError::Unexpected { status: 200, snippet, .. }) => {
                    assert_eq!(snippet, "not the expected document (no array \"surfaces\")", "{answer}")
                }
                other => panic!("{answer}: {other:?}"),
            }
        }
    }

    #[test]
    fn only_a_marked_envelope_with_a_snake_case_code_is_an_unknown_refusal() {
        let url = "http://127.0.0.1:1/x";
        let body = |v: serde_json::Value| v.to_string().into_bytes();
        match unknown_refusal(url, 429, &body(json!({"a2app": true, "code": "quota_exceeded", "message": "used up"}))) {
            Some(CallError::UnknownRefusal { status: 429, code, message, .. }) => {
                assert_eq!((code.as_str(), message.as_str()), ("quota_exceeded", "used up"))
            }
            other => panic!("{other:?}"),
        }
        for not in [
            json!({"code": "quota_exceeded"}),
            json!({"a2app": false, "code": "quota_exceeded"}),
            json!({"a2app": true, "code": "\u{1b}[31mred"}),
            json!({"a2app": true, "code": "Quota"}),
            json!({"a2app": true, "code": 7}),
            json!({"a2app": true}),
        ] {
            assert!(unknown_refusal(url, 400, &body(not.clone())).is_none(), "{not}");
        }
        assert!(unknown_refusal(url, 502, b"<html>Bad Gateway</html>").is_none());
    }
}
