//! The realtime API over a real socket: what each kind of subscription receives.

use crate::{TestApp, pairs, violations};
use serde_json::{Value, json};
use std::time::Duration;

/// One open `/api/realtime` stream.
pub(crate) struct Stream {
    response: reqwest::Response,
    buffer: String,
    client_id: String,
    /// How many pieces of body were read so far.
    chunks: usize,
}

impl Stream {
    /// Connects with the agent token and subscribes to `topics`.
    pub(crate) async fn open(t: &TestApp, topics: &[&str]) -> Stream {
        Stream::open_with(t, ("X-LUI-Token", &t.token), topics).await
    }

    /// Connects with one credential header (subscribing with the same).
    pub(crate) async fn open_with(t: &TestApp, credential: (&str, &str), topics: &[&str]) -> Stream {
        let stream = Stream::connect(t, Some(credential)).await;
        let subscribe = t.http.post(format!("{}/api/realtime", t.url)).header(credential.0, credential.1);
        let body = json!({ "clientId": stream.client_id, "subscriptions": topics });
        let (status, body) = t.send(subscribe, Some(body)).await;
        assert_eq!(status, 204, "{body}");
        stream
    }

    /// Connects (with one credential header, or none) and reads the client
    /// id from `PB_CONNECT`; subscribes to nothing.
    pub(crate) async fn connect(t: &TestApp, credential: Option<(&str, &str)>) -> Stream {
        let mut request = t.http.get(format!("{}/api/realtime", t.url));
        if let Some((name, value)) = credential {
            request = request.header(name, value);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        let mut stream = Stream { response, buffer: String::new(), client_id: String::new(), chunks: 0 };
        let (event, data) = stream.next().await;
        assert_eq!(event, "PB_CONNECT");
        stream.client_id = data["clientId"].as_str().unwrap().to_owned();
        assert_eq!(stream.client_id.len(), 40);
        stream
    }

    /// The next event's name and JSON data (within five seconds).
    async fn next(&mut self) -> (String, Value) {
        self.within(Duration::from_secs(5)).await.expect("an event within 5 s")
    }

    /// The next event's name and JSON data, or `None` when no byte comes
    /// within `wait`. The stream closing is a failure.
    pub(crate) async fn within(&mut self, wait: Duration) -> Option<(String, Value)> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let frame: String = self.buffer.drain(..end + 2).collect();
                let mut event = String::new();
                let mut data = String::new();
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim_start().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim_start());
                    }
                }
                if event.is_empty() {
                    continue; // a keep-alive comment
                }
                return Some((event, serde_json::from_str(&data).unwrap()));
            }
            let chunk = tokio::time::timeout(wait, self.response.chunk()).await.ok()?;
            let chunk = chunk.unwrap().expect("the stream stays open");
            self.chunks += 1;
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

impl Stream {
    pub(crate) fn client_id(&self) -> &str {
        &self.client_id
    }

    /// Whether the server ends the stream within `wait` without sending
    /// another event (keep-alive comments aside).
    pub(crate) async fn ends_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Err(_) => return false,
                Ok(Ok(None) | Err(_)) => return !self.buffer.contains("event:"),
                Ok(Ok(Some(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
            }
        }
    }
}

#[tokio::test]
async fn plain_shaped_and_single_record_subscriptions_each_get_their_form() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let id = "rtcard000000001";
    let options = r#"cards/*?options={"query":{"fields":"id,title"}}"#;
    let topic = format!("cards/{id}");
    let mut plain = Stream::open(&t, &["cards/*"]).await;
    let mut shaped = Stream::open(&t, &[options]).await;
    let mut single = Stream::open(&t, &[&topic]).await;

    let created = t.create("cards", json!({"id": id, "title": "Live", "list": list["id"], "points": 5})).await;
    let (_, stored) = t.call("GET", &format!("/api/collections/cards/records/{id}"), None).await;

    let (event, data) = plain.next().await;
    assert_eq!(event, "cards/*");
    assert_eq!(data["action"], "create");
    assert_eq!(data["record"], stored, "the plain stream carries the record exactly as a view returns it");
    assert_eq!(data.as_object().unwrap().len(), 2);
    assert_eq!(created["_receipt"]["id"], id);

    let (event, data) = shaped.next().await;
    assert_eq!(event, options);
    assert_eq!(data["record"], json!({"id": id, "title": "Live"}));

    let (event, data) = single.next().await;
    assert_eq!(event, topic);
    assert_eq!(data["record"]["points"], 5);

    let (status, _) =
        t.call("PATCH", &format!("/api/collections/cards/records/{id}"), Some(json!({"title": "Live v2"}))).await;
    assert_eq!(status, 200);
    for stream in [&mut plain, &mut single] {
        let (_, data) = stream.next().await;
        assert_eq!(data["action"], "update");
        assert_eq!(data["record"]["title"], "Live v2");
        assert_eq!(data["record"]["points"], 5);
    }
    let (_, data) = shaped.next().await;
    assert_eq!(data, json!({"action": "update", "record": {"id": id, "title": "Live v2"}}));
}

