//! The built-in page at `/_/`: served from the binary, behind the same Host and
//! Origin checks as the API, and never carrying the agent token.

use crate::TestApp;

#[tokio::test]
async fn the_dashboard_is_served_and_bare_underscore_redirects_to_it() {
    let t = TestApp::kanban().await;
    let no_follow = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let resp = no_follow.get(format!("{}/_", t.url)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 303);
    assert_eq!(resp.headers()["location"], "/_/");

    for (path, content_type, marker) in [
        ("/_/", "text/html", "/_/dashboard.js"),
        ("/_/dashboard.js", "text/javascript", "/api/_a2app/receipts"),
        ("/_/dashboard.css", "text/css", ".receipts"),
    ] {
        let resp = t.http.get(format!("{}{path}", t.url)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        let headers = resp.headers().clone();
        assert!(headers["content-type"].to_str().unwrap().starts_with(content_type), "{path}");
        assert!(headers["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"), "{path}");
        let body = resp.text().await.unwrap();
        assert!(body.contains(marker), "{path} lacks {marker}");
        assert!(!body.contains(&t.token), "{path} carries the token");
    }
}

#[tokio::test]
async fn connect_names_where_the_token_is_but_not_the_token() {
    let t = TestApp::kanban().await;
    let (status, body) = t.send(t.http.get(format!("{}/_/connect.json", t.url)), None).await;
    assert_eq!(status, 200, "{body}");
    let token_path = body["tokenPath"].as_str().unwrap();
    assert!(token_path.ends_with(".agent-token"), "{token_path}");
    assert_eq!(std::path::Path::new(token_path), t.app.definition.token_path());
    assert_eq!(body["mcpPath"], "/mcp");
    assert_eq!(body["hasUi"], false, "the test copy has no ui/");
    assert!(!body.to_string().contains(&t.token));
}

#[tokio::test]
async fn the_dashboard_refuses_foreign_origins_and_hosts() {
    let t = TestApp::kanban().await;
    for path in ["/_/", "/_/connect.json"] {
        let url = format!("{}{path}", t.url);
        let (status, body) = t.send(t.http.get(&url).header("Origin", "https://evil.example"), None).await;
        assert_eq!((status, body["code"].as_str()), (403, Some("forbidden_origin")), "{path}");
        let (status, body) = t.send(t.http.get(&url).header("Host", "evil.example"), None).await;
        assert_eq!((status, body["code"].as_str()), (403, Some("forbidden_host")), "{path}");
    }
}
