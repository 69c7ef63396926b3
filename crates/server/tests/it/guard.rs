//! One test per guard code, asserting status, code, field and the full
//! violations list, and that nothing was written.

use crate::{TestApp, violations};
use serde_json::{Value, json};

/// A card body that passes the guard, given a list id.
fn card(list: &str) -> Value {
    json!({"title": "Eat chicken", "list": list})
}

/// Creates a list and returns its id.
async fn list(t: &TestApp) -> String {
    t.create("lists", json!({"name": "To Do"})).await["id"].as_str().unwrap().to_owned()
}

/// POSTs `body` to cards; expects a 400 whose violations are exactly `want`,
/// and that the number of cards did not change.
async fn refused(t: &TestApp, body: Value, want: &[(&str, &str)]) -> Value {
    refused_text(t, &body.to_string(), want).await
}

/// The number of cards stored; panics unless the count was read.
async fn cards(t: &TestApp) -> i64 {
    let (status, page) = t.call("GET", "/api/collections/cards/records?perPage=1", None).await;
    assert_eq!(status, 200, "{page}");
    page["totalItems"].as_i64().unwrap_or_else(|| panic!("no count in {page}"))
}

/// [`refused`] for a body sent as this exact text (numbers JSON values cannot hold).
async fn refused_text(t: &TestApp, body: &str, want: &[(&str, &str)]) -> Value {
    let before = cards(t).await;
    let req = t
        .http
        .post(format!("{}/api/collections/cards/records", t.url))
        .header("X-LUI-Token", &t.token)
        .header("content-type", "application/json")
        .body(body.to_owned());
    let (status, got) = t.send(req, None).await;
    let want: Vec<(String, String)> = want.iter().map(|(c, f)| (c.to_string(), f.to_string())).collect();
    assert_eq!(status, 400, "{got}");
    assert_eq!((got["a2app"].as_bool(), got["ok"].as_bool()), (Some(true), Some(false)));
    assert_eq!(got["code"], want[0].0.as_str());
    assert_eq!(violations(&got), want);
    assert_eq!(cards(t).await, before, "nothing was written");
    got
}

fn with(mut body: Value, key: &str, value: Value) -> Value {
    body[key] = value;
    body
}

#[tokio::test]
async fn unknown_field_lists_the_valid_fields() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    let got = refused(&t, with(card(&l), "titel", json!("x")), &[("unknown_field", "titel")]).await;
    let message = got["message"].as_str().unwrap();
    assert!(message.contains("title, description, list, due_date"), "{message}");
    assert_eq!(got["got"], "x", "the violation says what was sent");
}

#[tokio::test]
async fn read_only_field() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    refused(&t, with(card(&l), "created", json!("2026-01-01 00:00:00.000Z")), &[("read_only_field", "created")]).await;
}

#[tokio::test]
async fn required_field() {
    let t = TestApp::kanban().await;
    refused(&t, json!({"title": "x"}), &[("required_field", "list")]).await;
}

#[tokio::test]
async fn invalid_string() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    let got = refused(&t, with(card(&l), "title", json!(42)), &[("invalid_string", "title")]).await;
    assert_eq!((got["expected"].as_str(), got["got"].as_i64()), (Some("a string of at most 255 characters"), Some(42)));
}

#[tokio::test]
async fn invalid_number_including_a_fraction_for_an_integer() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    refused(&t, with(card(&l), "points", json!("7")), &[("invalid_number", "points")]).await;
    refused(&t, with(card(&l), "points", json!(2.5)), &[("invalid_number", "points")]).await;
}

#[tokio::test]
async fn out_of_range() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    let got = refused(&t, with(card(&l), "points", json!(101)), &[("out_of_range", "points")]).await;
    assert_eq!(got["expected"], "a whole number between 0 and 100");
}

#[tokio::test]
async fn too_long() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    refused(&t, with(card(&l), "title", json!("x".repeat(256))), &[("too_long", "title")]).await;
}

#[tokio::test]
async fn invalid_boolean() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    refused(&t, with(card(&l), "done", json!("yes")), &[("invalid_boolean", "done")]).await;
}

#[tokio::test]
async fn invalid_date_for_words_garbage_and_numbers() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    for bad in [json!("tomorrow"), json!("not-a-date"), json!(1_700_000_000)] {
        let got = refused(&t, with(card(&l), "due_date", bad.clone()), &[("invalid_date", "due_date")]).await;
        assert_eq!(got["got"], bad);
        assert_eq!(got["expected"], "an ISO 8601 date or datetime");
    }
}

#[tokio::test]
async fn invalid_daykey() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    refused(&t, with(card(&l), "due_day", json!("2026-7-31")), &[("invalid_daykey", "due_day")]).await;
}

#[tokio::test]
async fn invalid_enum_lists_the_values() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    let got = refused(&t, with(card(&l), "priority", json!("asap")), &[("invalid_enum", "priority")]).await;
    assert!(got["message"].as_str().unwrap().contains("none, low, medium, high, urgent"));
}

