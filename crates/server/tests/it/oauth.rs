//! MCP's OAuth (DESIGN §5): the metadata documents, the 401 challenge, a
//! client registering, a person approving on the app's page, PKCE, tokens
//! bound to `/mcp`, rotating refresh tokens, and revocation.

use crate::TestApp;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const REDIRECT: &str = "http://127.0.0.1/callback";

async fn signing_in() -> TestApp {
    TestApp::with_config(|toml| format!("{toml}\n[mcp]\nsign_in = true\n")).await
}

fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

/// A client that shows redirects instead of following them (the browser's view).
fn browser() -> reqwest::Client {
    crate::http();
    reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

async fn register(t: &TestApp) -> String {
    let body =
        json!({"client_name": "Claude Desktop", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"});
    let (status, answer) = t.send(t.http.post(format!("{}/oauth/register", t.url)), Some(body)).await;
    assert_eq!(status, 201, "{answer}");
    assert_eq!(answer["client_name"], "Claude Desktop");
    assert_eq!(answer["redirect_uris"], json!([REDIRECT]));
    assert_eq!(answer["token_endpoint_auth_method"], "none");
    answer["client_id"].as_str().unwrap().to_owned()
}

/// The redirect URI these sign-ins name: the registered `REDIRECT` on a
/// port of their own (a loopback redirect URI matches on any port).
fn callback(t: &TestApp) -> String {
    let port = t.url.rsplit(':').next().unwrap().parse::<u32>().unwrap();
    format!("http://127.0.0.1:{}/callback", 40000 + port % 1000)
}

/// `/oauth/authorize` with `extra` over a valid request; returns the status and `Location`.
async fn authorize(t: &TestApp, client: &str, extra: &[(&str, &str)]) -> (u16, String) {
    let code_challenge = challenge(VERIFIER);
    let resource = format!("{}/mcp", t.url);
    let redirect = callback(t);
    let mut params: HashMap<&str, &str> = HashMap::from([
        ("response_type", "code"),
        ("client_id", client),
        ("redirect_uri", redirect.as_str()),
        ("code_challenge", code_challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", "xyz-1"),
        ("scope", "data:cards:read data:cards:write"),
        ("resource", resource.as_str()),
    ]);
    for (k, v) in extra {
        if v.is_empty() {
            params.remove(k);
        } else {
            params.insert(k, v);
        }
    }
    let query = serde_urlencoded::to_string(&params).unwrap();
    let resp = browser().get(format!("{}/oauth/authorize?{query}", t.url)).send().await.unwrap();
    let location = resp.headers().get("location").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (resp.status().as_u16(), location)
}

/// The text `/oauth/authorize` shows the person for a refused request.
async fn shown(t: &TestApp, client: &str, extra: &[(&str, &str)]) -> String {
    let mut params: Vec<(&str, &str)> = vec![("response_type", "code"), ("client_id", client)];
    let challenge = challenge(VERIFIER);
    params.extend([("code_challenge", challenge.as_str()), ("code_challenge_method", "S256"), ("state", "xyz-1")]);
    for (k, v) in extra {
        params.retain(|(key, _)| key != k);
        if !v.is_empty() {
            params.push((k, v));
        }
    }
    let url = format!("{}/oauth/authorize?{}", t.url, serde_urlencoded::to_string(&params).unwrap());
    let resp = browser().get(url).send().await.unwrap();
    assert!(resp.headers().get("location").is_none());
    resp.text().await.unwrap()
}

/// The query of a redirect URL, decoded.
fn query(url: &str) -> HashMap<String, String> {
    serde_urlencoded::from_str(url.split_once('?').map(|(_, q)| q).unwrap_or("")).unwrap()
}

async fn page(t: &TestApp, path: &str, body: Option<Value>) -> (u16, Value) {
    t.send(t.http.post(format!("{}{path}", t.url)).header("Origin", &t.url), body).await
}

/// Authorizes and approves (with `scopes`, or all asked); the redirect's query.
async fn approved(t: &TestApp, client: &str, scopes: Option<Value>) -> (String, HashMap<String, String>) {
    let (status, location) = authorize(t, client, &[]).await;
    assert_eq!(status, 303);
    let grant = location.strip_prefix("/_/#grant=").unwrap().to_owned();
    let (status, decided) =
        page(t, &format!("/api/_a2app/grants/{grant}/approve"), scopes.map(|s| json!({"scopes": s}))).await;
    assert_eq!(status, 200, "{decided}");
    (grant, query(decided["redirect"].as_str().unwrap()))
}

/// `form` posted to `path` as OAuth sends it; every answer is `no-store`.
async fn post_form(t: &TestApp, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
    let resp = t
        .http
        .post(format!("{}{path}", t.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(serde_urlencoded::to_string(form).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers().get("cache-control").unwrap(), "no-store");
    resp
}

async fn trade(t: &TestApp, form: &[(&str, &str)]) -> (u16, Value) {
    let resp = post_form(t, "/oauth/token", form).await;
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

async fn code_for_token(t: &TestApp, client: &str, code: &str, redirect: &str) -> (u16, Value) {
    trade(
        t,
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("client_id", client),
            ("redirect_uri", redirect),
            ("code_verifier", VERIFIER),
        ],
    )
    .await
}

/// An MCP `tools/call` of `name` with `token`: the status and the JSON-RPC answer.
async fn tool(t: &TestApp, token: &str, name: &str, arguments: Value) -> (u16, Value) {
    let bearer = format!("Bearer {token}");
    crate::mcp::rpc(t, &[("authorization", &bearer)], "tools/call", json!({"name": name, "arguments": arguments})).await
}

/// An MCP `tools/list` with `token`: the status and tool names.
async fn tools(t: &TestApp, token: &str) -> (u16, Vec<String>) {
    let bearer = format!("Bearer {token}");
    let (status, list) = crate::mcp::rpc(t, &[("authorization", &bearer)], "tools/list", json!({})).await;
    let names =
        list["result"]["tools"].as_array().map(|a| a.iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect());
    (status, names.unwrap_or_default())
}

#[tokio::test]
async fn metadata_and_the_challenge_start_the_flow() {
    let t = signing_in().await;
    let mut expected = Vec::new();
    for entity in ["cards", "lists", "members"] {
        expected.push(format!("data:{entity}:read"));
        expected.push(format!("data:{entity}:write"));
    }
    for op in ["move_card", "complete_card", "cards_in_list", "clear_done", "export_board"] {
        expected.push(format!("op:{op}"));
    }
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let (status, prm) = t.send(t.http.get(format!("{}{path}", t.url)), None).await;
        assert_eq!(status, 200);
        assert_eq!(prm["resource"], format!("{}/mcp", t.url));
        assert_eq!(prm["authorization_servers"], json!([t.url]));
        assert_eq!(prm["bearer_methods_supported"], json!(["header"]));
        let mut got: Vec<String> = serde_json::from_value(prm["scopes_supported"].clone()).unwrap();
        got.sort();
        let mut want = expected.clone();
        want.sort();
        assert_eq!(got, want);
    }
    let (status, meta) = t.send(t.http.get(format!("{}/.well-known/oauth-authorization-server", t.url)), None).await;
    assert_eq!(status, 200);
    assert_eq!(meta["issuer"], t.url);
    assert_eq!(meta["authorization_endpoint"], format!("{}/oauth/authorize", t.url));
    assert_eq!(meta["token_endpoint"], format!("{}/oauth/token", t.url));
    assert_eq!(meta["registration_endpoint"], format!("{}/oauth/register", t.url));
    assert_eq!(meta["revocation_endpoint"], format!("{}/oauth/revoke", t.url));
    assert_eq!(meta["revocation_endpoint_auth_methods_supported"], json!(["none"]));
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(meta["token_endpoint_auth_methods_supported"], json!(["none"]));
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);

    // No credential: 401 with where to look and what to ask.
    let resp = t
        .http
        .post(format!("{}/mcp", t.url))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    let header = resp.headers().get("www-authenticate").unwrap().to_str().unwrap().to_owned();
    let (_, prm) = t.send(t.http.get(format!("{}/.well-known/oauth-protected-resource/mcp", t.url)), None).await;
    let offered: Vec<String> = serde_json::from_value(prm["scopes_supported"].clone()).unwrap();
    assert_eq!(
        header,
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", scope=\"{}\"",
            t.url,
            offered.join(" ")
        )
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "unauthorized");

    // A page's image or script cannot start a sign-in in the background.
    let client = register(&t).await;
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", client.as_str()),
        ("code_challenge", challenge(VERIFIER).as_str()),
        ("code_challenge_method", "S256"),
    ])
    .unwrap();
    let url = format!("{}/oauth/authorize?{query}", t.url);
    let resp = browser().get(&url).header("sec-fetch-mode", "no-cors").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let (_, list) = t.call("GET", "/api/_a2app/grants", None).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0, "no grant was made");
    let framed = browser().get(&url).header("sec-fetch-mode", "navigate").header("sec-fetch-dest", "iframe");
    assert_eq!(framed.send().await.unwrap().status().as_u16(), 400);
    let (_, list) = t.call("GET", "/api/_a2app/grants", None).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 0, "no grant was made");
    let page = browser().get(&url).header("sec-fetch-mode", "navigate").header("sec-fetch-dest", "document");
    assert_eq!(page.send().await.unwrap().status().as_u16(), 303);
    // The consent page keeps no opener: whoever opened it cannot switch what it shows.
    let resp = t.http.get(format!("{}/_/", t.url)).send().await.unwrap();
    assert_eq!(resp.headers()["cross-origin-opener-policy"], "same-origin");

    // The agent token still works (the scheme in any case); a wrong one is challenged as invalid.
    let lower = format!("bearer {}", t.token);
    let (status, _) = crate::mcp::rpc(&t, &[("authorization", &lower)], "tools/list", json!({})).await;
    assert_eq!(status, 200);
    let (status, names) = tools(&t, &t.token).await;
    assert_eq!((status, names.contains(&"create".to_owned())), (200, true));
    let resp = t.http.post(format!("{}/mcp", t.url)).header("authorization", "Bearer nope").send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert!(resp.headers()["www-authenticate"].to_str().unwrap().ends_with(", error=\"invalid_token\""));

    // Without sign_in, a loopback app still serves anonymous readers.
    let open = TestApp::kanban().await;
    let (status, list) = crate::mcp::rpc(&open, &[], "tools/list", json!({})).await;
    assert_eq!(status, 200, "{list}");
}

