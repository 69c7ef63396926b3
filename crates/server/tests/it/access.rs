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