#[tokio::test]
async fn invalid_ref_malformed_or_missing() {
    let t = TestApp::kanban().await;
    refused(&t, card("not-an-id"), &[("invalid_ref", "list")]).await;
    let got = refused(&t, card("zzzzzzzzzzzzzzz"), &[("invalid_ref", "list")]).await;
    assert!(got["message"].as_str().unwrap().contains("lists has no record with that id"));
}

#[tokio::test]
async fn non_object_and_malformed_bodies() {
    let t = TestApp::kanban().await;
    let (status, got) = t.call("POST", "/api/collections/cards/records", Some(json!("just text"))).await;
    assert_eq!((status, got["code"].as_str()), (400, Some("invalid_json")));
    let req = t
        .http
        .post(format!("{}/api/collections/cards/records", t.url))
        .header("X-LUI-Token", &t.token)
        .body("{\"title\": \"x\",}");
    let (status, got) = t.send(req, None).await;
    assert_eq!((status, got["code"].as_str()), (400, Some("invalid_json")));
    assert!(got["message"].as_str().unwrap().contains("not valid JSON"));
}

#[tokio::test]
async fn a_patch_is_guarded_too() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    let c = t.create("cards", card(&l)).await;
    let path = format!("/api/collections/cards/records/{}", c["id"].as_str().unwrap());
    let (status, got) =
        t.call("PATCH", &path, Some(json!({"title": "", "priority": "x", "id": "aaaaaaaaaaaaaaa"}))).await;
    assert_eq!(status, 400);
    assert_eq!(
        violations(&got),
        [
            ("required_field".to_owned(), "title".to_owned()),
            ("invalid_enum".to_owned(), "priority".to_owned()),
            ("read_only_field".to_owned(), "id".to_owned())
        ]
    );
    let (_, now) = t.call("GET", &path, None).await;
    assert_eq!(now["title"], "Eat chicken");
}

/// A value changed behind the store's back (here a trigger) is caught by the read-back.
#[tokio::test]
async fn a_value_that_did_not_land_is_not_stored_and_rolled_back() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    let db = rusqlite_exec(
        &t,
        "CREATE TRIGGER mangle AFTER INSERT ON cards BEGIN UPDATE cards SET title = 'something else' WHERE id = NEW.id; END",
    );
    let (status, got) = t.call("POST", "/api/collections/cards/records", Some(card(&l))).await;
    assert_eq!(status, 500, "{got}");
    assert_eq!(got["code"], "not_stored");
    assert_eq!(violations(&got), [("not_stored".to_owned(), "title".to_owned())]);
    assert_eq!(got["violations"][0]["got"], "something else");
    let (_, page) = t.call("GET", "/api/collections/cards/records", None).await;
    assert_eq!(page["totalItems"], 0, "the write was rolled back");
    drop(db);
}

/// A storage failure answers a generic 500: the detail stays in the server log.
#[tokio::test]
async fn internal_errors_leak_nothing() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    let _db = rusqlite_exec(
        &t,
        "CREATE TRIGGER boom BEFORE INSERT ON cards BEGIN SELECT RAISE(ABORT, 'secret table detail'); END",
    );
    let (status, got) = t.call("POST", "/api/collections/cards/records", Some(card(&l))).await;
    assert_eq!(status, 500);
    assert_eq!(got["code"], "internal");
    assert_eq!(got["message"], "Something went wrong while processing your request.");
    assert!(!got.to_string().contains("secret"), "{got}");
}

/// Runs SQL on the app's database file from outside, as an operator could.
fn rusqlite_exec(t: &TestApp, sql: &str) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(t.app.definition.data_dir().join("data.db")).expect("open the database");
    db.execute_batch(sql).expect("the statement runs");
    db
}