#[tokio::test]
async fn a_host_signs_in_with_pkce_and_its_token_works_at_mcp_only() {
    let t = signing_in().await;
    let client = register(&t).await;

    // The browser lands on the consent screen for a pending grant.
    let (status, location) = authorize(&t, &client, &[]).await;
    assert_eq!(status, 303);
    let grant = location.strip_prefix("/_/#grant=").unwrap().to_owned();
    let (_, pending) = t.call("GET", &format!("/api/_a2app/grants/{grant}"), None).await;
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["agent"], "Claude Desktop");
    assert_eq!(pending["publicKey"], "");
    assert_eq!(pending["client"]["id"], client);
    assert_eq!(pending["scopes"], json!(["data:cards:read", "data:cards:write"]));
    // An agent cannot approve it.
    let (status, _) = t.call("POST", &format!("/api/_a2app/grants/{grant}/approve"), None).await;
    assert_eq!(status, 403);

    // The person narrows it to reading; the browser returns with a code.
    let (status, decided) =
        page(&t, &format!("/api/_a2app/grants/{grant}/approve"), Some(json!({"scopes": ["data:cards:read"]}))).await;
    assert_eq!(status, 200, "{decided}");
    let redirect = decided["redirect"].as_str().unwrap();
    let callback = callback(&t);
    assert!(redirect.starts_with(&format!("{callback}?code=a2c_")), "{redirect}");
    let back = query(redirect);
    assert_eq!(back["state"], "xyz-1");
    assert_eq!(back["iss"], t.url);

    // A wrong verifier spends the code. Presented again, it was in two
    // hands: the sign-in it was for ends.
    let (status, refused) = trade(
        &t,
        &[
            ("grant_type", "authorization_code"),
            ("code", &back["code"]),
            ("client_id", &client),
            ("redirect_uri", &callback),
            ("code_verifier", "x".repeat(43).as_str()),
        ],
    )
    .await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")));
    let (status, refused) = code_for_token(&t, &client, &back["code"], &callback).await;
    assert_eq!(
        (status, refused["error"].as_str(), refused["error_description"].as_str()),
        (
            400,
            Some("invalid_grant"),
            Some("this code was used before, so the sign-in it made is revoked; sign in again")
        )
    );
    assert_eq!(status_of(&t, &grant).await, "revoked");
    let (status, unknown) = code_for_token(&t, &client, "a2c_nothing", &callback).await;
    assert_eq!((status, unknown["error_description"].as_str()), (400, Some("the code is unknown, used or expired")));

    // A fresh sign-in, traded properly.
    let (signed_in, back) = approved(&t, &client, Some(json!(["data:cards:read"]))).await;
    let (status, tokens) = code_for_token(&t, &client, &back["code"], &callback).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert_eq!(tokens["expires_in"], 3600);
    assert_eq!(tokens["scope"], "data:cards:read");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    assert!(access.starts_with("a2g_") && refresh.starts_with("a2r_"));

    // At /mcp it reads (no write tools listed); elsewhere it is not valid (RFC 8707).
    let (status, names) = tools(&t, &access).await;
    assert_eq!(status, 200);
    assert!(names.contains(&"query".to_owned()) && !names.contains(&"create".to_owned()), "{names:?}");
    let (status, body) =
        t.send(t.http.get(format!("{}/api/collections/cards/records", t.url)).bearer_auth(&access), None).await;
    assert_eq!(status, 401, "{body}");
    assert!(body["message"].as_str().unwrap().contains(&format!("issued for {}/mcp only", t.url)), "{body}");

    // A call outside its scopes is refused at the HTTP level with the scope
    // to ask for (MCP's step-up), before any tool runs.
    let call = |name: &str, arguments: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}});
        t.http
            .post(format!("{}/mcp", t.url))
            .bearer_auth(&access)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
    };
    let resp = call("create", json!({"entity": "cards", "record": {"title": "x"}})).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 403);
    assert_eq!(
        resp.headers()["www-authenticate"].to_str().unwrap(),
        format!(
            "Bearer error=\"insufficient_scope\", scope=\"data:cards:read data:cards:write\", resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\", error_description=\"this grant does not hold data:cards:write\"",
            t.url
        )
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!((body["code"].as_str(), body["scope"].as_str()), (Some("insufficient_scope"), Some("data:cards:write")));
    let (status, _) = tool(&t, &access, "query", json!({"entity": "cards"})).await;
    assert_eq!(status, 200);
    // An entity that does not exist is the tool's own answer, not a scope to ask for.
    let (status, answer) = tool(&t, &access, "query", json!({"entity": "secrets"})).await;
    assert_eq!(
        (status, answer["result"]["structuredContent"]["code"].as_str()),
        (200, Some("unknown_entity")),
        "{answer}"
    );

    // A refresh's scope is honoured or refused (RFC 6749 §6), never ignored:
    // one other than the grant's is refused, and spends nothing.
    let (status, refused) = trade(
        &t,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
            ("scope", "data:cards:write"),
        ],
    )
    .await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_scope")), "{refused}");
    // Refresh tokens rotate; the spent one, presented again, ends them all.
    let (status, second) = trade(
        &t,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &refresh),
            ("client_id", &client),
            ("scope", "data:cards:read"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{second}");
    let new_access = second["access_token"].as_str().unwrap().to_owned();
    assert_ne!(new_access, access);
    assert_eq!(tools(&t, &new_access).await.0, 200);
    let (status, replay) =
        trade(&t, &[("grant_type", "refresh_token"), ("refresh_token", &refresh), ("client_id", &client)]).await;
    assert_eq!((status, replay["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(tools(&t, &new_access).await.0, 401);
    // The grant is revoked for its person to see, and the audit says why.
    assert_eq!(status_of(&t, &signed_in).await, "revoked");
    let newer = second["refresh_token"].as_str().unwrap();
    let (status, _) =
        trade(&t, &[("grant_type", "refresh_token"), ("refresh_token", newer), ("client_id", &client)]).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn revoking_the_grant_ends_its_oauth_tokens() {
    let t = signing_in().await;
    let client = register(&t).await;
    let (grant, back) = approved(&t, &client, None).await;
    let callback = callback(&t);
    let (_, tokens) = code_for_token(&t, &client, &back["code"], &callback).await;
    let access = tokens["access_token"].as_str().unwrap();
    let (status, names) = tools(&t, access).await;
    assert!(status == 200 && names.contains(&"create".to_owned()), "{names:?}");
    // Its writes go through the tools too (they check the caller again, at /mcp).
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let card = json!({"title": "Over OAuth", "list": list["id"]});
    let (status, created) = tool(&t, access, "create", json!({"entity": "cards", "record": card})).await;
    assert_eq!(status, 200);
    let record = &created["result"]["structuredContent"];
    assert_eq!(
        (record["title"].as_str(), created["result"]["isError"].as_bool()),
        (Some("Over OAuth"), Some(false)),
        "{created}"
    );
    assert_eq!(record["_receipt"]["caller"], format!("grant:{grant}"));
    // The grant cannot read lists, so its receipt names the list by id only.
    assert_eq!(record["_receipt"]["fields"]["list"], list["id"]);
    let (_, stored) =
        t.call("GET", &format!("/api/collections/cards/records/{}", record["id"].as_str().unwrap()), None).await;
    assert_eq!((stored["title"].as_str(), stored["list"].as_str()), (Some("Over OAuth"), list["id"].as_str()));
    // A key's signature cannot buy tokens for an OAuth grant.
    let (status, _) = t
        .send(
            t.http.post(format!("{}/api/_a2app/grants/{grant}/token", t.url)),
            Some(json!({"timestamp": 1785000000, "nonce": "n".repeat(20), "signature": "A".repeat(86)})),
        )
        .await;
    assert_eq!(status, 401);

    let (status, _) = page(&t, &format!("/api/_a2app/grants/{grant}/revoke"), None).await;
    assert_eq!(status, 200);
    let resp = t.http.post(format!("{}/mcp", t.url)).bearer_auth(access).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 401);
    assert!(resp.headers()["www-authenticate"].to_str().unwrap().contains("error=\"invalid_token\""));
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, refused) =
        trade(&t, &[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", &client)]).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")));
}

/// Moves the app's clock on by `secs`.
fn advance(t: &TestApp, secs: i64) {
    use a2app_core::clock::Clock;
    t.clock.set(t.clock.now() + jiff::SignedDuration::from_secs(secs));
}

/// The status grant `id` reads now.
async fn status_of(t: &TestApp, id: &str) -> String {
    let (_, grant) = t.call("GET", &format!("/api/_a2app/grants/{id}"), None).await;
    grant["status"].as_str().unwrap().to_owned()
}

/// The audit's texts about grant `id`, oldest first.
async fn audited(t: &TestApp, id: &str) -> Vec<String> {
    let (_, audit) = t.call("GET", "/api/_a2app/receipts?limit=100", None).await;
    audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["entity"] == "_a2app_grants" && r["id"] == id)
        .map(|r| r["text"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_code_traded_twice_ends_the_sign_in_it_bought() {
    let t = signing_in().await;
    let client = register(&t).await;
    let (grant, back) = approved(&t, &client, None).await;
    let callback = callback(&t);
    let (status, tokens) = code_for_token(&t, &client, &back["code"], &callback).await;
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap();
    assert_eq!(tools(&t, access).await.0, 200);

    // The same code again (RFC 6749 §4.1.2): refused, and the tokens it bought end.
    let (status, replay) = code_for_token(&t, &client, &back["code"], &callback).await;
    assert_eq!(
        (status, replay["error"].as_str(), replay["error_description"].as_str()),
        (
            400,
            Some("invalid_grant"),
            Some("this code was used before, so the sign-in it made is revoked; sign in again")
        )
    );
    assert_eq!(tools(&t, access).await.0, 401);
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let (status, refused) =
        trade(&t, &[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", &client)]).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(status_of(&t, &grant).await, "revoked");
    // Once more: still refused, and the grant is ended once.
    assert_eq!(code_for_token(&t, &client, &back["code"], &callback).await.0, 400);
    assert_eq!(
        audited(&t, &grant).await,
        [
            "MCP client \"Claude Desktop\" asked for a grant".to_owned(),
            "Approved a grant for agent \"Claude Desktop\": data:cards:read, data:cards:write".to_owned(),
            "Revoked the grant of \"Claude Desktop\": its authorization code was used twice".to_owned(),
        ]
    );

    // A replay counts while the code could have been traded: an old code
    // from a log or a browser's history cannot end a sign-in weeks later.
    let (grant, back) = approved(&t, &client, None).await;
    assert_eq!(code_for_token(&t, &client, &back["code"], &callback).await.0, 200);
    advance(&t, a2app_core::oauth::CODE_SECONDS + 1);
    let (status, late) = code_for_token(&t, &client, &back["code"], &callback).await;
    assert_eq!((status, late["error_description"].as_str()), (400, Some("the code is unknown, used or expired")));
    assert_eq!(status_of(&t, &grant).await, "active");
}

#[tokio::test]
async fn the_redirect_uri_may_be_left_out_of_a_trade_but_one_sent_is_checked() {
    let t = signing_in().await;
    let client = register(&t).await;
    let trade_code = |code: String, redirect: Option<&'static str>| {
        let mut form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("client_id", client.clone()),
            ("code_verifier", VERIFIER.to_owned()),
        ];
        form.extend(redirect.map(|uri| ("redirect_uri", uri.to_owned())));
        let t = &t;
        async move {
            let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            trade(t, &form).await
        }
    };
    let (_, back) = approved(&t, &client, None).await;
    let (status, refused) = trade_code(back["code"].clone(), Some("http://127.0.0.1:1/other")).await;
    assert_eq!(
        (status, refused["error"].as_str(), refused["error_description"].as_str()),
        (400, Some("invalid_grant"), Some("the code was issued to another client or redirect_uri"))
    );
    // Left out, the code and its verifier are enough.
    let (_, back) = approved(&t, &client, None).await;
    let (status, tokens) = trade_code(back["code"].clone(), None).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tools(&t, tokens["access_token"].as_str().unwrap()).await.0, 200);
}

/// `POST /oauth/revoke` with `form`: the status, the CORS header and the body.
async fn revoke(t: &TestApp, form: &[(&str, &str)]) -> (u16, String, String) {
    let resp = post_form(t, "/oauth/revoke", form).await;
    let cors = resp.headers().get("access-control-allow-origin").map(|v| v.to_str().unwrap().to_owned());
    (resp.status().as_u16(), cors.unwrap_or_default(), resp.text().await.unwrap())
}

/// A sign-in has ended: its access token is refused, its refresh token buys
/// nothing, and its grant reads revoked.
async fn assert_ended(t: &TestApp, client: &str, grant: &str, access: &str, refresh: &str) {
    assert_eq!(tools(t, access).await.0, 401);
    let (status, refused) =
        trade(t, &[("grant_type", "refresh_token"), ("refresh_token", refresh), ("client_id", client)]).await;
    assert_eq!((status, refused["error"].as_str()), (400, Some("invalid_grant")));
    assert_eq!(status_of(t, grant).await, "revoked");
}

#[tokio::test]
async fn a_client_signs_out_by_revoking_either_token() {
    let t = signing_in().await;
    let client = register(&t).await;
    let callback = callback(&t);
    let sign_in = || async {
        let (grant, back) = approved(&t, &client, None).await;
        let (status, tokens) = code_for_token(&t, &client, &back["code"], &callback).await;
        assert_eq!(status, 200, "{tokens}");
        let token = |k: &str| tokens[k].as_str().unwrap().to_owned();
        (grant, token("access_token"), token("refresh_token"))
    };

    // The refresh token: the grant ends with both tokens.
    let (grant, access, refresh) = sign_in().await;
    let other = register(&t).await;
    let (status, _, refused) = revoke(&t, &[("token", &refresh), ("client_id", &other)]).await;
    let refused: Value = serde_json::from_str(&refused).unwrap();
    assert_eq!(
        (status, refused["error"].as_str(), refused["error_description"].as_str()),
        (400, Some("unauthorized_client"), Some("this token was not issued to this client"))
    );
    assert_eq!(tools(&t, &access).await.0, 200, "another client revokes nothing");
    assert_eq!(
        revoke(&t, &[("token", &refresh), ("token_type_hint", "refresh_token"), ("client_id", &client)]).await,
        (200, "*".to_owned(), String::new())
    );
    assert_ended(&t, &client, &grant, &access, &refresh).await;
    assert_eq!(
        audited(&t, &grant).await.last().map(String::as_str),
        Some("Revoked the grant of \"Claude Desktop\": its client signed out")
    );
    // Done already, or never known: 200, nothing to do (RFC 7009 §2.2).
    assert_eq!(revoke(&t, &[("token", &refresh), ("client_id", &client)]).await.0, 200);
    assert_eq!(revoke(&t, &[("token", "a2g_unknown"), ("client_id", &client)]).await.0, 200);

    // The access token, under a wrong hint: the same.
    let (grant, access, refresh) = sign_in().await;
    assert_eq!(
        revoke(&t, &[("token", &access), ("token_type_hint", "refresh_token"), ("client_id", &client)]).await.0,
        200
    );
    assert_ended(&t, &client, &grant, &access, &refresh).await;

    // An access token past its hour still signs out: its refresh token lives on.
    let (grant, access, refresh) = sign_in().await;
    advance(&t, a2app_core::oauth::ACCESS_SECONDS + 1);
    assert_eq!(tools(&t, &access).await.0, 401, "expired");
    assert_eq!(revoke(&t, &[("token", &access), ("client_id", &client)]).await.0, 200);
    assert_ended(&t, &client, &grant, &access, &refresh).await;

    // Each parameter once (RFC 6749 §3.2): two tokens could be read two ways.
    let (grant, access, refresh) = sign_in().await;
    let (status, _, body) = revoke(&t, &[("token", &access), ("token", "a2g_other"), ("client_id", &client)]).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()["error_description"].as_str()),
        (400, Some("the parameter token is sent more than once"))
    );
    assert_eq!(status_of(&t, &grant).await, "active");
    // The media type's name in any case.
    let resp = t
        .http
        .post(format!("{}/oauth/revoke", t.url))
        .header("content-type", "Application/X-WWW-Form-URLEncoded; charset=UTF-8")
        .body(serde_urlencoded::to_string([("token", access.as_str()), ("client_id", client.as_str())]).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert_ended(&t, &client, &grant, &access, &refresh).await;

    // Malformed requests.
    let (status, _, body) = revoke(&t, &[("client_id", &client)]).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()["error_description"].as_str()),
        (400, Some("token is required"))
    );
    let (status, _, body) = revoke(&t, &[("token", &refresh)]).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()["error_description"].as_str()),
        (400, Some("client_id is required"))
    );
    let (status, json_body) = t
        .send(t.http.post(format!("{}/oauth/revoke", t.url)), Some(json!({"token": refresh, "client_id": client})))
        .await;
    assert_eq!(
        (status, json_body["error"].as_str(), json_body["error_description"].as_str()),
        (400, Some("invalid_request"), Some("send the request as application/x-www-form-urlencoded"))
    );
    // A browser-based host may call it from its own origin.
    let resp = t.http.request(reqwest::Method::OPTIONS, format!("{}/oauth/revoke", t.url)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 204);
    assert_eq!(resp.headers()["access-control-allow-origin"], "*");
}

