//! The Host, Origin and token rules, with real requests.

use crate::TestApp;
use serde_json::json;

#[tokio::test]
async fn writes_need_the_token_or_the_own_origin() {
    let t = TestApp::kanban().await;
    let url = format!("{}/api/collections/lists/records", t.url);
    let port = t.url.rsplit(':').next().unwrap().to_owned();

    let (status, body) = t.send(t.http.post(&url), Some(json!({"name": "x"}))).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
    let (status, body) = t.send(t.http.post(&url).header("X-LUI-Token", "wrong"), Some(json!({"name": "x"}))).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
    let (status, _) = t.send(t.http.post(&url).header("X-A2App-Token", &t.token), Some(json!({"name": "x"}))).await;
    assert_eq!(status, 200);
    let own = format!("http://localhost:{port}");
    let (status, _) = t.send(t.http.post(&url).header("Origin", own), Some(json!({"name": "y"}))).await;
    assert_eq!(status, 200);
    let (status, body) =
        t.send(t.http.post(&url).header("Origin", "https://evil.example"), Some(json!({"name": "z"}))).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("forbidden_origin")));
    // A foreign origin cannot read either, and the token does not help it.
    let (status, _) =
        t.send(t.http.get(&url).header("Origin", "https://evil.example").header("X-LUI-Token", &t.token), None).await;
    assert_eq!(status, 403);
    // Reads on loopback need nothing.
    let (status, page) = t.send(t.http.get(&url), None).await;
    assert_eq!((status, page["totalItems"].as_i64()), (200, Some(2)));
}

#[tokio::test]
async fn unknown_hosts_are_refused_by_name() {
    let t = TestApp::kanban().await;
    let (status, body) =
        t.send(t.http.get(format!("{}/api/_a2app", t.url)).header("Host", "evil.example:80"), None).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("forbidden_host")));
    assert_eq!(body["host"], "evil.example");
    assert!(body["message"].as_str().unwrap().contains("allowed_hosts"));
}

/// What a browser on another site sends: a preflight, then (if it were let
/// through) the write itself with its Origin and fetch metadata.
#[tokio::test]
async fn a_foreign_page_in_a_browser_is_refused() {
    let t = TestApp::kanban().await;
    let url = format!("{}/api/collections/lists/records", t.url);
    let preflight = t
        .http
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "https://evil.example")
        .header("Access-Control-Request-Method", "POST")
        .header("Access-Control-Request-Headers", "content-type")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 403);
    assert!(preflight.headers().get("access-control-allow-origin").is_none());
    let write = t
        .http
        .post(&url)
        .header("Origin", "https://evil.example")
        .header("Sec-Fetch-Site", "cross-site")
        .header("Sec-Fetch-Mode", "cors")
        .header("content-type", "text/plain")
        .body(json!({"name": "planted"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(write.status().as_u16(), 403);
    assert!(write.headers().get("access-control-allow-origin").is_none());
    let body: serde_json::Value = write.json().await.unwrap();
    assert_eq!(body["code"], "forbidden_origin");
    let (_, page) = t.call("GET", "/api/collections/lists/records", None).await;
    assert_eq!(page["totalItems"], 0, "nothing was written");
    // A `no-cors` GET from another site carries no Origin; fetch metadata gives it away.
    let read = t
        .http
        .get(&url)
        .header("Sec-Fetch-Site", "cross-site")
        .header("Sec-Fetch-Mode", "no-cors")
        .send()
        .await
        .unwrap();
    assert_eq!(read.status().as_u16(), 403);
    let same = t.http.get(&url).header("Sec-Fetch-Site", "same-origin").send().await.unwrap();
    assert_eq!(same.status().as_u16(), 200);
}

#[tokio::test]
async fn an_allowed_origin_gets_cors_and_may_write() {
    let t = TestApp::with_config(|toml| {
        toml.replace("allowed_origins = []", "allowed_origins = [\"https://board.example.com\"]")
    })
    .await;
    let url = format!("{}/api/collections/lists/records", t.url);
    let preflight = t
        .http
        .request(reqwest::Method::OPTIONS, &url)
        .header("Origin", "https://board.example.com")
        .header("Access-Control-Request-Method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 204);
    assert_eq!(preflight.headers()["access-control-allow-origin"], "https://board.example.com");
    let req = t.http.post(&url).header("Origin", "https://board.example.com");
    let (status, created) = t.send(req, Some(json!({"name": "from the allowed page"}))).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["_receipt"]["caller"], "own_ui");
}

#[tokio::test]
async fn through_a_deployed_host_only_that_hosts_own_origin_is_the_page() {
    let t =
        TestApp::with_config(|toml| toml.replace("allowed_hosts = []", "allowed_hosts = [\"app.example.com\"]")).await;
    let url = format!("{}/api/collections/lists/records", t.url);
    let port = t.url.rsplit(':').next().unwrap().to_owned();
    // A loopback origin sent to the public name: any program far away could send it.
    let forged = format!("http://localhost:{port}");
    let req = t.http.post(&url).header("host", "app.example.com").header("origin", &forged);
    let (status, body) = t.send(req, Some(json!({"name": "x"}))).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("forbidden_origin")));
    // The page served under that name is its own.
    let req = t.http.post(&url).header("host", "app.example.com").header("origin", "https://app.example.com");
    let (status, body) = t.send(req, Some(json!({"name": "y"}))).await;
    assert_eq!((status, body["name"].as_str()), (200, Some("y")));
    // Its page reaches MCP too.
    let (status, _) = crate::mcp::rpc(
        &t,
        &[("host", "app.example.com"), ("origin", "https://app.example.com")],
        "tools/list",
        json!({}),
    )
    .await;
    assert_eq!(status, 200);
    // And on loopback, the loopback page still is.
    let (status, _) = t.send(t.http.post(&url).header("origin", &forged), Some(json!({"name": "z"}))).await;
    assert_eq!(status, 200);
}

