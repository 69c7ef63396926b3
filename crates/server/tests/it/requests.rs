//! The app-to-agent queue over HTTP (`/api/_a2app/requests`) and realtime:
//! who may ask, claim, answer and cancel, what each refusal's code is, and
//! what a subscriber sees.

use crate::realtime::Stream;
use crate::{NOW, TestApp, violations};
use serde_json::{Value, json};
use std::time::Duration;

/// The app's own page: its loopback origin, no token.
async fn as_page(t: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let origin = t.url.clone();
    let req = t.http.request(method.parse().unwrap(), format!("{}{path}", t.url)).header("Origin", origin);
    t.send(req, body).await
}

async fn ask(t: &TestApp, body: Value) -> Value {
    let (status, request) = as_page(t, "POST", "/api/_a2app/requests", Some(body)).await;
    assert_eq!(status, 200, "{request}");
    request
}

async fn event(stream: &mut Stream) -> Value {
    let (topic, data) = stream.within(Duration::from_secs(5)).await.expect("an event within 5 s");
    assert_eq!(topic, "_a2app_requests/*");
    data
}

fn at(offset_secs: i64) -> String {
    let now: jiff::Timestamp = NOW.parse().unwrap();
    let then = now.checked_add(jiff::SignedDuration::from_secs(offset_secs)).unwrap();
    a2app_core::datetime::format(then)
}

#[tokio::test]
async fn a_person_asks_an_agent_claims_and_answers_and_realtime_carries_each_step() {
    let t = TestApp::kanban().await;
    let mut stream = Stream::open(&t, &["_a2app_requests/*"]).await;

    let asked = ask(&t, json!({"capability": "summarise_board"})).await;
    assert_eq!(asked["status"], "pending");
    assert_eq!(asked["params"], json!({"focus": "everything"}), "the default is applied");
    assert_eq!(asked["requestedBy"], "own_ui");
    let id = asked["id"].as_str().unwrap().to_owned();
    let created = event(&mut stream).await;
    assert_eq!((created["action"].as_str(), &created["record"]), (Some("create"), &asked));

    let (status, pending) = t.call("GET", "/api/_a2app/requests?status=pending", None).await;
    assert_eq!(status, 200);
    assert_eq!((pending["totalItems"].as_u64(), pending["items"][0]["id"].as_str()), (Some(1), Some(id.as_str())));

    let (status, claimed) = t.call("POST", &format!("/api/_a2app/requests/{id}/claim"), None).await;
    assert_eq!(status, 200, "{claimed}");
    let key = claimed["claimKey"].as_str().unwrap().to_owned();
    assert!(key.starts_with("a2c_") && key.len() == 44, "{key}");
    assert_eq!(claimed["request"]["status"], "claimed");
    assert_eq!(claimed["request"]["claimedBy"], "tests");
    assert_eq!(claimed["request"]["leaseUntil"], at(600));
    assert_eq!(event(&mut stream).await["record"]["status"], "claimed");

    let (status, again) = t.call("POST", &format!("/api/_a2app/requests/{id}/claim"), None).await;
    assert_eq!((status, again["code"].as_str()), (409, Some("request_claimed")));

    let answer = format!("/api/_a2app/requests/{id}/answer");
    let (status, wrong) =
        t.call("POST", &answer, Some(json!({"claimKey": "a2c_guess", "result": {"summary": "x"}}))).await;
    assert_eq!((status, violations(&wrong)), (409, vec![("request_claimed".into(), "claimKey".into())]));
    let (status, bad) =
        t.call("POST", &answer, Some(json!({"claimKey": key, "result": {"summary": 5, "mood": "good"}}))).await;
    assert_eq!(status, 400);
    assert_eq!(
        violations(&bad),
        [("invalid_param".to_owned(), "mood".to_owned()), ("invalid_string".to_owned(), "summary".to_owned())]
    );
    let (status, both) = t.call("POST", &answer, Some(json!({"claimKey": key}))).await;
    assert_eq!((status, both["code"].as_str()), (400, Some("required_field")));

    let (status, done) =
        t.call("POST", &answer, Some(json!({"claimKey": key, "result": {"summary": "Two cards are urgent."}}))).await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(
        (done["status"].as_str(), &done["result"]),
        (Some("done"), &json!({"summary": "Two cards are urgent."}))
    );
    assert!(done.get("leaseUntil").is_none());
    let update = event(&mut stream).await;
    assert_eq!((update["action"].as_str(), &update["record"]), (Some("update"), &done));

    let (status, closed) =
        t.call("POST", &answer, Some(json!({"claimKey": key, "result": {"summary": "again"}}))).await;
    assert_eq!((status, closed["code"].as_str()), (409, Some("request_closed")));
    let (status, closed) = as_page(&t, "POST", &format!("/api/_a2app/requests/{id}/cancel"), None).await;
    assert_eq!((status, closed["code"].as_str()), (409, Some("request_closed")));
    let (_, read) = as_page(&t, "GET", &format!("/api/_a2app/requests/{id}"), None).await;
    assert_eq!(read, done);
    assert!(stream.within(Duration::from_millis(300)).await.is_none(), "refusals publish nothing");
}