#[tokio::test]
async fn changes_reach_subscribers_in_commit_order() {
    feed_follows_commit_order().await;
}

/// On worker threads an isolated write commits on its caller's thread while
/// the writes arriving meanwhile wait for the writer thread: both kinds of
/// commit must feed realtime in one order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_reach_subscribers_in_commit_order_on_worker_threads() {
    feed_follows_commit_order().await;
}

async fn feed_follows_commit_order() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let mut stream = Stream::open(&t, &["cards/*"]).await;
    // Concurrent creates commit in groups; the feed must follow the audit
    // log's order (the order of the commits), not the order the requests'
    // tasks happen to resume in. The pause lets the writer go idle, so on
    // worker threads each burst can open with an isolated, inline write.
    let mut created = Vec::new();
    for burst in 0..2 {
        let creates =
            (0..15).map(|i| t.create("cards", json!({"title": format!("card {burst}-{i}"), "list": list["id"]})));
        created.extend(futures_util::future::join_all(creates).await);
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(created.len(), 30);
    let mut seen = Vec::new();
    for _ in 0..30 {
        let (event, data) = stream.next().await;
        assert_eq!(event, "cards/*");
        assert_eq!(data["action"], "create");
        seen.push(data["record"]["id"].as_str().unwrap().to_owned());
    }
    let (status, receipts) = t.call("GET", "/api/_a2app/receipts?limit=1000", None).await;
    assert_eq!(status, 200);
    let committed: Vec<String> = receipts["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["entity"] == "cards")
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(committed.len(), 30);
    assert_eq!(seen, committed);
}

#[tokio::test]
async fn changes_already_queued_leave_together_in_order() {
    use a2app_core::realtime::{Action, Change};
    let t = TestApp::kanban().await;
    let mut stream = Stream::open(&t, &["cards/*"]).await;
    let before = stream.chunks;
    // Published with no await in between: on this single-threaded runtime the
    // stream wakes once and finds all twenty waiting.
    for i in 0..20 {
        let mut record = serde_json::Map::new();
        record.insert("id".into(), json!(format!("burst{i:010}")));
        record.insert("title".into(), json!(format!("card {i}")));
        t.app.realtime.publish(Change::new(Action::Create, "cards".into(), record));
    }
    for i in 0..20 {
        let (event, data) = stream.next().await;
        assert_eq!(event, "cards/*");
        assert_eq!(data["record"]["id"], format!("burst{i:010}"));
        assert_eq!(data["record"]["title"], format!("card {i}"));
    }
    assert_eq!(stream.chunks - before, 1, "twenty queued changes are one chunk, not twenty");
}

#[tokio::test]
async fn a_topic_with_a_line_break_is_refused_and_the_old_subscriptions_stay() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let mut stream = Stream::open(&t, &["cards/*"]).await;
    let (status, body) = t
        .call("POST", "/api/realtime", Some(json!({ "clientId": "nobody-has-this-id", "subscriptions": ["cards/*"] })))
        .await;
    assert_eq!(status, 404, "{body}");

    let forged = "cards/*\nevent: lists/*\ndata: {}";
    let subscriptions = json!({ "clientId": stream.client_id, "subscriptions": ["lists/*", forged] });
    let (status, body) = t.call("POST", "/api/realtime", Some(subscriptions)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "invalid_string", "{body}");
    let fields: Vec<&str> =
        body["violations"].as_array().unwrap().iter().map(|v| v["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["subscriptions.1"]);

    // Still subscribed to cards/* alone: a list change sends nothing, a card change arrives.
    t.create("lists", json!({"name": "Doing"})).await;
    t.create("cards", json!({"title": "After", "list": list["id"]})).await;
    let (event, data) = stream.next().await;
    assert_eq!(event, "cards/*");
    assert_eq!(data["record"]["title"], "After");
}

/// A topic's `options.query.filter` keeps only the changes it matches, with
/// `@request.query.*` and `@request.headers.*` read from the topic's options.
#[tokio::test]
async fn a_topic_filter_sends_only_the_changes_it_matches() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let big = r#"cards/*?options={"query":{"filter":"points > 2"}}"#;
    // As the PocketBase SDK sends options: URL-encoded JSON (a bare `&&`
    // would end the query parameter).
    let options = json!({
        "query": {"filter": "points >= @request.query.min && title != @request.headers.x_skip", "min": "5"},
        "headers": {"X-Skip": "skip me"},
    });
    let by_request = format!("cards/*?{}", serde_urlencoded::to_string([("options", options.to_string())]).unwrap());
    let by_request = by_request.as_str();
    let mut big_stream = Stream::open(&t, &[big]).await;
    let mut request_stream = Stream::open(&t, &[by_request]).await;
    for (title, points) in [("one", 1), ("three", 3), ("skip me", 9), ("seven", 7)] {
        t.create("cards", json!({"title": title, "list": list["id"], "points": points})).await;
    }
    let mut titles = Vec::new();
    for _ in 0..3 {
        let (event, data) = big_stream.next().await;
        assert_eq!(event, big);
        titles.push(data["record"]["title"].as_str().unwrap().to_owned());
    }
    assert_eq!(titles, ["three", "skip me", "seven"]);
    let (event, data) = request_stream.next().await;
    assert_eq!((event.as_str(), data["record"]["title"].as_str()), (by_request, Some("seven")));
    assert!(request_stream.within(Duration::from_millis(200)).await.is_none(), "nothing else matched");
    assert!(big_stream.within(Duration::from_millis(200)).await.is_none());
}

/// A topic that cannot be followed as written refuses the whole call with
/// every problem, and the subscriptions before it stay.
#[tokio::test]
async fn topics_that_cannot_be_followed_are_refused_each_by_name() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let mut stream = Stream::open(&t, &["cards/*"]).await;
    let topics = json!([
        "lists/*",
        7,
        "crads/*",
        r#"cards/*?options={"query":{"filter":"points >"}}"#,
        r#"cards/*?options={"query":{"filter":"colour = 'red'"}}"#,
        "cards/not-an-id",
        "cards/*?options=nope",
    ]);
    let (status, body) =
        t.call("POST", "/api/realtime", Some(json!({"clientId": stream.client_id, "subscriptions": topics}))).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(
        violations(&body),
        pairs(&[
            ("invalid_string", "subscriptions.1"),
            ("unknown_entity", "subscriptions.2"),
            ("invalid_filter", "subscriptions.3"),
            ("invalid_filter", "subscriptions.4"),
            ("invalid_string", "subscriptions.5"),
            ("invalid_string", "subscriptions.6"),
        ])
    );
    // Only the app's owner filters by request data, as in a list.
    let reader = Stream::connect(&t, None).await;
    let topic = r#"cards/*?options={"query":{"filter":"title = @request.query.t","t":"x"}}"#;
    let subscribe = t.http.post(format!("{}/api/realtime", t.url));
    let (status, body) = t.send(subscribe, Some(json!({"clientId": reader.client_id, "subscriptions": [topic]}))).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("forbidden")), "{body}");

    t.create("lists", json!({"name": "Doing"})).await;
    t.create("cards", json!({"title": "After", "list": list["id"]})).await;
    let (event, data) = stream.next().await;
    assert_eq!((event.as_str(), data["record"]["title"].as_str()), ("cards/*", Some("After")));
}

