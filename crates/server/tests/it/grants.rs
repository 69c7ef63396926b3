//! Deployed identity over HTTP (`/api/_a2app/grants`): an agent's key asks,
//! a person decides, a signature buys a short-lived token, and the token's
//! scopes bound every call; revoking ends it at once.

use crate::realtime::Stream;
use crate::{NOW, TestApp, violations};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::{Value, json};
use std::time::Duration;

/// An agent: its key and, once it has one, its grant.
struct Agent {
    key: SigningKey,
    grant: String,
}

impl Agent {
    fn new(seed: u8) -> Agent {
        Agent { key: SigningKey::from_bytes(&[seed; 32]), grant: String::new() }
    }

    fn public_key(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.key.verifying_key().as_bytes())
    }

    /// Asks `t` for a grant with `scopes`; returns the pending grant.
    async fn ask(&mut self, t: &TestApp, scopes: &[&str]) -> Value {
        let body = json!({"publicKey": self.public_key(), "agent": "Claude on ann's laptop", "scopes": scopes});
        let (status, grant) = t.send(t.http.post(format!("{}/api/_a2app/grants", t.url)), Some(body)).await;
        assert_eq!(status, 200, "{grant}");
        self.grant = grant["id"].as_str().unwrap().to_owned();
        grant
    }

    /// The token body for `timestamp` and `nonce`, signed with this key.
    fn proof(&self, t: &TestApp, timestamp: i64, nonce: &str) -> Value {
        let message = protocol::grant::token_message(&t.app.definition.config.id, &self.grant, timestamp, nonce);
        let signature = URL_SAFE_NO_PAD.encode(self.key.sign(message.as_bytes()).to_bytes());
        json!({"timestamp": timestamp, "nonce": nonce, "signature": signature})
    }

    async fn trade(&self, t: &TestApp, proof: Value) -> (u16, Value) {
        let url = format!("{}/api/_a2app/grants/{}/token", t.url, self.grant);
        t.send(t.http.post(url), Some(proof)).await
    }

    /// A fresh access token (signed now, with a new nonce).
    async fn token(&self, t: &TestApp, nonce: &str) -> String {
        let (status, answer) = self.trade(t, self.proof(t, now(t), nonce)).await;
        assert_eq!(status, 200, "{answer}");
        answer["token"].as_str().unwrap().to_owned()
    }
}

fn now(t: &TestApp) -> i64 {
    use a2app_core::clock::Clock;
    t.clock.now().as_second()
}

/// A call with a grant's access token.
async fn with(t: &TestApp, token: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let req = t
        .http
        .request(method.parse().unwrap(), format!("{}{path}", t.url))
        .header("Authorization", format!("Bearer {token}"));
    t.send(req, body).await
}

/// The app's own page: the person, in a single-user app.
async fn as_page(t: &TestApp, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let req = t.http.request(method.parse().unwrap(), format!("{}{path}", t.url)).header("Origin", &t.url);
    t.send(req, body).await
}

fn later(t: &TestApp, secs: i64) {
    let now: jiff::Timestamp = NOW.parse().unwrap();
    t.clock.set(now.checked_add(jiff::SignedDuration::from_secs(secs)).unwrap());
}

