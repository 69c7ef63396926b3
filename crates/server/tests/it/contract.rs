//! The A2App contract documents and guarantees: identity, describe, whoami,
//! receipts, idempotency, the agent log and rate limits.

use crate::TestApp;
use serde_json::{Value, json};

#[tokio::test]
async fn identity_names_the_app_its_contract_and_its_clock() {
    let t = TestApp::kanban().await;
    let (status, id) = t.send(t.http.get(format!("{}/api/_a2app", t.url)), None).await;
    assert_eq!(status, 200);
    assert_eq!(id["a2app"], true);
    assert_eq!(id["protocol"], "1.0");
    assert_eq!(id["app"], json!({"id": "kanban", "name": "Kanban Board", "pbVersion": "0.40.6"}));
    assert_eq!(id["serverNow"], "2026-07-30 09:15:00.000Z");
    assert_eq!(id["serverTzOffsetMinutes"], 0);
    assert_eq!(id["schemaVersion"], t.app.schema_version.as_str());
    assert!(id["schemaVersion"].as_str().unwrap().starts_with("sv_"));
}

#[tokio::test]
async fn describe_is_generated_from_the_schema_and_has_parts() {
    let t = TestApp::kanban().await;
    let (status, d) = t.call("GET", "/api/_a2app/describe", None).await;
    assert_eq!(status, 200);
    assert_eq!(d["entities"].as_object().unwrap().keys().collect::<Vec<_>>(), ["lists", "members", "cards"]);
    let cards = &d["entities"]["cards"];
    assert_eq!(cards["label"], "title");
    assert_eq!(cards["records"], "/api/collections/cards/records");
    assert_eq!(cards["fields"]["due_day"], json!({"type": "string", "format": "YYYY-MM-DD"}));
    assert_eq!(cards["fields"]["priority"]["values"], json!(["none", "low", "medium", "high", "urgent"]));
    assert_eq!(cards["systemFields"]["id"]["readOnly"], true);
    let conventions: Vec<&str> = d["conventions"].as_object().unwrap().keys().map(String::as_str).collect();
    for topic in
        ["preferOperations", "confirmDestructive", "writeLikeTheUi", "resolveLabels", "dates", "neverApproximate"]
    {
        assert!(conventions.contains(&topic), "{topic}");
    }
    let (status, part) = t.call("GET", "/api/_a2app/describe/cards/title", None).await;
    assert_eq!((status, part), (200, json!({"type": "string", "required": true, "max": 255})));
    let (status, part) = t.call("GET", "/api/_a2app/describe/lists", None).await;
    assert_eq!((status, part["label"].as_str()), (200, Some("name")));
    let (status, part) = t.call("GET", "/api/_a2app/describe/operations", None).await;
    assert_eq!((status, part.as_array().map(Vec::len)), (200, Some(5)));
    for path in ["operations/move_card", "operations.move_card"] {
        let (status, part) = t.call("GET", &format!("/api/_a2app/describe/{path}"), None).await;
        assert_eq!((status, part["executor"].as_str()), (200, Some("crud")), "{path}");
    }
    let (status, body) = t.call("GET", "/api/_a2app/describe/operations/move.card", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("unknown_operation")),
        "a dot is part of an operation's name"
    );
    let (status, part) = t.call("GET", "/api/_a2app/describe/requests", None).await;
    assert_eq!((status, part[0]["name"].as_str()), (200, Some("summarise_board")), "{part}");
    let (status, body) = t.call("GET", "/api/_a2app/describe/boards", None).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("unknown_entity")));
    let (status, body) = t.call("GET", "/api/_a2app/describe/cards/nope", None).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));
}

#[tokio::test]
async fn whoami_tells_each_kind_of_caller_apart() {
    let t = TestApp::kanban().await;
    let (_, me) = t.call("GET", "/api/_a2app/whoami", None).await;
    assert_eq!((me["kind"].as_str(), me["agent"].as_str()), (Some("agent"), Some("tests")));
    assert_eq!(me["may"], json!({"read": true, "write": true, "operations": true}));
    let (_, anon) = t.send(t.http.get(format!("{}/api/_a2app/whoami", t.url)), None).await;
    assert_eq!(anon["kind"], "anonymous");
    assert_eq!(anon["may"]["write"], false);
    assert!(anon["hint"].as_str().unwrap().contains("X-LUI-Token"));
    let port = t.url.rsplit(':').next().unwrap();
    let (_, ui) = t
        .send(
            t.http.get(format!("{}/api/_a2app/whoami", t.url)).header("Origin", format!("http://127.0.0.1:{port}")),
            None,
        )
        .await;
    assert_eq!(ui["kind"], "own_ui");
}