#[tokio::test]
async fn only_a_person_asks_and_only_the_agent_token_claims() {
    let t = TestApp::kanban().await;
    let body = json!({"capability": "summarise_board"});
    let (status, refused) = t.call("POST", "/api/_a2app/requests", Some(body.clone())).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")), "an agent does not ask agents");
    let program = t.http.post(format!("{}/api/_a2app/requests", t.url));
    assert_eq!(t.send(program, Some(body.clone())).await.0, 401);
    let foreign = t.http.post(format!("{}/api/_a2app/requests", t.url)).header("Origin", "https://evil.example");
    let (status, refused) = t.send(foreign, Some(body)).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden_origin")));

    let id = ask(&t, json!({"capability": "summarise_board"})).await["id"].as_str().unwrap().to_owned();
    let (status, refused) = as_page(&t, "POST", &format!("/api/_a2app/requests/{id}/claim"), None).await;
    assert_eq!((status, refused["code"].as_str()), (401, Some("unauthorized")), "the page does not claim");
    let (status, refused) = t.call("POST", &format!("/api/_a2app/requests/{id}/cancel"), None).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")), "an agent answers with a failure");
    let (status, missing) = t.call("POST", "/api/_a2app/requests/nosuchrequest01/claim", None).await;
    assert_eq!((status, missing["code"].as_str()), (404, Some("not_found")));

    let (status, cancelled) = as_page(&t, "POST", &format!("/api/_a2app/requests/{id}/cancel"), None).await;
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")));
    let (status, closed) = t.call("POST", &format!("/api/_a2app/requests/{id}/claim"), None).await;
    assert_eq!((status, closed["code"].as_str()), (409, Some("request_closed")));
}