#[tokio::test]
async fn bad_requests_are_refused_with_oauth_errors() {
    let t = signing_in().await;
    let client = register(&t).await;

    // Registration: only redirect URIs a browser can safely return to.
    for uris in [json!(["http://client.example.com/cb"]), json!(["javascript:alert(1)"]), json!([]), json!("x")] {
        let (status, answer) =
            t.send(t.http.post(format!("{}/oauth/register", t.url)), Some(json!({"redirect_uris": uris}))).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_redirect_uri")), "{uris}");
    }
    for extra in [
        json!({"token_endpoint_auth_method": "client_secret_basic"}),
        // A member that is no text is refused, not read as absent.
        json!({"token_endpoint_auth_method": 5}),
        json!({"client_name": 123}),
    ] {
        let mut body = json!({"redirect_uris": [REDIRECT]});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        let (status, answer) = t.send(t.http.post(format!("{}/oauth/register", t.url)), Some(body)).await;
        assert_eq!((status, answer["error"].as_str()), (400, Some("invalid_client_metadata")), "{extra}");
    }

    // Before the redirect URI is known good: answered here, never redirected.
    let (status, location) = authorize(&t, "client_unknown", &[]).await;
    assert_eq!((status, location.as_str()), (400, ""));
    let (status, location) = authorize(&t, &client, &[("redirect_uri", "http://127.0.0.1:9/elsewhere")]).await;
    assert_eq!((status, location.as_str()), (400, ""));
    // Each parameter once (RFC 6749 §3.1).
    let twice = format!(
        "{}/oauth/authorize?response_type=code&client_id={client}&client_id=other&code_challenge={}&code_challenge_method=S256",
        t.url,
        challenge(VERIFIER)
    );
    let resp = browser().get(twice).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_eq!(
        resp.text().await.unwrap(),
        "This sign-in cannot go on: the parameter client_id is sent more than once (invalid_request).\n"
    );

    // Nor after: until the person saw the consent screen, an error is shown to
    // them, never redirected (open registration would make an open redirector).
    for (extra, error) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("code_challenge", "")], "invalid_request"),
        (vec![("response_type", "token")], "unsupported_response_type"),
        (vec![("scope", "data:cards:read data:secrets:read")], "invalid_scope"),
        (vec![("scope", "data:cards:read\u{a0}data:lists:read")], "invalid_scope"),
        (vec![("resource", "https://other.example/mcp")], "invalid_target"),
        (vec![("state", "s".repeat(1001).as_str())], "invalid_request"),
        (vec![("redirect_uri", "http://127.0.0.1:1@evil.example/callback")], "invalid_request"),
    ] {
        let (status, location) = authorize(&t, &client, &extra).await;
        assert_eq!((status, location.as_str()), (400, ""), "{extra:?}");
        let text = shown(&t, &client, &extra).await;
        assert!(text.ends_with(&format!("({error}).\n")), "{extra:?}: {text}");
    }

    // A denial sends the person back with access_denied.
    let (_, location) = authorize(&t, &client, &[]).await;
    let grant = location.strip_prefix("/_/#grant=").unwrap();
    let (status, denied) = page(&t, &format!("/api/_a2app/grants/{grant}/deny"), None).await;
    assert_eq!(status, 200);
    let back = query(denied["redirect"].as_str().unwrap());
    assert_eq!((back["error"].as_str(), back["state"].as_str()), ("access_denied", "xyz-1"));
    assert!(!back.contains_key("code"));

    // The token endpoint: a form, a known grant type.
    let (status, answer) = trade(&t, &[("grant_type", "password"), ("username", "a")]).await;
    assert_eq!((status, answer["error"].as_str()), (400, Some("unsupported_grant_type")));
    let (status, answer) = trade(&t, &[("grant_type", "authorization_code"), ("code", "a2c_x")]).await;
    assert_eq!((status, answer["error_description"].as_str()), (400, Some("client_id is required")));
    let resp = t
        .http
        .post(format!("{}/oauth/token", t.url))
        .json(&json!({"grant_type": "authorization_code"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let answer: Value = resp.json().await.unwrap();
    assert_eq!(answer["error"], "invalid_request");

    // Another Host than the app answers for is refused everywhere.
    let resp = t
        .http
        .get(format!("{}/.well-known/oauth-authorization-server", t.url))
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 403);
}

#[tokio::test]
async fn registrations_and_sign_ins_are_held_to_the_write_limit() {
    let t = TestApp::with_config(|toml| toml.replace("writes_per_minute = 3000", "writes_per_minute = 2")).await;
    let client = register(&t).await;
    let (status, _) = authorize(&t, &client, &[]).await;
    assert_eq!(status, 303);
    // The bucket of callers without a credential is empty now.
    let body = json!({"redirect_uris": [REDIRECT]});
    let (status, answer) = t.send(t.http.post(format!("{}/oauth/register", t.url)), Some(body)).await;
    assert_eq!((status, answer["error"].as_str()), (429, Some("temporarily_unavailable")), "{answer}");
    let (status, location) = authorize(&t, &client, &[]).await;
    assert_eq!((status, location.as_str()), (429, ""));
}

/// Serves one client metadata document on loopback, as `document` makes it
/// from its own URL; returns that URL and the number of reads.
async fn document_server(
    document: impl Fn(&str) -> Value + Send + Sync + 'static,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/oauth/client.json", listener.local_addr().unwrap());
    let reads = std::sync::Arc::new(AtomicUsize::new(0));
    let (counted, own) = (std::sync::Arc::clone(&reads), url.clone());
    let body = document(&own).to_string();
    let app = axum::Router::new()
        .route(
            "/oauth/client.json",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let body = body.clone();
                async move { ([("content-type", "application/json")], body) }
            }),
        )
        // A redirect to the document: never followed for a client id.
        .route(
            "/moved.json",
            axum::routing::get(|| async { axum::response::Redirect::temporary("/oauth/client.json") }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, reads)
}

