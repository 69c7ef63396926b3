//! `a2app_index::serve` on a real socket: the JSON search, the page, the
//! refusals in the envelope.

use crate::search::entry;
use a2app_index::store::Store;
use std::sync::Arc;

async fn start(store: Store) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(a2app_index::serve::run(Arc::new(store), listener, async {
        let _ = stopped.await;
    }));
    (base, stop)
}

/// GET `path`: the status, the content type and the body.
async fn check(base: &str, path: &str) -> (u16, String, String) {
    a2app_client::install_tls_provider();
    let response = reqwest::get(format!("{base}{path}")).await.unwrap();
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    (status, kind, response.text().await.unwrap())
}

#[tokio::test]
async fn search_answers_json_and_a_plain_page_with_a_search_box() {
    let store = Store::in_memory().unwrap();
    store.put(&entry(1, "Kanban", "Boards and cards", &[("move_card", "Moves a card")], None)).unwrap();
    store
        .put(&entry(
            2,
            "Evil <script>alert(1)</script>",
            "\u{202e}gnp.exe <img src=x onerror=alert(1)> kanban",
            &[],
            None,
        ))
        .unwrap();
    let (base, _stop) = start(store).await;

    let (status, kind, body) = check(&base, "/search?q=kanban&limit=5").await;
    assert_eq!((status, kind.as_str()), (200, "application/json"));
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let cards: Vec<&str> = json["results"].as_array().unwrap().iter().map(|r| r["card"].as_str().unwrap()).collect();
    assert_eq!(cards, ["https://p1.example.test/mcp/server-card", "https://p2.example.test/mcp/server-card"]);
    assert_eq!(json["results"][0]["proof"]["source"], "well-known");

    let (status, kind, page) = check(&base, "/?q=kanban").await;
    assert_eq!((status, kind.as_str()), (200, "text/html; charset=utf-8"));
    assert!(page.contains(
        "<form action=\"/\" method=\"get\" role=\"search\"><input type=\"search\" name=\"q\" value=\"kanban\""
    ));
    assert!(page.contains("Evil &lt;script&gt;alert(1)&lt;/script&gt;"), "{page}");
    assert!(page.contains("\\u{202e}gnp.exe &lt;img src=x onerror=alert(1)&gt;"), "{page}");
    assert!(!page.contains("<script") && !page.contains("<img") && !page.contains('\u{202e}'), "{page}");
    assert!(page.contains("the publisher says:"));
    let (_, _, empty) = check(&base, "/").await;
    assert!(empty.contains("name=\"q\" value=\"\"") && !empty.contains("<ol>"));
    let (_, _, injected) = check(&base, "/?q=%22%3E%3Cscript%3E").await;
    assert!(injected.contains("value=\"&quot;&gt;&lt;script&gt;\"") && !injected.contains("\"><script>"), "{injected}");

    for (path, message) in [
        ("/search", "q is required"),
        ("/search?q=", "q is required"),
        ("/search?q=a&limit=0", "limit"),
        ("/search?q=a&limit=x", "limit"),
        ("/search?q=a&q=b", "does not fit"),
        ("/search?q=a&drop=1", "does not fit"),
    ] {
        let (status, _, body) = check(&base, path).await;
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            (status, json["code"].as_str(), json["a2app"].as_bool()),
            (400, Some("invalid_query"), Some(true)),
            "{path}"
        );
        assert!(json["message"].as_str().unwrap().contains(message), "{path}: {json}");
    }
}