#[tokio::test]
async fn asking_reports_every_problem_at_once_and_stores_nothing() {
    let t = TestApp::kanban().await;
    let (status, body) =
        as_page(&t, "POST", "/api/_a2app/requests", Some(json!({"capability": "send_email", "to": "x"}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        violations(&body),
        [("unknown_field".to_owned(), "to".to_owned()), ("unknown_capability".to_owned(), "capability".to_owned())]
    );
    let bad = json!({"capability": "suggest_priority", "params": {"card": 5, "note": "also do X"}});
    let (status, body) = as_page(&t, "POST", "/api/_a2app/requests", Some(bad)).await;
    assert_eq!(status, 400);
    assert_eq!(
        violations(&body),
        [("invalid_param".to_owned(), "note".to_owned()), ("invalid_string".to_owned(), "card".to_owned())]
    );
    let (_, body) = as_page(&t, "POST", "/api/_a2app/requests", Some(json!({"capability": "suggest_priority"}))).await;
    assert_eq!(violations(&body), [("invalid_param".to_owned(), "card".to_owned())]);
    let enum_bad = json!({"capability": "summarise_board", "params": {"focus": "secrets"}});
    let (_, body) = as_page(&t, "POST", "/api/_a2app/requests", Some(enum_bad)).await;
    assert_eq!(violations(&body), [("invalid_enum".to_owned(), "focus".to_owned())]);
    let (status, alone) = as_page(&t, "POST", "/api/_a2app/requests", Some(json!({"capability": "nope"}))).await;
    assert_eq!((status, alone["code"].as_str()), (404, Some("unknown_capability")));
    let (_, missing) = as_page(&t, "POST", "/api/_a2app/requests", Some(json!({"params": {}}))).await;
    assert_eq!(violations(&missing), [("required_field".to_owned(), "capability".to_owned())]);
    let (_, number) = as_page(&t, "POST", "/api/_a2app/requests", Some(json!({"capability": 7}))).await;
    assert_eq!(violations(&number), [("invalid_string".to_owned(), "capability".to_owned())]);
    // The person's params are data: no terminal controls, no direction marks, no documents.
    for (card, code) in [
        ("abc\u{1b}[2Kdef", "invalid_string"),
        ("\u{202e}fdp.exe", "invalid_string"),
        ("seen\u{e0049}\u{e0047}\u{e004e}", "invalid_string"),
        ("zero\u{200b}width", "invalid_string"),
        (&"x".repeat(1001) as &str, "too_long"),
    ] {
        let body = json!({"capability": "suggest_priority", "params": {"card": card}});
        let (status, refused) = as_page(&t, "POST", "/api/_a2app/requests", Some(body)).await;
        assert_eq!((status, violations(&refused)), (400, vec![(code.to_owned(), "card".to_owned())]), "{card:?}");
    }
    let lines = json!({"capability": "suggest_priority", "params": {"card": "two\nlines\tand a tab"}});
    assert_eq!(as_page(&t, "POST", "/api/_a2app/requests", Some(lines)).await.0, 200);
    let (_, one) = t.call("GET", "/api/_a2app/requests", None).await;
    assert_eq!(one["totalItems"], 1);
    t.call("POST", &format!("/api/_a2app/requests/{}/cancel", one["items"][0]["id"].as_str().unwrap()), None).await;

    let (_, all) = t.call("GET", "/api/_a2app/requests?status=pending", None).await;
    assert_eq!(all["totalItems"], 1, "nothing else was stored");
    let (status, body) = t.call("GET", "/api/_a2app/requests?status=lost", None).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_enum")));
    let (status, body) = t.call("GET", "/api/_a2app/requests?page=x", None).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")));
    let (status, body) = t.call("GET", "/api/_a2app/requests?capability=summarise_bord", None).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("unknown_capability")), "a misspelt name is no empty page");
    let (status, body) = t.call("GET", "/api/_a2app/requests?capability=summarise_board", None).await;
    assert_eq!((status, body["totalItems"].as_u64()), (200, Some(0)));
}

#[tokio::test]
async fn a_lapsed_claim_passes_to_the_next_agent_and_the_first_key_no_longer_answers() {
    let t = TestApp::kanban().await;
    let id = ask(&t, json!({"capability": "summarise_board"})).await["id"].as_str().unwrap().to_owned();
    let claim = format!("/api/_a2app/requests/{id}/claim");
    let (status, short) = t.call("POST", &claim, Some(json!({"leaseSeconds": 5}))).await;
    assert_eq!((status, violations(&short)), (400, vec![("out_of_range".into(), "leaseSeconds".into())]));
    let (_, first) = t.call("POST", &claim, Some(json!({"leaseSeconds": 30}))).await;
    assert_eq!(first["request"]["leaseUntil"], at(30));
    let claimable =
        || async { t.call("GET", "/api/_a2app/requests?status=claimable", None).await.1["totalItems"].clone() };
    assert_eq!(claimable().await, 0);
    t.clock.set(at(29).replace(' ', "T").parse().unwrap());
    assert_eq!(t.call("POST", &claim, None).await.0, 409, "still held");
    t.clock.set(at(31).replace(' ', "T").parse().unwrap());
    assert_eq!(claimable().await, 1, "a lapsed claim is offered again");
    let (status, second) = t.call("POST", &claim, None).await;
    assert_eq!(status, 200, "{second}");
    let answer = format!("/api/_a2app/requests/{id}/answer");
    let late = json!({"claimKey": first["claimKey"], "result": {"summary": "late"}});
    assert_eq!(t.call("POST", &answer, Some(late)).await.0, 409);
    let failed = json!({"claimKey": second["claimKey"], "failure": "The board is empty."});
    let (status, failed) = t.call("POST", &answer, Some(failed)).await;
    assert_eq!(
        (status, failed["status"].as_str(), failed["failure"].as_str()),
        (200, Some("failed"), Some("The board is empty."))
    );
}