/// Hardening issue, finding 3: numbers a double cannot hold were stored
/// rounded with 200 (and the receipt repeated the rounded value). Each is
/// refused `out_of_range` by its field, over HTTP, in a form and over MCP;
/// inside a `json` field too, naming where.
#[tokio::test]
async fn numbers_that_would_be_stored_as_others_are_refused_by_field() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    for number in ["18446744073709551617", "123456789012345678901234567890", "9007199254740993.0", "9007199254740993e0"]
    {
        let body = format!(r#"{{"title": "x", "list": "{l}", "estimate": {number}}}"#);
        let got = refused_text(&t, &body, &[("out_of_range", "estimate")]).await;
        assert_eq!(got["got"], number, "the violation quotes the number as sent");
        // An integer field says the same (once), whatever else is wrong.
        let body = format!(r#"{{"title": 7, "list": "{l}", "points": {number}}}"#);
        refused_text(&t, &body, &[("invalid_string", "title"), ("out_of_range", "points")]).await;
        let body = format!(r#"{{"title": "x", "list": "{l}", "meta": {{"totals": [1, {number}]}}}}"#);
        let got = refused_text(&t, &body, &[("out_of_range", "meta")]).await;
        assert!(got["message"].as_str().unwrap().contains("meta.totals[1]"), "{got}");
    }
    // A whole number beyond 2^53 was refused already, and still is.
    refused(&t, with(card(&l), "estimate", json!(9_007_199_254_740_993_u64)), &[("out_of_range", "estimate")]).await;
    // Numbers that read back as sent are stored as sent.
    let body = format!(r#"{{"title": "fine", "list": "{l}", "estimate": 0.1, "meta": {{"big": 9007199254740993}}}}"#);
    let req = t
        .http
        .post(format!("{}/api/collections/cards/records", t.url))
        .header("X-LUI-Token", &t.token)
        .header("content-type", "application/json")
        .body(body);
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let text = resp.text().await.unwrap();
    assert!(text.contains(r#""estimate":0.1"#) && text.contains(r#""big":9007199254740993"#), "{text}");

    // A form's text part is held to what it says.
    let form = reqwest::multipart::Form::new()
        .text("title", "form")
        .text("list", l.clone())
        .text("estimate", "18446744073709551617");
    let before = cards(&t).await;
    let (status, got) = t
        .send(
            t.http
                .post(format!("{}/api/collections/cards/records", t.url))
                .header("X-LUI-Token", &t.token)
                .multipart(form),
            None,
        )
        .await;
    assert_eq!((status, violations(&got)), (400, crate::pairs(&[("out_of_range", "estimate")])), "{got}");
    assert_eq!(cards(&t).await, before);

    // An operation's params are held to it too, by name.
    let req = t
        .http
        .post(format!("{}/api/ops/move_card", t.url))
        .header("X-LUI-Token", &t.token)
        .header("content-type", "application/json")
        .body(format!(r#"{{"card": "abc", "list": "{l}", "position": 9007199254740993.0}}"#));
    let (status, got) = t.send(req, None).await;
    assert_eq!((status, violations(&got)), (400, crate::pairs(&[("out_of_range", "position")])), "{got}");

    // MCP: the create tool names the field; other arguments are refused too.
    let call = |arguments: &str| {
        let body = format!(
            r#"{{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {{"name": "create", "arguments": {arguments},
                "_meta": {{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {{}}}}}}}}"#
        );
        t.http
            .post(format!("{}/mcp", t.url))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "create")
            .header("authorization", format!("Bearer {}", t.token))
            .header("content-type", "application/json")
            .body(body)
    };
    let (status, got) = t
        .send(
            call(&format!(
                r#"{{"entity": "cards", "record": {{"title": "m", "list": "{l}", "estimate": 18446744073709551617}}}}"#
            )),
            None,
        )
        .await;
    assert_eq!(status, 200, "{got}");
    let result = &got["result"];
    assert_eq!(result["isError"], true, "{got}");
    assert_eq!(violations(&result["structuredContent"]), crate::pairs(&[("out_of_range", "estimate")]));
    let (_, got) = t
        .send(call(r#"{"entity": "cards", "record": {}, "idempotencyKey": 123456789012345678901234567890}"#), None)
        .await;
    assert_eq!(got["result"]["isError"], true, "{got}");
    assert_eq!(cards(&t).await, before);
}

/// Hardening issue, finding 7: a bell and a NUL were stored in titles, and a
/// right-to-left override turned the receipt a person reads backwards.
/// Control characters are refused by field; an override is stored as sent
/// (right-to-left text needs its marks) but every receipt shows it escaped.
#[tokio::test]
async fn control_characters_are_refused_and_receipts_show_overrides_escaped() {
    let t = TestApp::kanban().await;
    let l = list(&t).await;
    for title in ["a\u{202e}b\u{7}c", "a\u{0}b", "lone\rreturn"] {
        let got = refused(&t, with(card(&l), "title", json!(title)), &[("invalid_text", "title")]).await;
        assert!(got["message"].as_str().unwrap().contains("control character U+"), "{got}");
    }
    // Several text fields at once, every one named.
    let body = json!({"title": "x\u{1b}[2K", "list": l, "description": "y\u{8}"});
    refused(&t, body, &[("invalid_text", "title"), ("invalid_text", "description")]).await;
    // Tabs and line breaks (CRLF too) are text.
    t.create("cards", json!({"title": "Two\tcolumns", "list": l, "description": "line\r\nline\nline"})).await;

    let stored = t.create("cards", json!({"title": "a\u{202e}b", "list": l})).await;
    assert_eq!(stored["title"], "a\u{202e}b", "the value is stored as sent");
    assert_eq!(stored["_receipt"]["text"], "Added \"a\\u{202e}b\" to To Do");
    let (_, feed) = t.call("GET", "/api/_a2app/receipts?limit=1000", None).await;
    let texts: Vec<&str> = feed["items"].as_array().unwrap().iter().filter_map(|r| r["text"].as_str()).collect();
    assert!(texts.contains(&"Added \"a\\u{202e}b\" to To Do"), "{texts:?}");
    assert!(texts.iter().all(|t| !t.contains('\u{202e}')), "{texts:?}");
}
