//! The built-in page at `/_/`: served from the binary, behind the same Host and
//! Origin checks as the API, and never carrying the agent token.

use crate::TestApp;

#[tokio::test]
async fn the_dashboard_is_served_and_bare_underscore_redirects_to_it() {
    let t = TestApp::kanban().await;
    let _ = crate::http();
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

/// The consent screen lists grants through `/_/grants.json`: a browser's
/// same-origin GET carries no Origin, only `Sec-Fetch-Site: same-origin`, which
/// stands for the page there; anyone else is refused as on the API.
#[tokio::test]
async fn the_page_lists_grants_by_its_fetch_metadata_and_nobody_else_does() {
    let t = TestApp::kanban().await;
    // A valid Ed25519 public key (base64url, no padding); asking needs no credential.
    let ask = serde_json::json!({
        "publicKey": "Ls_1x0j0KjiEYWHxracjqA8k2G7jsYj95tfxhF5qG3Q",
        "agent": "<b>bot</b>",
        "scopes": ["data:cards:read"],
    });
    let (status, asked) = t.send(t.http.post(format!("{}/api/_a2app/grants", t.url)), Some(ask)).await;
    assert_eq!(status, 200, "{asked}");

    let url = format!("{}/_/grants.json", t.url);
    let (status, listed) = t.send(t.http.get(&url).header("Sec-Fetch-Site", "same-origin"), None).await;
    assert_eq!(status, 200, "{listed}");
    let (_, api) = t.send(t.http.get(format!("{}/api/_a2app/grants", t.url)).header("Origin", &t.url), None).await;
    assert_eq!(listed, api, "the page's list is the API's");
    assert_eq!(listed["items"].as_array().map(|i| i.len()), Some(1));
    assert_eq!(listed["items"][0]["id"], asked["id"]);
    assert_eq!(listed["items"][0]["agent"], "<b>bot</b>");

    let refused = [
        (t.http.get(&url), 403, "forbidden"),
        (t.http.get(&url).header("Sec-Fetch-Site", "same-site"), 403, "forbidden"),
        (t.http.get(&url).header("Sec-Fetch-Site", "cross-site"), 403, "forbidden_origin"),
        (
            t.http.get(&url).header("Sec-Fetch-Site", "same-origin").header("Origin", "https://evil.example"),
            403,
            "forbidden_origin",
        ),
        (
            t.http.get(&url).header("Sec-Fetch-Site", "same-origin").header("Host", "evil.example"),
            403,
            "forbidden_host",
        ),
    ];
    for (i, (req, want_status, want_code)) in refused.into_iter().enumerate() {
        let (status, body) = t.send(req, None).await;
        assert_eq!((status, body["code"].as_str()), (want_status, Some(want_code)), "case {i}: {body}");
    }
}

/// In a multi-user app a grant acts for the user who approves it, and the page
/// signs nobody in: it lists nothing.
#[tokio::test]
async fn a_multi_user_apps_page_lists_no_grants() {
    let t =
        TestApp::with_config(|toml| toml.replace("auth_mode = \"single-user\"", "auth_mode = \"multi-user\"")).await;
    let req = t.http.get(format!("{}/_/grants.json", t.url)).header("Sec-Fetch-Site", "same-origin");
    let (status, body) = t.send(req, None).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("forbidden")), "{body}");
}