/// A user's stream subscribed to `notes/*`.
pub(crate) async fn user_stream(t: &TestApp, token: &str) -> Stream {
    let stream = Stream::connect(t, Some(("Authorization", token))).await;
    let subscribe = t.http.post(format!("{}/api/realtime", t.url)).header("Authorization", token);
    let body = json!({"clientId": stream.client_id, "subscriptions": ["notes/*"]});
    let (status, answer) = t.send(subscribe, Some(body)).await;
    assert_eq!(status, 204, "{answer}");
    stream
}

/// Each user's stream gets exactly the changes the view rule lets them see,
/// judged on the record as each change left it: a delete is seen by whoever
/// could see the record, and a record deleted at once still had its creation seen.
#[tokio::test]
async fn each_user_sees_the_changes_the_view_rule_shows_them_as_committed() {
    let t = TestApp::fixture("notes").await;
    let (ann, ann_token) = t.user("ann@example.com", "pass word 1").await;
    let (bob, bob_token) = t.user("bob@example.com", "pass word 1").await;
    let mut ann_stream = user_stream(&t, &ann_token).await;
    let mut bob_stream = user_stream(&t, &bob_token).await;
    let write = |method: &str, path: String, token: &str, body: Option<Value>| {
        let req = t.http.request(method.parse().unwrap(), format!("{}{path}", t.url));
        t.send(req.header("X-LUI-Token", &t.token).header("Authorization", token), body)
    };
    let create = |token: &str, owner: &str, title: &str, public: bool| {
        let body = json!({"title": title, "owner": owner, "public": public});
        write("POST", "/api/collections/notes/records".into(), token, Some(body))
    };
    let note = |title: &str| title.to_owned();
    let mut ids = std::collections::HashMap::new();
    for (token, owner, title, public) in
        [(&ann_token, &ann, "p", false), (&ann_token, &ann, "q", true), (&bob_token, &bob, "r", false)]
    {
        let (status, record) = create(token, owner, title, public).await;
        assert_eq!(status, 200, "{record}");
        ids.insert(note(title), record["id"].as_str().unwrap().to_owned());
    }
    let path = |title: &str| format!("/api/collections/notes/records/{}", ids[title]);
    for (title, public) in [("p", true), ("q", false)] {
        let (status, body) = write("PATCH", path(title), &ann_token, Some(json!({"public": public}))).await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(write("DELETE", path("p"), &ann_token, None).await.0, 204);
    assert_eq!(write("DELETE", path("r"), &bob_token, None).await.0, 204);
    // Seen by both: it closes each stream's expected sequence.
    let (status, marker) = create(&ann_token, &ann, "m", true).await;
    assert_eq!(status, 200, "{marker}");
    ids.insert(note("m"), marker["id"].as_str().unwrap().to_owned());

    let expect = |events: &[(&str, &str)]| -> Vec<(String, String)> {
        events.iter().map(|(action, title)| ((*action).to_owned(), ids[*title].clone())).collect()
    };
    let want_ann =
        expect(&[("create", "p"), ("create", "q"), ("update", "p"), ("update", "q"), ("delete", "p"), ("create", "m")]);
    // Bob sees q while public, p once public (and its delete), all of his own r, never q's turn to private.
    let want_bob =
        expect(&[("create", "q"), ("create", "r"), ("update", "p"), ("delete", "p"), ("delete", "r"), ("create", "m")]);
    for (stream, want) in [(&mut ann_stream, want_ann), (&mut bob_stream, want_bob)] {
        let mut got = Vec::new();
        while got.len() < want.len() {
            let (event, data) = stream.next().await;
            assert_eq!(event, "notes/*");
            got.push((data["action"].as_str().unwrap().to_owned(), data["record"]["id"].as_str().unwrap().to_owned()));
        }
        assert_eq!(got, want);
    }
}

/// A topic's options are what its rules read too, as PocketBase has it
/// (EventSource sends no headers of its choosing), and a user's stream is
/// that user's alone to subscribe.
#[tokio::test]
async fn a_topics_options_reach_the_view_rule_and_a_users_stream_is_their_own() {
    let t =
        TestApp::notes_with_rules(json!({"view": "owner = @request.auth.id || title = @request.headers.x_note_title"}))
            .await;
    let (ann, ann_token) = t.user("ann@example.com", "pass word 1").await;
    let (_, bob_token) = t.user("bob@example.com", "pass word 1").await;

    let mut bob = Stream::connect(&t, Some(("Authorization", &bob_token))).await;
    let options = json!({"headers": {"X-Note-Title": "shared"}});
    let topic = format!("notes/*?{}", serde_urlencoded::to_string([("options", options.to_string())]).unwrap());
    let body = json!({"clientId": bob.client_id, "subscriptions": [topic]});
    // Ann may not re-point bob's stream.
    let as_ann = t.http.post(format!("{}/api/realtime", t.url)).header("Authorization", &ann_token);
    let (status, refused) = t.send(as_ann, Some(body.clone())).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")), "{refused}");
    let as_bob = t.http.post(format!("{}/api/realtime", t.url)).header("Authorization", &bob_token);
    let (status, answer) = t.send(as_bob, Some(body)).await;
    assert_eq!(status, 204, "{answer}");

    for title in ["private", "shared"] {
        let body = json!({"title": title, "owner": ann, "public": false});
        let (status, note) =
            crate::as_user(&t, Some(&ann_token), "POST", "/api/collections/notes/records", Some(body)).await;
        assert_eq!(status, 200, "{note}");
    }
    let (event, data) = bob.next().await;
    assert_eq!((event, data["record"]["title"].as_str()), (topic, Some("shared")));
    assert!(bob.within(Duration::from_millis(200)).await.is_none(), "the private note was not sent");
}