/// The open limit is per asker: one user's flood leaves another free to ask.
#[tokio::test]
async fn one_users_open_requests_never_block_another() {
    let t = TestApp::fixture("notes").await;
    let (_, ann) = t.user("ann@example.com", "pass word 1").await;
    let (_, bob) = t.user("bob@example.com", "pass word 1").await;
    let ask_as = |token: &str| {
        let req = t.http.post(format!("{}/api/_a2app/requests", t.url)).header("Origin", &t.url);
        t.send(req.header("Authorization", token.to_owned()), Some(json!({"capability": "tidy_notes"})))
    };
    for _ in 0..a2app_core::requests::MAX_OPEN {
        assert_eq!(ask_as(&ann).await.0, 200);
    }
    let (status, full) = ask_as(&ann).await;
    assert_eq!((status, full["code"].as_str()), (400, Some("out_of_range")));
    assert_eq!(ask_as(&bob).await.0, 200, "bob still asks");
}

#[tokio::test]
async fn open_requests_are_bounded() {
    let t = TestApp::kanban().await;
    let start: jiff::Timestamp = NOW.parse().unwrap();
    let mut first = String::new();
    for i in 0..a2app_core::requests::MAX_OPEN {
        t.clock.set(start.checked_add(jiff::SignedDuration::from_millis(i as i64)).unwrap());
        let id = ask(&t, json!({"capability": "summarise_board"})).await["id"].as_str().unwrap().to_owned();
        if i == 0 {
            first = id;
        }
    }
    let (status, body) =
        as_page(&t, "POST", "/api/_a2app/requests", Some(json!({"capability": "summarise_board"}))).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("out_of_range")));
    let (_, page) = t.call("GET", "/api/_a2app/requests?perPage=7&page=2", None).await;
    assert_eq!((page["totalItems"].as_u64(), page["totalPages"].as_u64()), (Some(100), Some(15)));
    assert_eq!(page["items"].as_array().unwrap().len(), 7);
    // Claimable requests come as a queue: the oldest first.
    let (_, queue) = t.call("GET", "/api/_a2app/requests?status=claimable&perPage=1", None).await;
    assert_eq!(queue["items"][0]["id"], first.as_str());
    let (_, newest) = t.call("GET", "/api/_a2app/requests?perPage=1", None).await;
    assert_ne!(newest["items"][0]["id"], first.as_str());
}

/// In a multi-user app a user asks from the page, signed in, and reads only
/// their own requests; the agent token reads them all.
#[tokio::test]
async fn users_see_only_their_own_requests() {
    let t = TestApp::fixture("notes").await;
    let (_, ann) = t.user("ann@example.com", "pass word 1").await;
    let (_, bob) = t.user("bob@example.com", "pass word 1").await;
    let as_user = |token: &str, method: &str, path: String| {
        t.http
            .request(method.parse().unwrap(), format!("{}{path}", t.url))
            .header("Origin", &t.url)
            .header("Authorization", token.to_owned())
    };
    let (status, asked) =
        t.send(as_user(&ann, "POST", "/api/_a2app/requests".into()), Some(json!({"capability": "tidy_notes"}))).await;
    assert_eq!(status, 200, "{asked}");
    assert!(asked["requestedBy"].as_str().unwrap().starts_with("user:"));
    let id = asked["id"].as_str().unwrap();

    let (_, mine) = t.send(as_user(&ann, "GET", "/api/_a2app/requests".into()), None).await;
    assert_eq!(mine["totalItems"], 1);
    let (_, theirs) = t.send(as_user(&bob, "GET", "/api/_a2app/requests".into()), None).await;
    assert_eq!(theirs["totalItems"], 0);
    let (status, _) = t.send(as_user(&bob, "GET", format!("/api/_a2app/requests/{id}")), None).await;
    assert_eq!(status, 404);
    let (status, _) = t.send(as_user(&bob, "POST", format!("/api/_a2app/requests/{id}/cancel")), None).await;
    assert_eq!(status, 404, "bob cannot cancel ann's request");
    let anonymous = t.http.get(format!("{}/api/_a2app/requests", t.url));
    assert_eq!(t.send(anonymous, None).await.0, 401);
    // Signed out, the page asks nothing: such a request would be nobody's to read or cancel.
    let signed_out = t.http.post(format!("{}/api/_a2app/requests", t.url)).header("Origin", &t.url);
    let (status, refused) = t.send(signed_out, Some(json!({"capability": "tidy_notes"}))).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")));
    let (_, all) = t.call("GET", "/api/_a2app/requests", None).await;
    assert_eq!(all["totalItems"], 1);
    let (status, cancelled) = t.send(as_user(&ann, "POST", format!("/api/_a2app/requests/{id}/cancel")), None).await;
    assert_eq!((status, cancelled["status"].as_str()), (200, Some("cancelled")));
}

