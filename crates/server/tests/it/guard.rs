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
    let (_, before) = t.call("GET", "/api/collections/cards/records?skipTotal=0", None).await;
    let (status, got) = t.call("POST", "/api/collections/cards/records", Some(body)).await;
    let want: Vec<(String, String)> = want.iter().map(|(c, f)| (c.to_string(), f.to_string())).collect();
    assert_eq!(status, 400, "{got}");
    assert_eq!((got["a2app"].as_bool(), got["ok"].as_bool()), (Some(true), Some(false)));
    assert_eq!(got["code"], want[0].0.as_str());
    assert_eq!(violations(&got), want);
    let (_, after) = t.call("GET", "/api/collections/cards/records", None).await;
    assert_eq!(before["totalItems"], after["totalItems"], "nothing was written");
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