#[tokio::test]
async fn an_agent_asks_a_person_approves_and_the_token_holds_exactly_the_scopes() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let mut agent = Agent::new(7);

    let asked = agent.ask(&t, &["data:cards:write", "data:cards:read", "data:lists:read", "data:cards:read"]).await;
    assert_eq!(asked["status"], "pending");
    let once = json!(["data:cards:read", "data:lists:read", "data:cards:write"]);
    assert_eq!(asked["scopes"], once, "reads, then writes, then operations; each once");
    assert_eq!(asked["actsFor"], "");
    assert_eq!(asked["fingerprint"].as_str().unwrap().len(), 16);
    assert_eq!(asked["publicKey"], agent.public_key());

    // Nothing before a person decides.
    let (status, early) = agent.trade(&t, agent.proof(&t, now(&t), "nonce-0000000000001")).await;
    assert_eq!((status, early["code"].as_str()), (401, Some("unauthorized")), "{early}");

    // Only a person decides: not the agent token, not another agent.
    let approve = format!("/api/_a2app/grants/{}/approve", agent.grant);
    let (status, refused) = t.call("POST", &approve, None).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")));
    // A person may narrow, never widen.
    let (status, wider) = as_page(&t, "POST", &approve, Some(json!({"scopes": ["data:members:read"]}))).await;
    assert_eq!((status, violations(&wider)), (400, vec![("invalid_enum".into(), "scopes.0".into())]));
    let (status, active) =
        as_page(&t, "POST", &approve, Some(json!({"scopes": ["data:cards:read", "data:cards:write"]}))).await;
    assert_eq!(status, 200, "{active}");
    assert_eq!((active["status"].as_str(), active["actsFor"].as_str()), (Some("active"), Some("owner")));
    assert_eq!(active["scopes"], json!(["data:cards:read", "data:cards:write"]));
    let (status, again) = as_page(&t, "POST", &approve, None).await;
    assert_eq!((status, violations(&again)), (409, vec![("request_closed".into(), "status".into())]));

    // A signature buys a token once, within two minutes of the app's clock, with this key only.
    let (status, stale) = agent.trade(&t, agent.proof(&t, now(&t) - 121, "nonce-0000000000002")).await;
    assert_eq!((status, stale["code"].as_str()), (401, Some("unauthorized")));
    let forged = Agent { key: SigningKey::from_bytes(&[8; 32]), grant: agent.grant.clone() };
    let (status, _) = forged.trade(&t, forged.proof(&t, now(&t), "nonce-0000000000003")).await;
    assert_eq!(status, 401);
    let proof = agent.proof(&t, now(&t), "nonce-0000000000004");
    let (status, issued) = agent.trade(&t, proof.clone()).await;
    assert_eq!(status, 200, "{issued}");
    assert_eq!(issued["expiresIn"], 900);
    let token = issued["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("a2g_") && token.len() == 44, "{token}");
    let (status, replayed) = agent.trade(&t, proof).await;
    assert_eq!((status, replayed["code"].as_str()), (401, Some("unauthorized")), "a nonce is spent once");

    // Within its scopes: read and write cards, as the grant.
    let (status, me) = with(&t, &token, "GET", "/api/_a2app/whoami", None).await;
    assert_eq!(status, 200);
    assert_eq!(me["kind"], format!("grant:{}", agent.grant));
    assert_eq!(me["agent"], "Claude on ann's laptop");
    assert_eq!(me["scopes"], json!(["data:cards:read", "data:cards:write"]));
    assert_eq!(me["may"], json!({"read": true, "write": true, "operations": false}));
    let card = json!({"title": "Ship it", "list": list["id"]});
    let (status, created) = with(&t, &token, "POST", "/api/collections/cards/records", Some(card)).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["_receipt"]["caller"], format!("grant:{}", agent.grant));
    assert_eq!(created["_receipt"]["text"], "Added \"Ship it\" to cards", "the list's name is not the grant's to read");
    assert_eq!(created["_receipt"]["agent"], "Claude on ann's laptop");
    let (status, cards) = with(&t, &token, "GET", "/api/collections/cards/records?expand=list", None).await;
    assert_eq!((status, cards["totalItems"].as_u64()), (200, Some(1)));
    assert_eq!(cards["items"][0]["expand"], json!({}), "lists are outside the grant: not expanded");

    // Outside them: every other entity, operation and owner feed.
    let (status, lists) = with(&t, &token, "GET", "/api/collections/lists/records", None).await;
    assert_eq!(
        (status, lists["code"].as_str(), lists["scope"].as_str()),
        (403, Some("insufficient_scope"), Some("data:lists:read"))
    );
    let (status, member) =
        with(&t, &token, "POST", "/api/collections/members/records", Some(json!({"name": "Bo"}))).await;
    assert_eq!((status, member["scope"].as_str()), (403, Some("data:members:write")));
    let (status, op) = with(&t, &token, "POST", "/api/ops/export_board", Some(json!({}))).await;
    assert_eq!((status, op["scope"].as_str()), (403, Some("op:export_board")));
    let (status, receipts) = with(&t, &token, "GET", "/api/_a2app/receipts", None).await;
    assert_eq!((status, receipts["code"].as_str()), (403, Some("forbidden")));
    let (status, surfaces) = with(&t, &token, "GET", "/api/_a2app/surfaces", None).await;
    assert_eq!((status, surfaces["code"].as_str()), (403, Some("forbidden")));
    let (status, other) = with(&t, &token, "POST", "/api/_a2app/grants", Some(json!({}))).await;
    assert_eq!((status, other["code"].as_str()), (403, Some("forbidden")), "a grant cannot ask for another");

    // A token works for fifteen minutes.
    later(&t, 899);
    assert_eq!(with(&t, &token, "GET", "/api/collections/cards/records", None).await.0, 200);
    later(&t, 900);
    let (status, expired) = with(&t, &token, "GET", "/api/collections/cards/records", None).await;
    assert_eq!((status, expired["code"].as_str()), (401, Some("unauthorized")));
    let fresh = agent.token(&t, "nonce-0000000000005").await;
    assert_eq!(with(&t, &fresh, "GET", "/api/collections/cards/records", None).await.0, 200);

    // The grant gives itself up; its tokens stop at once.
    let (status, revoked) = with(&t, &fresh, "POST", &format!("/api/_a2app/grants/{}/revoke", agent.grant), None).await;
    assert_eq!((status, revoked["status"].as_str()), (200, Some("revoked")));
    assert_eq!(with(&t, &fresh, "GET", "/api/collections/cards/records", None).await.0, 401);
    let (status, _) = agent.trade(&t, agent.proof(&t, now(&t), "nonce-0000000000006")).await;
    assert_eq!(status, 401, "a revoked grant buys no token");

    // Every step is audited, by who took it.
    let (_, audit) = t.call("GET", "/api/_a2app/receipts?limit=50", None).await;
    let steps: Vec<(String, String)> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["entity"] == "_a2app_grants")
        .map(|r| (r["action"].as_str().unwrap().to_owned(), r["caller"].as_str().unwrap().to_owned()))
        .collect();
    let grant_caller = format!("grant:{}", agent.grant);
    assert_eq!(
        steps,
        [
            ("grant.ask".to_owned(), "anonymous".to_owned()),
            ("grant.approve".to_owned(), "own_ui".to_owned()),
            ("grant.revoke".to_owned(), grant_caller),
        ]
    );
}