#[tokio::test]
async fn a_client_named_by_its_metadata_document_signs_in_without_registering() {
    let t =
        TestApp::with_config(|toml| format!("{toml}\n[mcp]\nsign_in = true\nlocal_client_documents = true\n")).await;
    let (_, meta) = t.send(t.http.get(format!("{}/.well-known/oauth-authorization-server", t.url)), None).await;
    assert_eq!(meta["client_id_metadata_document_supported"], true);
    let (client, reads) = document_server(|own| {
        json!({"client_id": own, "client_name": "VS Code", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none"})
    })
    .await;

    let (status, location) = authorize(&t, &client, &[]).await;
    assert_eq!(status, 303, "{location}");
    assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 1);
    let grant = location.strip_prefix("/_/#grant=").unwrap();
    let (_, pending) = t.call("GET", &format!("/api/_a2app/grants/{grant}"), None).await;
    assert_eq!((pending["agent"].as_str(), pending["client"]["id"].as_str()), (Some("VS Code"), Some(client.as_str())));
    let (status, decided) = page(&t, &format!("/api/_a2app/grants/{grant}/approve"), None).await;
    assert_eq!(status, 200);
    let back = query(decided["redirect"].as_str().unwrap());
    let callback = callback(&t);
    let (status, tokens) = code_for_token(&t, &client, &back["code"], &callback).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tools(&t, tokens["access_token"].as_str().unwrap()).await.0, 200);

    // A client id must be the document's own URL, in its normal form, fetched without a redirect.
    let moved = client.replace("/oauth/client.json", "/moved.json");
    let dotted = client.replace("/oauth/client.json", "/oauth/../oauth/client.json");
    for (id, why) in [(moved.as_str(), "redirects"), (dotted.as_str(), "normal form")] {
        let reads_before = reads.load(std::sync::atomic::Ordering::SeqCst);
        let text = shown(&t, id, &[]).await;
        assert!(text.contains(why) && text.ends_with("(invalid_client).\n"), "{id}: {text}");
        assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), reads_before, "{id}");
    }

    // A document that names another client is refused, before any grant.
    let (liar, _) =
        document_server(|_| json!({"client_id": "https://elsewhere.example/c.json", "redirect_uris": [REDIRECT]}))
            .await;
    let text = shown(&t, &liar, &[]).await;
    assert!(text.contains("does not name itself") && text.ends_with("(invalid_client).\n"), "{text}");
}

#[tokio::test]
async fn a_metadata_document_on_a_private_address_is_never_fetched_by_default() {
    let t = signing_in().await;
    let (client, reads) = document_server(|own| json!({"client_id": own, "redirect_uris": [REDIRECT]})).await;
    let text = shown(&t, &client, &[]).await;
    assert!(text.starts_with("This sign-in cannot go on: cannot read the client's metadata document"), "{text}");
    assert!(text.ends_with("(invalid_client).\n"), "{text}");
    assert_eq!(reads.load(std::sync::atomic::Ordering::SeqCst), 0, "nothing was sent to it");
}