/// Each step that applied is audited in its own transaction, attributed to
/// who took it; refusals leave no entry.
#[tokio::test]
async fn every_step_is_audited_with_who_took_it() {
    let t = TestApp::kanban().await;
    let id = ask(&t, json!({"capability": "summarise_board", "params": {"focus": "urgent"}})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (_, claimed) = t.call("POST", &format!("/api/_a2app/requests/{id}/claim"), None).await;
    let answer = format!("/api/_a2app/requests/{id}/answer");
    assert_eq!(t.call("POST", &answer, Some(json!({"claimKey": "wrong", "failure": "no"}))).await.0, 409);
    let body = json!({"claimKey": claimed["claimKey"], "failure": "The board is empty."});
    assert_eq!(t.call("POST", &answer, Some(body)).await.0, 200);
    let (_, receipts) = t.call("GET", "/api/_a2app/receipts", None).await;
    let steps: Vec<(&str, &str, &str, &str)> = receipts["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["action"].as_str().unwrap(),
                r["caller"].as_str().unwrap(),
                r["entity"].as_str().unwrap(),
                r["text"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            ("request.ask", "own_ui", "_a2app_requests", "Asked an agent: Summarise this board"),
            ("request.claim", "agent", "_a2app_requests", "Claimed the request \"Summarise this board\""),
            (
                "request.answer",
                "agent",
                "_a2app_requests",
                "Answered the request \"Summarise this board\": cannot be done"
            ),
        ]
    );
    assert_eq!(receipts["items"][0]["fields"], json!({"focus": "urgent"}));
    assert_eq!(receipts["items"][2]["fields"], json!({"failure": "The board is empty."}));
    assert_eq!(receipts["items"][2]["agent"], "tests");
    let log = std::fs::read_to_string(t.dir.path().join("logs/agent-actions.jsonl")).unwrap();
    let actions: Vec<String> =
        log.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["action"].as_str().unwrap().to_owned()).collect();
    assert_eq!(actions, ["request.claim", "request.answer"], "the agent's steps, not the person's");
}

/// A multi-user app's receipts hold what rules hide (and a request's params):
/// only its owner reads them.
#[tokio::test]
async fn a_multi_user_apps_receipts_are_the_owners_to_read() {
    let t = TestApp::fixture("notes").await;
    let (_, ann) = t.user("ann@example.com", "pass word 1").await;
    let anonymous = t.http.get(format!("{}/api/_a2app/receipts", t.url));
    let (status, body) = t.send(anonymous, None).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
    let as_ann = t.http.get(format!("{}/api/_a2app/receipts", t.url)).header("Authorization", &ann);
    assert_eq!(t.send(as_ann, None).await.0, 401);
    let (status, owner) = t.call("GET", "/api/_a2app/receipts", None).await;
    assert_eq!(status, 200);
    assert_eq!(owner["items"][0]["entity"], "users", "the owner reads them all");
}