#[tokio::test]
async fn an_ask_reports_every_problem_at_once() {
    let t = TestApp::kanban().await;
    let body = json!({
        "publicKey": "not-a-key",
        "agent": "bad\u{1b}[2Jname",
        "scopes": ["data:nope:read", "op:nothing", "data:cards:delete", 5],
        "extra": true,
    });
    let (status, refused) = t.send(t.http.post(format!("{}/api/_a2app/grants", t.url)), Some(body)).await;
    assert_eq!((status, violations(&refused)), (400, vec![("unknown_field".into(), "extra".into())]));
    let body = json!({
        "publicKey": "not-a-key",
        "agent": "bad\u{1b}[2Jname",
        "scopes": ["data:nope:read", "op:nothing", "data:cards:delete", 5, "data:cards:read"],
    });
    let (status, refused) = t.send(t.http.post(format!("{}/api/_a2app/grants", t.url)), Some(body)).await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(
        violations(&refused),
        [
            ("invalid_string".to_owned(), "publicKey".to_owned()),
            ("invalid_string".to_owned(), "agent".to_owned()),
            ("unknown_entity".to_owned(), "scopes.0".to_owned()),
            ("unknown_operation".to_owned(), "scopes.1".to_owned()),
            ("invalid_string".to_owned(), "scopes.2".to_owned()),
            ("invalid_string".to_owned(), "scopes.3".to_owned()),
        ]
    );
    let (status, none) = t
        .send(
            t.http.post(format!("{}/api/_a2app/grants", t.url)),
            Some(json!({"publicKey": Agent::new(1).public_key(), "agent": "a"})),
        )
        .await;
    assert_eq!((status, violations(&none)), (400, vec![("required_field".into(), "scopes".into())]));
    let (status, numeric) = t
        .send(
            t.http.post(format!("{}/api/_a2app/grants", t.url)),
            Some(json!({"publicKey": 5, "agent": "a", "scopes": ["data:cards:read"]})),
        )
        .await;
    assert_eq!((status, violations(&numeric)), (400, vec![("invalid_string".into(), "publicKey".into())]));
    let (_, listed) = t.call("GET", "/api/_a2app/grants", None).await;
    assert_eq!(listed["items"], json!([]), "nothing was stored");
}