/// A credential header that is there but cannot be read is refused, never
/// taken for absent (an unreadable Authorization made a user anonymous);
/// an agent's name is UTF-8 text, kept whole or refused, never cut.
#[tokio::test]
async fn unreadable_credential_headers_are_refused_and_agent_names_kept_whole() {
    let t = TestApp::kanban().await;
    let raw = |bytes: &[u8]| reqwest::header::HeaderValue::from_bytes(bytes).unwrap();
    let url = format!("{}/api/collections/lists/records", t.url);
    for (name, code, status) in [
        ("Authorization", "unauthorized", 401),
        ("X-LUI-Token", "unauthorized", 401),
        ("Origin", "forbidden_origin", 403),
        ("Host", "forbidden_host", 403),
    ] {
        let req = t.http.get(&url).header(name, raw(b"caf\xe9"));
        let (got, body) = t.send(req, None).await;
        assert_eq!((got, body["code"].as_str()), (status, Some(code)), "{name}: {body}");
        assert!(!body.to_string().contains('\u{fffd}'), "the bytes are not echoed: {body}");
    }
    // The public documents read the Host alone: another unreadable header is
    // neither read nor refused there.
    let req = t.http.get(format!("{}/.well-known/ai-catalog.json", t.url)).header("Authorization", raw(b"caf\xe9"));
    let (status, catalog) = t.send(req, None).await;
    assert_eq!(status, 200, "{catalog}");

    let write = |agent: reqwest::header::HeaderValue| {
        let req = t.http.post(&url).header("X-LUI-Token", &t.token).header("X-LUI-Agent", agent);
        t.send(req, Some(json!({"name": "L"})))
    };
    let (status, list) = write(raw("Zoë's bot".as_bytes())).await;
    assert_eq!((status, list["_receipt"]["agent"].as_str()), (200, Some("Zoë's bot")), "{list}");
    let (status, body) = write(raw("x".repeat(101).as_bytes())).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")), "{body}");
    let (status, body) = write(raw(b"not \xff utf-8")).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")), "{body}");
    let (status, body) = write(raw("hidden\u{202e}name".as_bytes())).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")), "{body}");
    let (_, page) = t.call("GET", "/api/collections/lists/records", None).await;
    assert_eq!(page["totalItems"], 1, "only the well-named write was stored");
    let (status, _) = write(raw("x".repeat(100).as_bytes())).await;
    assert_eq!(status, 200, "100 characters is a name");
}
