//! `a2app index …`, the real binary, against HTTPS publishers on loopback
//! (the index's own harness, `sites`), allowed only by the test-only
//! `A2APP_TEST_ONLY_LOOPBACK_CA`; and the index beside a person's
//! connections, never mixed with them.

#[path = "../../../index/tests/it/sites.rs"]
mod sites;

use crate::client::{Home, kanban};
use crate::fence::{hostile_entry, unfenced};
use crate::gateway::Gateway;
use serde_json::{Value, json};
use sites::{App, Web, catalog};

const CA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../index/tests/tls/ca.pem");

/// A runtime serving the publishers while the test runs the binary.
fn publishers() -> (tokio::runtime::Runtime, Web) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let web = runtime.block_on(Web::start());
    (runtime, web)
}

/// The index as `a2app index list --json` shows it: card, origin, proof source and catalog.
fn listed(home: &Home) -> Vec<Value> {
    let list = home.run(&["--json", "index", "list"]).expect(0).json();
    list["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| json!([e["card"], e["origin"], e["proof"]["source"], e["proof"]["catalog"]]))
        .collect()
}

#[test]
fn the_index_is_crawled_searched_and_listed_through_the_binary() {
    let (_runtime, web) = publishers();
    let host = "127.0.0.1";
    let mut app = App::new("test.boards/kanban", "Boards", "Kanban boards for a small team");
    app.tools = vec![("move_card".into(), "Moves a card to another list".into())];
    web.publish(host, &app);
    // A catalog on another host lists a card of 127.0.0.1's that 127.0.0.1 does not list.
    web.set(host, "/other/card", App::new("test/other", "Other", "Kanban copy").page(&web, host));
    web.set("localhost", "/.well-known/ai-catalog.json", catalog(&[web.url(host, "/other/card")]));
    let home = Home::new();
    let seeds = [web.url(host, "/.well-known/ai-catalog.json"), web.url("localhost", "/.well-known/ai-catalog.json")];
    let crawl = |envs: &[(&str, &str)]| home.run_with(&["index", "crawl", &seeds[0], &seeds[1]], envs, None);

    // Without the test harness's allowance, loopback is out of reach.
    let refused = crawl(&[]).expect(3);
    assert!(refused.out().contains("loopback or private"), "{}", refused.out());
    assert_eq!(listed(&home), Vec::<Value>::new());
    assert!(web.seen().is_empty());

    let done = crawl(&[("A2APP_TEST_ONLY_LOOPBACK_CA", CA)]).expect(0);
    assert!(done.out().contains("1 of 2 cards indexed"), "{}", done.out());
    let card = web.url(host, "/mcp/server-card");
    let origin = web.url(host, "");
    assert_eq!(listed(&home), [json!([card, origin, "well-known", seeds[0]])]);
    assert!(web.seen().iter().all(|s| s.user_agent.starts_with("OpenBot/")));

    let found = home.run(&["--json", "index", "search", "kanban", "move"]).expect(0).json();
    assert_eq!(found["results"].as_array().unwrap().len(), 1, "{found}");
    assert_eq!(found["results"][0]["card"], card.as_str());
    assert_eq!(found["results"][0]["publisherContent"]["tools"][0]["name"], "move_card");
    let text = home.run(&["index", "search", "kanban"]).expect(0).out();
    let (_, fenced) = text.trim_end().split_once('\n').unwrap();
    let body = unfenced(fenced);
    assert!(body.contains(&format!("card: {card}")) && body.contains("proof: listed by"), "{body}");
    home.run(&["index", "search", "nothing-like-it"]).expect(1);

    // The publisher drops its card: the recheck takes it out.
    web.set(host, "/.well-known/ai-catalog.json", catalog(&[]));
    home.run_with(&["index", "recheck"], &[("A2APP_TEST_ONLY_LOOPBACK_CA", CA)], None).expect(0);
    assert_eq!(listed(&home), Vec::<Value>::new());
}

#[test]
fn the_index_serves_json_and_a_page() {
    let home = Home::new();
    let store = a2app_index::store::Store::open(&home.config_dir().join(a2app_index::FILE)).unwrap();
    store.put(&hostile_entry(1, "<b>bold</b>")).unwrap();
    drop(store);
    let port = crate::free_port();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_a2app"));
    home.env(&mut cmd);
    let mut child = cmd
        .args(["index", "serve", &format!("127.0.0.1:{port}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (json, page) = runtime.block_on(async {
        let http = crate::http().build().unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            if let Ok(r) = http.get(format!("{base}/search?q=hostile")).send().await {
                let json: Value = r.json().await.unwrap();
                let page = http.get(format!("{base}/?q=hostile")).send().await.unwrap().text().await.unwrap();
                return (json, page);
            }
            assert!(std::time::Instant::now() < deadline, "a2app index serve did not answer");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    });
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(json["results"][0]["card"], "https://p1.example.test/mcp/server-card");
    assert!(
        page.contains("name=\"q\" value=\"hostile\"") && page.contains("hostile &lt;b&gt;bold&lt;/b&gt;"),
        "{page}"
    );
}

#[test]
fn the_index_is_apart_from_connections_and_never_blocks_them() {
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let path = home.config_dir().join(a2app_index::FILE);
    let store = a2app_index::store::Store::open(&path).unwrap();
    store.put(&hostile_entry(1, "kanban")).unwrap();
    drop(store);
    let before = listed(&home);
    assert_eq!(before.len(), 1);

    // A person adds the app, then removes the connection: the index is as it was.
    home.run(&["add", &server.url, "--allow-local"]).expect(0);
    let connections = std::fs::read_to_string(home.config_dir().join("connections.json")).unwrap();
    assert!(connections.contains(&server.url));
    home.run(&[&server.url, "forget"]).expect(0);
    let connections = std::fs::read_to_string(home.config_dir().join("connections.json")).unwrap();
    assert!(!connections.contains(&server.url), "{connections}");
    assert_eq!(listed(&home), before);
    // Nothing of the index leaked into the connections, nor the other way.
    assert!(!connections.contains("example.test"));

    // The gateway finds it through search_apps, apart from the apps it drives.
    let mut gw = Gateway::legacy(&home, &[], &[]);
    let found = gw.ok("search_apps", json!({"query": "kanban"}));
    assert_eq!(found["results"][0]["card"], "https://p1.example.test/mcp/server-card");
    let apps = gw.ok("apps", json!({}));
    assert_eq!(apps["apps"].as_array().unwrap().len(), 1, "{apps}");
    assert!(!apps.to_string().contains("example.test"), "an index entry is no app the gateway drives: {apps}");
    let refused = gw.refused("search_apps", json!({"query": "kanban", "limit": 500}));
    assert_eq!(refused["field"], "limit");

    // An index that cannot be read fails search_apps alone.
    std::fs::write(&path, b"not a database at all, just bytes that are long enough to be read as a header").unwrap();
    let _ = std::fs::remove_file(path.with_extension("sqlite-wal"));
    let _ = std::fs::remove_file(path.with_extension("sqlite-shm"));
    let mut gw = Gateway::legacy(&home, &[], &[]);
    let broken = gw.refused("search_apps", json!({"query": "kanban"}));
    assert_eq!(broken["code"], "index_unavailable");
    let lists = gw.ok("query", json!({"app": "kanban", "entity": "lists"}));
    assert!(lists["items"].is_array(), "{lists}");
    assert_eq!(gw.ok("apps", json!({}))["apps"][0]["status"], "running");

    // No index at all: an empty answer saying how one is built.
    std::fs::remove_file(&path).unwrap();
    let none = gw.call("search_apps", json!({"query": "kanban"}), false);
    assert_eq!(none["structuredContent"]["results"], json!([]));
    assert!(none["content"][0]["text"].as_str().unwrap().contains("a2app index crawl"));
    assert!(!path.exists(), "a search creates no index");
}