#[tokio::test]
async fn a_denied_or_unanswered_grant_never_buys_a_token() {
    let t = TestApp::kanban().await;
    let mut denied = Agent::new(2);
    denied.ask(&t, &["data:cards:read"]).await;
    let (status, grant) = as_page(&t, "POST", &format!("/api/_a2app/grants/{}/deny", denied.grant), None).await;
    assert_eq!((status, grant["status"].as_str()), (200, Some("denied")));
    assert_eq!(denied.trade(&t, denied.proof(&t, now(&t), "nonce-0000000000001")).await.0, 401);

    later(&t, 1);
    let mut late = Agent::new(3);
    late.ask(&t, &["data:cards:read"]).await;
    later(&t, 1 + 15 * 60 - 1);
    let (_, waiting) = t.send(t.http.get(format!("{}/api/_a2app/grants/{}", t.url, late.grant)), None).await;
    assert_eq!(waiting["status"], "pending", "a second before it lapses");
    later(&t, 1 + 15 * 60);
    let (status, expired) = t.send(t.http.get(format!("{}/api/_a2app/grants/{}", t.url, late.grant)), None).await;
    assert_eq!((status, expired["status"].as_str()), (200, Some("expired")));
    let (status, closed) = as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", late.grant), None).await;
    assert_eq!((status, closed["code"].as_str()), (409, Some("request_closed")));

    // The page sees all grants of a single-user app; a program without the token, none.
    let (status, listed) = as_page(&t, "GET", "/api/_a2app/grants", None).await;
    assert_eq!(status, 200);
    let statuses: Vec<&str> =
        listed["items"].as_array().unwrap().iter().map(|g| g["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["expired", "denied"]);
    let (status, _) = t.send(t.http.get(format!("{}/api/_a2app/grants", t.url)), None).await;
    assert_eq!(status, 403);
}

/// Revoking takes effect at once, by the person or the owner, for tokens in
/// flight too; the owner's revocation leaves no token alive.
#[tokio::test]
async fn the_person_revokes_and_every_token_stops_at_once() {
    let t = TestApp::kanban().await;
    let mut agent = Agent::new(4);
    agent.ask(&t, &["data:lists:read"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", agent.grant), None).await;
    let one = agent.token(&t, "nonce-0000000000001").await;
    let two = agent.token(&t, "nonce-0000000000002").await;
    assert_eq!(with(&t, &one, "GET", "/api/collections/lists/records", None).await.0, 200);
    let (status, revoked) = as_page(&t, "POST", &format!("/api/_a2app/grants/{}/revoke", agent.grant), None).await;
    assert_eq!((status, revoked["status"].as_str()), (200, Some("revoked")));
    for token in [&one, &two] {
        let (status, body) = with(&t, token, "GET", "/api/collections/lists/records", None).await;
        assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
    }
    let (status, twice) = t.call("POST", &format!("/api/_a2app/grants/{}/revoke", agent.grant), None).await;
    assert_eq!((status, twice["code"].as_str()), (409, Some("request_closed")));
}

/// In a multi-user app a grant acts for the user who approved it: their
/// rules still apply, intersected with the scopes.
#[tokio::test]
async fn a_users_grant_sees_what_the_user_sees_within_its_scopes() {
    let t = TestApp::fixture("notes").await;
    let (ann_id, ann) = t.user("ann@example.com", "pass word 1").await;
    let (bob_id, bob) = t.user("bob@example.com", "pass word 1").await;
    t.create("notes", json!({"title": "ann's", "owner": ann_id})).await;
    t.create("notes", json!({"title": "bob's", "owner": bob_id})).await;
    let page = |token: &str, method: &str, path: String| {
        t.http
            .request(method.parse().unwrap(), format!("{}{path}", t.url))
            .header("Origin", &t.url)
            .header("Authorization", token.to_owned())
    };
    let mut agent = Agent::new(5);
    agent.ask(&t, &["data:notes:read"]).await;
    // Signed out, the page decides nothing: the grant would act for nobody.
    let (status, _) = as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", agent.grant), None).await;
    assert_eq!(status, 403);
    let (status, approved) =
        t.send(page(&ann, "POST", format!("/api/_a2app/grants/{}/approve", agent.grant)), None).await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["actsFor"], format!("user:{ann_id}"));
    let token = agent.token(&t, "nonce-0000000000001").await;
    let (status, notes) = with(&t, &token, "GET", "/api/collections/notes/records", None).await;
    assert_eq!(status, 200);
    let titles: Vec<&str> = notes["items"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["ann's"], "ann's rules apply to her grant");

    // Bob neither sees nor revokes ann's grant.
    let (_, bobs) = t.send(page(&bob, "GET", "/api/_a2app/grants".into()), None).await;
    assert_eq!(bobs["items"], json!([]));
    let (status, _) = t.send(page(&bob, "POST", format!("/api/_a2app/grants/{}/revoke", agent.grant)), None).await;
    assert_eq!(status, 404);
    let (_, anns) = t.send(page(&ann, "GET", "/api/_a2app/grants".into()), None).await;
    assert_eq!(anns["items"].as_array().unwrap().len(), 1);
    let (status, revoked) =
        t.send(page(&ann, "POST", format!("/api/_a2app/grants/{}/revoke", agent.grant)), None).await;
    assert_eq!((status, revoked["status"].as_str()), (200, Some("revoked")));
}

/// Realtime follows the read scopes; the queue's claims follow a
/// capability's declared reads.
#[tokio::test]
async fn realtime_and_claims_follow_the_scopes() {
    let t = TestApp::kanban().await;
    let mut agent = Agent::new(6);
    agent.ask(&t, &["data:cards:read", "data:members:write"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", agent.grant), None).await;
    let token = agent.token(&t, "nonce-0000000000001").await;
    let bearer = format!("Bearer {token}");
    let mut stream = Stream::open_with(&t, ("Authorization", &bearer), &["cards/*"]).await;
    // A topic beyond its scopes is refused, named, rather than followed in silence.
    let subscribe = t.http.post(format!("{}/api/realtime", t.url)).header("Authorization", &bearer);
    let body = json!({"clientId": stream.client_id(), "subscriptions": ["cards/*", "lists/*"]});
    let (status, refused) = t.send(subscribe, Some(body)).await;
    assert_eq!((status, refused["scope"].as_str()), (403, Some("data:lists:read")), "{refused}");
    let list = t.create("lists", json!({"name": "Doing"})).await;
    let card = t.create("cards", json!({"title": "Seen", "list": list["id"]})).await;
    let (topic, data) = stream.within(Duration::from_secs(5)).await.expect("the card's event");
    assert_eq!((topic.as_str(), &data["record"]["id"]), ("cards/*", &card["id"]), "the list's event was not sent");

    // summarise_board reads lists and cards: this grant reads cards only.
    let (status, asked) =
        as_page(&t, "POST", "/api/_a2app/requests", Some(json!({"capability": "summarise_board"}))).await;
    assert_eq!(status, 200, "{asked}");
    let hidden = asked["id"].as_str().unwrap().to_owned();
    let (status, refused) = with(&t, &token, "POST", &format!("/api/_a2app/requests/{hidden}/claim"), None).await;
    assert_eq!((status, refused["code"].as_str()), (404, Some("not_found")), "a grant sees only what it could claim");
    let (status, asked) = as_page(
        &t,
        "POST",
        "/api/_a2app/requests",
        Some(json!({"capability": "suggest_priority", "params": {"card": card["id"]}})),
    )
    .await;
    assert_eq!(status, 200, "{asked}");
    let (_, listed) = with(&t, &token, "GET", "/api/_a2app/requests", None).await;
    let capabilities: Vec<&str> =
        listed["items"].as_array().unwrap().iter().map(|r| r["capability"].as_str().unwrap()).collect();
    assert_eq!((listed["totalItems"].as_u64(), capabilities), (Some(1), vec!["suggest_priority"]));
    let (status, _) = with(&t, &token, "GET", &format!("/api/_a2app/requests/{hidden}"), None).await;
    assert_eq!(status, 404);
    let (status, claimed) =
        with(&t, &token, "POST", &format!("/api/_a2app/requests/{}/claim", asked["id"].as_str().unwrap()), None).await;
    assert_eq!((status, claimed["request"]["claimedBy"].as_str()), (200, Some("Claude on ann's laptop")), "{claimed}");
}

/// Over MCP a grant is offered only the tools its scopes can use, and each
/// call is held to the exact scope.
#[tokio::test]
async fn mcp_lists_only_the_tools_a_grant_can_use() {
    let t = TestApp::kanban().await;
    let mut reader = Agent::new(9);
    reader.ask(&t, &["data:cards:read"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", reader.grant), None).await;
    let bearer = format!("Bearer {}", reader.token(&t, "nonce-0000000000001").await);
    let (status, list) = crate::mcp::rpc(&t, &[("authorization", &bearer)], "tools/list", json!({})).await;
    assert_eq!(status, 200, "{list}");
    // Its own writes are all a grant's message is checked against.
    assert_eq!(crate::mcp::names(&list), ["describe", "query", "get", "check_claims"]);
    let create = json!({"name": "create", "arguments": {"entity": "cards", "record": {"title": "x"}}});
    // Refused before the tool runs, with the scope to ask for (MCP's step-up; see it/oauth.rs).
    let (status, refused) = crate::mcp::rpc(&t, &[("authorization", &bearer)], "tools/call", create).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("insufficient_scope")), "{refused}");
    assert_eq!(refused["scope"], "data:cards:write");

    let mut runner = Agent::new(10);
    runner.ask(&t, &["data:lists:write", "op:export_board"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", runner.grant), None).await;
    let bearer = format!("Bearer {}", runner.token(&t, "nonce-0000000000002").await);
    let (_, list) = crate::mcp::rpc(&t, &[("authorization", &bearer)], "tools/list", json!({})).await;
    // Writing lists includes reading them.
    let all = ["describe", "query", "get", "create", "update", "delete", "run_operation", "job_status", "check_claims"];
    assert_eq!(crate::mcp::names(&list), all);
    // An unknown or revoked token is refused before the protocol layer.
    let (status, body) = crate::mcp::rpc(&t, &[("authorization", "Bearer a2g_unknown")], "tools/list", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
}

/// `op:NAME` lets a grant call the verb; the records a `crud` operation
/// writes are still held to the grant's data scopes (permission is the
/// intersection, inside operations too).
#[tokio::test]
async fn an_operation_needs_its_scope_and_what_it_writes() {
    let t = TestApp::kanban().await;
    let todo = t.create("lists", json!({"name": "To Do"})).await;
    let done = t.create("lists", json!({"name": "Done"})).await;
    let card = t.create("cards", json!({"title": "Move me", "list": todo["id"]})).await;
    let params = json!({"card": card["id"], "list": done["id"]});

    let mut verb_only = Agent::new(11);
    verb_only.ask(&t, &["op:move_card"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", verb_only.grant), None).await;
    let token = verb_only.token(&t, "nonce-0000000000001").await;
    let (status, refused) = with(&t, &token, "POST", "/api/ops/move_card", Some(params.clone())).await;
    assert_eq!((status, refused["scope"].as_str()), (403, Some("data:cards:write")), "{refused}");

    let mut both = Agent::new(12);
    both.ask(&t, &["op:move_card", "data:cards:write"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", both.grant), None).await;
    let token = both.token(&t, "nonce-0000000000002").await;
    let (status, moved) = with(&t, &token, "POST", "/api/ops/move_card", Some(params)).await;
    assert_eq!(status, 200, "{moved}");
    let (_, stored) =
        t.call("GET", &format!("/api/collections/cards/records/{}", card["id"].as_str().unwrap()), None).await;
    assert_eq!(stored["list"], done["id"]);
}

/// A stream opened with a grant's token ends when the grant is revoked
/// (or the token expires), and only that grant may change what it follows.
#[tokio::test]
async fn a_grants_stream_ends_with_the_grant_and_is_its_own_to_subscribe() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let mut agent = Agent::new(13);
    agent.ask(&t, &["data:cards:read"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", agent.grant), None).await;
    let bearer = format!("Bearer {}", agent.token(&t, "nonce-0000000000001").await);
    let mut stream = Stream::open_with(&t, ("Authorization", &bearer), &["cards/*"]).await;
    // Another credential may not re-point it: not the agent token, not anonymous.
    let topics = json!({"clientId": stream.client_id(), "subscriptions": ["lists/*"]});
    let (status, refused) = t.call("POST", "/api/realtime", Some(topics.clone())).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")));
    let (status, _) = t.send(t.http.post(format!("{}/api/realtime", t.url)), Some(topics)).await;
    assert_eq!(status, 403);

    t.create("cards", json!({"title": "seen", "list": list["id"]})).await;
    assert_eq!(stream.within(Duration::from_secs(5)).await.expect("an event").0, "cards/*");
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/revoke", agent.grant), None).await;
    t.create("cards", json!({"title": "after the revocation", "list": list["id"]})).await;
    assert!(stream.ends_within(Duration::from_secs(5)).await, "the stream ended without the second card");
}

/// The holes a review found, each closed: a grant is no sign-in, writes
/// include reads, filters reach only readable entities, a key waits with at
/// most three asks, accounts are not a grant's to change, and a hostile
/// timestamp is only a refusal.
#[tokio::test]
async fn a_grant_stays_inside_its_scopes_at_every_edge() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "Secret"})).await;
    t.create("cards", json!({"title": "a card", "list": list["id"]})).await;
    let mut writer = Agent::new(14);
    writer.ask(&t, &["data:cards:write"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", writer.grant), None).await;
    let token = writer.token(&t, "nonce-0000000000001").await;
    let (status, cards) = with(&t, &token, "GET", "/api/collections/cards/records", None).await;
    assert_eq!((status, cards["totalItems"].as_u64()), (200, Some(1)), "writing cards includes reading them");
    for query in ["filter=list.name%3D'Secret'", "sort=list.name", "filter=list.cards_via_list.title%3D'x'"] {
        let (status, body) = with(&t, &token, "GET", &format!("/api/collections/cards/records?{query}"), None).await;
        assert_eq!((status, body["scope"].as_str()), (403, Some("data:lists:read")), "{query}: {body}");
    }
    let (status, own) = with(&t, &token, "GET", "/api/collections/cards/records?filter=title%3D'a card'", None).await;
    assert_eq!((status, own["totalItems"].as_u64()), (200, Some(1)), "its own fields filter as before");

    for timestamp in [json!("1700000000"), json!(1.5)] {
        let (status, body) =
            writer.trade(&t, json!({"timestamp": timestamp, "nonce": "nonce-0000000000009", "signature": "AA"})).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_number")), "{timestamp}: {body}");
    }
    let hostile = json!({"timestamp": i64::MIN, "nonce": "nonce-0000000000002", "signature": "AA"});
    let (status, _) = writer.trade(&t, hostile).await;
    assert_eq!(status, 400, "a malformed signature");
    let mut proof = writer.proof(&t, 0, "nonce-0000000000003");
    proof["timestamp"] = json!(i64::MIN);
    let (status, refused) = writer.trade(&t, proof).await;
    assert_eq!((status, refused["code"].as_str()), (401, Some("unauthorized")), "{refused}");

    let mut eager = Agent::new(15);
    for _ in 0..3 {
        eager.ask(&t, &["data:cards:read"]).await;
    }
    let body = json!({"publicKey": eager.public_key(), "agent": "again", "scopes": ["data:cards:read"]});
    let (status, full) = t.send(t.http.post(format!("{}/api/_a2app/grants", t.url)), Some(body)).await;
    assert_eq!((status, full["code"].as_str()), (400, Some("out_of_range")), "{full}");
}

/// In a multi-user app a grant never turns into its user's sign-in, never
/// changes accounts, and users list only their own grants.
#[tokio::test]
async fn a_users_grant_is_no_sign_in_and_pending_grants_are_not_listed_to_users() {
    let t = TestApp::fixture("notes").await;
    let (_, ann) = t.user("ann@example.com", "pass word 1").await;
    let body = json!({"publicKey": Agent::new(16).public_key(), "agent": "a", "scopes": ["data:users:write"]});
    let (status, refused) = t.send(t.http.post(format!("{}/api/_a2app/grants", t.url)), Some(body)).await;
    assert_eq!((status, violations(&refused)), (400, vec![("invalid_enum".into(), "scopes.0".into())]));

    let mut agent = Agent::new(17);
    agent.ask(&t, &["data:notes:read"]).await;
    let page = |method: &str, path: String| {
        t.http
            .request(method.parse().unwrap(), format!("{}{path}", t.url))
            .header("Origin", &t.url)
            .header("Authorization", ann.clone())
    };
    let (_, before) = t.send(page("GET", "/api/_a2app/grants".into()), None).await;
    assert_eq!(before["items"], json!([]), "a pending grant is listed to the owner only");
    let (_, owner) = t.call("GET", "/api/_a2app/grants", None).await;
    assert_eq!(owner["items"].as_array().unwrap().len(), 1);
    let (status, _) = t.send(page("POST", format!("/api/_a2app/grants/{}/approve", agent.grant)), None).await;
    assert_eq!(status, 200);
    let token = agent.token(&t, "nonce-0000000000001").await;
    let (status, refresh) = with(&t, &token, "POST", "/api/collections/users/auth-refresh", None).await;
    assert_eq!((status, refresh["code"].as_str()), (403, Some("forbidden")), "{refresh}");
    assert_eq!(refresh.get("token"), None);
}

/// A field may itself be named like a back-relation (`cards_via_x`): the
/// path check resolves it as the field it is, as the query compiler does,
/// so it cannot reach an unreadable entity under that name.
#[tokio::test]
async fn a_field_named_like_a_back_relation_is_checked_as_the_field_it_is() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kanban");
    let dir = tempfile::tempdir().unwrap();
    for file in ["app.toml", "operations.json", "requests.json"] {
        std::fs::copy(root.join(file), dir.path().join(file)).unwrap();
    }
    let mut schema: Value = serde_json::from_str(&std::fs::read_to_string(root.join("schema.json")).unwrap()).unwrap();
    schema["entities"]["cards"]["fields"]["cards_via_x"] = json!({"type": "ref", "entity": "lists"});
    std::fs::write(dir.path().join("schema.json"), schema.to_string()).unwrap();
    let def = a2app_core::app::load(dir.path()).expect("the schema loads");
    let t = TestApp::start(dir, def, a2app_core::operations::Registry::default(), false).await.unwrap();
    let list = t.create("lists", json!({"name": "TopSecret"})).await;
    t.create("cards", json!({"title": "c", "list": list["id"], "cards_via_x": list["id"]})).await;
    let mut agent = Agent::new(18);
    agent.ask(&t, &["data:cards:read"]).await;
    as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", agent.grant), None).await;
    let token = agent.token(&t, "nonce-0000000000001").await;
    let path = "/api/collections/cards/records?filter=cards_via_x.name%3D'TopSecret'";
    let (status, body) = with(&t, &token, "GET", path, None).await;
    assert_eq!((status, body["scope"].as_str()), (403, Some("data:lists:read")), "{body}");
    let (status, own) = t.call("GET", path, None).await;
    assert_eq!((status, own["totalItems"].as_u64()), (200, Some(1)), "the field resolves for the owner: {own}");
}

/// A client whose requests leave from `source`, another loopback address.
fn from(source: &str) -> reqwest::Client {
    crate::http();
    let address: std::net::IpAddr = source.parse().unwrap();
    reqwest::Client::builder().local_address(address).redirect(reqwest::redirect::Policy::none()).build().unwrap()
}

/// Hardening issue, finding 2: 98 anonymous asks filled the one pool of 100
/// pending grants, and the next sign-in was refused for the 15 minutes they
/// lived. Now one source holds at most its share, sign-ins have a pool of
/// their own, and the owner clears a source's asks at once.
#[tokio::test]
async fn a_flood_of_anonymous_asks_leaves_room_for_sign_ins_and_other_agents() {
    let t = TestApp::with_config(|toml| format!("{toml}\n[mcp]\nsign_in = true\n")).await;
    let flood = from("127.0.0.1");
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let asks = futures_util::future::join_all((0..1000u32).map(|i| {
        let mut seed = [0u8; 32];
        seed[..4].copy_from_slice(&i.to_le_bytes());
        seed[31] = 7;
        let key = URL_SAFE_NO_PAD.encode(SigningKey::from_bytes(&seed).verifying_key().as_bytes());
        let body = json!({"publicKey": key, "agent": format!("flood {i}"), "scopes": ["data:cards:read"]});
        let req = flood.post(format!("{}/api/_a2app/grants", t.url));
        t.send(req, Some(body))
    }))
    .await;
    for (status, body) in &asks {
        *statuses.entry(*status).or_default() += 1;
        if *status == 429 {
            assert_eq!(body["code"], "rate_limited", "{body}");
        }
    }
    assert_eq!(statuses, [(200, 10), (429, 990)].into_iter().collect(), "{statuses:?}");

    // A real OAuth sign-in from another source: registered, authorized,
    // approved by the person, and traded for a token that works at /mcp.
    let browser = from("127.0.0.2");
    let reg =
        json!({"client_name": "Host", "redirect_uris": ["http://127.0.0.1/cb"], "token_endpoint_auth_method": "none"});
    let (status, client) = t.send(browser.post(format!("{}/oauth/register", t.url)), Some(reg)).await;
    assert_eq!(status, 201, "{client}");
    let client_id = client["client_id"].as_str().unwrap();
    let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    let challenge = URL_SAFE_NO_PAD.encode(<sha2::Sha256 as sha2::Digest>::digest(verifier.as_bytes()));
    let resource = format!("{}/mcp", t.url);
    let query = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", "http://127.0.0.1/cb"),
        ("code_challenge", challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("scope", "data:cards:read"),
        ("resource", resource.as_str()),
    ])
    .unwrap();
    let resp = browser.get(format!("{}/oauth/authorize?{query}", t.url)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 303);
    let location = resp.headers()["location"].to_str().unwrap().to_owned();
    let grant = location.strip_prefix("/_/#grant=").unwrap();
    let (status, decided) = as_page(&t, "POST", &format!("/api/_a2app/grants/{grant}/approve"), None).await;
    assert_eq!(status, 200, "{decided}");
    let redirect = decided["redirect"].as_str().unwrap();
    let code: std::collections::HashMap<String, String> =
        serde_urlencoded::from_str(redirect.split_once('?').unwrap().1).unwrap();
    let form = serde_urlencoded::to_string([
        ("grant_type", "authorization_code"),
        ("code", code["code"].as_str()),
        ("client_id", client_id),
        ("code_verifier", verifier),
        ("resource", resource.as_str()),
    ])
    .unwrap();
    let resp = browser
        .post(format!("{}/oauth/token", t.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let tokens: Value = resp.json().await.unwrap();
    assert!(tokens["access_token"].as_str().unwrap().starts_with(protocol::grant::TOKEN_PREFIX), "{tokens}");

    // A real agent's grant from a third source: asked, approved, a token.
    let mut agent = Agent::new(42);
    let body = json!({"publicKey": agent.public_key(), "agent": "Claude", "scopes": ["data:cards:read"]});
    let (status, asked) = t.send(from("127.0.0.3").post(format!("{}/api/_a2app/grants", t.url)), Some(body)).await;
    assert_eq!(status, 200, "{asked}");
    assert_eq!(asked["source"], "127.0.0.3");
    agent.grant = asked["id"].as_str().unwrap().to_owned();
    let (status, _) = as_page(&t, "POST", &format!("/api/_a2app/grants/{}/approve", agent.grant), None).await;
    assert_eq!(status, 200);
    let token = agent.token(&t, "nonce-after-the-flood-1").await;
    let (status, page) = with(&t, &token, "GET", "/api/collections/cards/records", None).await;
    assert_eq!(status, 200, "{page}");

    // The person sees where the asks came from and clears one source's at once;
    // an agent (a grant) may not, and a body naming anything else is refused.
    let (_, listed) = as_page(&t, "GET", "/api/_a2app/grants", None).await;
    let from_flood = listed["items"].as_array().unwrap().iter().filter(|g| g["source"] == "127.0.0.1").count();
    assert_eq!(from_flood, 10);
    let (status, refused) = with(&t, &token, "POST", "/api/_a2app/grants/deny-pending", Some(json!({}))).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")), "{refused}");
    let (status, refused) = as_page(&t, "POST", "/api/_a2app/grants/deny-pending", Some(json!({"from": "x"}))).await;
    assert_eq!((status, refused["code"].as_str()), (400, Some("unknown_field")), "{refused}");
    let (status, cleared) =
        as_page(&t, "POST", "/api/_a2app/grants/deny-pending", Some(json!({"source": "127.0.0.1"}))).await;
    assert_eq!((status, cleared["denied"].as_u64()), (200, Some(10)), "{cleared}");
    let (_, listed) = as_page(&t, "GET", "/api/_a2app/grants", None).await;
    let pending: Vec<&Value> =
        listed["items"].as_array().unwrap().iter().filter(|g| g["status"] == "pending").collect();
    assert!(pending.is_empty(), "{pending:?}");
    // With its asks cleared, the source may ask again.
    let body = json!({"publicKey": Agent::new(43).public_key(), "agent": "again", "scopes": ["data:cards:read"]});
    let (status, _) = t.send(flood.post(format!("{}/api/_a2app/grants", t.url)), Some(body)).await;
    assert_eq!(status, 200);
}

/// A grant that may run `clear_done` (destructive) and delete cards.
async fn clearing_agent(t: &TestApp, seed: u8) -> String {
    let mut agent = Agent::new(seed);
    agent.ask(t, &["op:clear_done", "data:cards:write"]).await;
    as_page(t, "POST", &format!("/api/_a2app/grants/{}/approve", agent.grant), None).await;
    agent.token(t, &format!("nonce-clearing-{seed:04}")).await
}

async fn done_cards(t: &TestApp, n: usize) {
    let list = t.create("lists", json!({"name": "Done"})).await;
    for i in 0..n {
        t.create("cards", json!({"title": format!("old {i}"), "list": list["id"], "done": true})).await;
    }
}

async fn cards_left(t: &TestApp) -> i64 {
    let (status, page) = t.call("GET", "/api/collections/cards/records?perPage=1", None).await;
    assert_eq!(status, 200);
    page["totalItems"].as_i64().unwrap()
}

/// Hardening issue, finding 9, the default (`destructive_consent = "host"`):
/// the grant's host asked its person, and the key works at once.
#[tokio::test]
async fn under_host_consent_a_grants_approval_key_works_at_once() {
    let t = TestApp::kanban().await;
    done_cards(&t, 2).await;
    let token = clearing_agent(&t, 21).await;
    let (status, asked) = with(&t, &token, "POST", "/api/ops/clear_done", None).await;
    assert_eq!(
        (status, asked["code"].as_str(), asked["consent"].as_str()),
        (428, Some("approval_required"), Some("host"))
    );
    let key = asked["approvalKey"].as_str().unwrap();
    let req = t
        .http
        .post(format!("{}/api/ops/clear_done", t.url))
        .header("Authorization", format!("Bearer {token}"))
        .header("X-A2App-Approval", key);
    let (status, ran) = t.send(req, None).await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(cards_left(&t).await, 0);
}

/// Hardening issue, finding 9, `destructive_consent = "person"`: the key
/// works only once a person of the app approved that one call; the agent
/// cannot approve it with its grant or with the agent token, and a denied
/// call never runs.
#[tokio::test]
async fn under_person_consent_only_a_person_of_the_app_lets_the_call_run() {
    let t = TestApp::with_config(|toml| format!("destructive_consent = \"person\"\n{toml}")).await;
    done_cards(&t, 2).await;
    let token = clearing_agent(&t, 22).await;
    let run = |key: Option<String>| {
        let mut req =
            t.http.post(format!("{}/api/ops/clear_done", t.url)).header("Authorization", format!("Bearer {token}"));
        if let Some(k) = key {
            req = req.header("X-A2App-Approval", k);
        }
        t.send(req, None)
    };
    let (status, asked) = run(None).await;
    assert_eq!((status, asked["consent"].as_str()), (428, Some("person")), "{asked}");
    let key = asked["approvalKey"].as_str().unwrap().to_owned();
    assert_eq!(asked["approvalUrl"], format!("/_/#approval={key}"));
    // Repeated before a person decided: still waiting, nothing deleted.
    let (status, waiting) = run(Some(key.clone())).await;
    assert_eq!((status, waiting["approvalKey"].as_str()), (428, Some(key.as_str())), "{waiting}");
    assert_eq!(cards_left(&t).await, 2);
    // The agent cannot say yes for the person: not with its grant, not with the agent token.
    let approve = format!("/api/_a2app/approvals/{key}/approve");
    let (status, refused) = with(&t, &token, "POST", &approve, None).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")), "{refused}");
    let (status, refused) = t.call("POST", &approve, None).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("forbidden")), "{refused}");
    let (status, _) = with(&t, &token, "GET", "/api/_a2app/approvals", None).await;
    assert_eq!(status, 403);
    // The person sees the exact call and approves it; then it runs, once.
    let (status, listed) = as_page(&t, "GET", "/api/_a2app/approvals", None).await;
    assert_eq!(status, 200, "{listed}");
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{listed}");
    assert_eq!((items[0]["key"].as_str(), items[0]["operation"].as_str()), (Some(key.as_str()), Some("clear_done")));
    assert_eq!(
        (items[0]["agent"].as_str(), items[0]["status"].as_str()),
        (Some("Claude on ann's laptop"), Some("waiting"))
    );
    // The dashboard reads the same list with the browser's same-origin GET.
    let req = t.http.get(format!("{}/_/approvals.json", t.url)).header("Sec-Fetch-Site", "same-origin");
    let (status, page) = t.send(req, None).await;
    assert_eq!((status, page["items"][0]["key"].as_str()), (200, Some(key.as_str())), "{page}");
    let (status, decided) = as_page(&t, "POST", &approve, None).await;
    assert_eq!((status, decided["status"].as_str()), (200, Some("approved")), "{decided}");
    let (status, again) = as_page(&t, "POST", &format!("/api/_a2app/approvals/{key}/deny"), None).await;
    assert_eq!((status, again["code"].as_str()), (403, Some("approval_invalid")), "decided once: {again}");
    let (status, ran) = run(Some(key.clone())).await;
    assert_eq!(status, 200, "{ran}");
    assert_eq!(cards_left(&t).await, 0);
    let (status, spent) = run(Some(key)).await;
    assert_eq!((status, spent["code"].as_str()), (403, Some("approval_invalid")));

    // A denied call never runs.
    done_cards(&t, 1).await;
    let (_, asked) = run(None).await;
    let key = asked["approvalKey"].as_str().unwrap().to_owned();
    let (status, _) = as_page(&t, "POST", &format!("/api/_a2app/approvals/{key}/deny"), None).await;
    assert_eq!(status, 200);
    let (status, refused) = run(Some(key)).await;
    assert_eq!((status, refused["code"].as_str()), (403, Some("approval_invalid")));
    assert!(refused["message"].as_str().unwrap().contains("denied"), "{refused}");
    assert_eq!(cards_left(&t).await, 1);
    let (_, audit) = t.call("GET", "/api/_a2app/receipts?limit=1000", None).await;
    let decisions: Vec<&str> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["action"].as_str().filter(|a| a.starts_with("approval.")))
        .collect();
    assert_eq!(decisions, ["approval.approve", "approval.deny"]);

    // The owner's own agent (the agent token) is the host's to ask, as before.
    let (status, asked) = t.call("POST", "/api/ops/clear_done", None).await;
    assert_eq!((status, asked["consent"].as_str()), (428, Some("host")));
}