#[tokio::test]
async fn receipts_are_listed_and_agent_writes_are_logged_without_values() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let card = t.create("cards", json!({"title": "Eat chicken", "list": list["id"], "due_date": "2026-07-31"})).await;
    assert_eq!(card["_receipt"]["text"], "Added \"Eat chicken\" to To Do, due Fri 31 Jul");
    assert_eq!(card["_receipt"]["fields"]["due_date"], "2026-07-31 00:00:00.000Z");
    let path = format!("/api/collections/cards/records/{}", card["id"].as_str().unwrap());
    let (_, updated) = t.call("PATCH", &path, Some(json!({"done": true}))).await;
    assert_eq!(updated["_receipt"]["text"], "Updated \"Eat chicken\": done → yes");
    let (status, _) = t.call("DELETE", &path, None).await;
    assert_eq!(status, 204);

    let (status, r) = t.call("GET", "/api/_a2app/receipts?since=2026-01-01", None).await;
    assert_eq!(status, 200);
    let texts: Vec<&str> = r["items"].as_array().unwrap().iter().map(|i| i["text"].as_str().unwrap()).collect();
    assert_eq!(
        texts,
        [
            "Added \"To Do\" to lists",
            "Added \"Eat chicken\" to To Do, due Fri 31 Jul",
            "Updated \"Eat chicken\": done → yes",
            "Deleted \"Eat chicken\" from cards"
        ]
    );
    let (_, later) = t.call("GET", "/api/_a2app/receipts?since=2026-07-31", None).await;
    assert_eq!(later["items"], json!([]));
    let (status, bad) = t.call("GET", "/api/_a2app/receipts?since=yesterday", None).await;
    assert_eq!((status, bad["code"].as_str()), (400, Some("invalid_query")));
    // A limit that is not a count refuses the query rather than dropping `since` with it.
    for path in ["/api/_a2app/receipts?since=2026-07-31&limit=-1", "/api/_a2app/actions?limit=abc"] {
        let (status, bad) = t.call("GET", path, None).await;
        assert_eq!((status, bad["code"].as_str()), (400, Some("invalid_query")), "{path}: {bad}");
    }

    let (status, actions) = t.call("GET", "/api/_a2app/actions", None).await;
    assert_eq!(status, 200);
    let items = actions["items"].as_array().unwrap();
    assert_eq!(items.len(), 4);
    assert_eq!(items[1]["agent"], "tests");
    assert_eq!(items[1]["action"], "create");
    assert_eq!(items[1]["fields"], json!(["title", "list", "due_date", "priority", "position"]));
    let log = std::fs::read_to_string(t.app.definition.logs_dir().join("agent-actions.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 4);
    assert!(!log.contains("2026-07-31 00:00:00.000Z"), "field values are not logged");
    // `since` and `limit` hold for the agent log as for receipts: the first
    // `limit` entries after `since`; a limit out of 1 to 1,000 is refused.
    let (_, later) = t.call("GET", "/api/_a2app/actions?since=2026-07-31", None).await;
    assert_eq!(later["items"], json!([]));
    let (_, newest) = t.call("GET", "/api/_a2app/actions?limit=1", None).await;
    assert_eq!(newest["items"][0]["action"], "delete", "without since, the newest");
    for path in ["receipts", "actions"] {
        for limit in ["0", "1001"] {
            let (status, bad) = t.call("GET", &format!("/api/_a2app/{path}?limit={limit}"), None).await;
            assert_eq!((status, bad["code"].as_str()), (400, Some("invalid_query")), "{path} {limit}: {bad}");
        }
    }
    let (status, bad) = t.call("GET", "/api/_a2app/actions?since=yesterday", None).await;
    assert_eq!((status, bad["code"].as_str()), (400, Some("invalid_query")));
    // The log is read with the token only.
    let (status, _) = t.send(t.http.get(format!("{}/api/_a2app/actions", t.url)), None).await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn an_idempotency_key_writes_once() {
    let t = TestApp::kanban().await;
    let post = |key: &'static str, name: &'static str| {
        let req = t
            .http
            .post(format!("{}/api/collections/lists/records", t.url))
            .header("X-LUI-Token", &t.token)
            .header("Idempotency-Key", key);
        t.send(req, Some(json!({"name": name})))
    };
    let (status, first) = post("k-1", "A").await;
    assert_eq!(status, 200);
    let (status, again) = post("k-1", "A").await;
    assert_eq!((status, again["code"].as_str()), (409, Some("duplicate_request")));
    assert_eq!(again["id"], first["id"]);
    assert!(again["message"].as_str().unwrap().contains(first["id"].as_str().unwrap()));
    // The key is scoped to the entity.
    let req = t
        .http
        .post(format!("{}/api/collections/members/records", t.url))
        .header("X-LUI-Token", &t.token)
        .header("Idempotency-Key", "k-1");
    let (status, _) = t.send(req, Some(json!({"name": "Ann"}))).await;
    assert_eq!(status, 200);
    // After 24 hours the key is free again.
    t.clock.set("2026-07-31T09:15:01Z".parse().unwrap());
    let (status, _) = post("k-1", "A").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn concurrent_requests_with_one_key_create_exactly_one_record() {
    let t = TestApp::kanban().await;
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let req = t
            .http
            .post(format!("{}/api/collections/lists/records", t.url))
            .header("X-LUI-Token", &t.token)
            .header("Idempotency-Key", "same-key")
            .header("content-type", "application/json")
            .body(json!({"name": "Once"}).to_string());
        tasks.push(tokio::spawn(async move { req.send().await.unwrap().status().as_u16() }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 409).count(), 49, "{statuses:?}");
    let (_, page) = t.call("GET", "/api/collections/lists/records", None).await;
    assert_eq!(page["totalItems"], 1);
}

#[tokio::test]
async fn rate_limits_answer_429_with_retry_after() {
    let t = TestApp::with_config(|toml| toml.replace("writes_per_minute = 3000", "writes_per_minute = 2")).await;
    for name in ["a", "b"] {
        t.create("lists", json!({"name": name})).await;
    }
    let resp = t
        .http
        .post(format!("{}/api/collections/lists/records", t.url))
        .header("X-LUI-Token", &t.token)
        .body(json!({"name": "c"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 429);
    assert_eq!(resp.headers()["retry-after"], "30");
    let body: Value = resp.json().await.unwrap();
    assert_eq!((body["code"].as_str(), body["retryAfter"].as_u64()), (Some("rate_limited"), Some(30)));
    // Reads are not limited by the write bucket.
    let (status, _) = t.call("GET", "/api/collections/lists/records", None).await;
    assert_eq!(status, 200);
}

/// A feed page ends on a millisecond's last entry, so a reader passing the
/// last `at` it saw as the next `since` skips nothing, in receipts and in
/// the agent log alike.
#[tokio::test]
async fn a_feed_page_never_splits_a_millisecond() {
    let t = TestApp::kanban().await;
    for name in ["a", "b", "c"] {
        t.create("lists", json!({"name": name})).await;
    }
    t.clock.set("2026-07-30T09:15:00.001Z".parse().unwrap());
    for name in ["d", "e"] {
        t.create("lists", json!({"name": name})).await;
    }
    t.clock.set("2026-07-30T09:15:00.002Z".parse().unwrap());
    t.create("lists", json!({"name": "f"})).await;
    for (feed, label) in [("receipts", "text"), ("actions", "receipt")] {
        let mut since = "2026-07-30".to_owned();
        let mut pages = Vec::new();
        loop {
            let (status, page) = t.call("GET", &format!("/api/_a2app/{feed}?since={since}&limit=2"), None).await;
            assert_eq!(status, 200, "{page}");
            let items = page["items"].as_array().unwrap().clone();
            let Some(last) = items.last() else { break };
            since = last["at"].as_str().unwrap().replace(' ', "T");
            pages.push(items.iter().map(|i| i[label].as_str().unwrap().replace("Added ", "")).collect::<Vec<_>>());
        }
        let names = |page: &[&str]| page.iter().map(|n| format!("\"{n}\" to lists")).collect::<Vec<_>>();
        assert_eq!(pages, [names(&["a", "b", "c"]), names(&["d", "e"]), names(&["f"])], "{feed}");
    }
}
