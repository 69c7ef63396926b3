//! Multi-user apps: sign-in with PocketBase-compatible tokens, per-entity
//! rules, hidden passwords and emails.

use crate::{TestApp, as_user, violations};
use serde_json::{Value, json};

#[tokio::test]
async fn passwords_are_hashed_never_returned_and_checked() {
    let t = TestApp::fixture("notes").await;
    let (status, created) = as_user(
        &t,
        None,
        "POST",
        "/api/collections/users/records",
        Some(json!({"email": "ann@example.com", "password": "correct horse", "passwordConfirm": "correct horse"})),
    )
    .await;
    assert_eq!(status, 200, "{created}");
    let text = created.to_string();
    assert!(!text.contains("correct horse") && !text.contains("password") && !text.contains("argon2"), "{text}");
    assert_eq!(created["email"], "ann@example.com");
    assert_eq!(created["verified"], false);
    let log = std::fs::read_to_string(t.app.definition.logs_dir().join("agent-actions.jsonl")).unwrap();
    assert!(!log.contains("correct horse") && !log.contains("argon2"), "{log}");

    let (status, bad) = t
        .call(
            "POST",
            "/api/collections/users/auth-with-password",
            Some(json!({"identity": "ann@example.com", "password": "wrong one"})),
        )
        .await;
    assert_eq!((status, bad["code"].as_str()), (400, Some("auth_failed")));
    let (status, bad) = t
        .call(
            "POST",
            "/api/collections/users/auth-with-password",
            Some(json!({"identity": "nobody@example.com", "password": "x"})),
        )
        .await;
    assert_eq!((status, bad["code"].as_str()), (400, Some("auth_failed")));

    let (status, bad) = as_user(
        &t,
        None,
        "POST",
        "/api/collections/users/records",
        Some(json!({"email": "ANN@example.com", "password": "short", "passwordConfirm": "other"})),
    )
    .await;
    assert_eq!(status, 400, "{bad}");
    assert_eq!(
        violations(&bad),
        [
            ("invalid_string".to_owned(), "password".to_owned()),
            ("invalid_string".to_owned(), "passwordConfirm".to_owned())
        ]
    );
    let (status, dup) = as_user(
        &t,
        None,
        "POST",
        "/api/collections/users/records",
        Some(json!({"email": "ANN@example.com", "password": "another one", "passwordConfirm": "another one"})),
    )
    .await;
    assert_eq!((status, dup["code"].as_str(), dup["field"].as_str()), (409, Some("not_unique"), Some("email")));
}

#[tokio::test]
async fn tokens_identify_the_user_and_a_password_change_revokes_them() {
    let t = TestApp::fixture("notes").await;
    let (id, token) = t.user("ann@example.com", "correct horse").await;
    let (_, me) = as_user(&t, Some(&token), "GET", "/api/_a2app/whoami", None).await;
    assert_eq!((me["kind"].as_str(), me["user"].as_str()), (Some("user"), Some(id.as_str())));
    // PocketBase's SDK sends the bare token; `Bearer` works too.
    let (_, me) = as_user(&t, Some(&format!("Bearer {token}")), "GET", "/api/_a2app/whoami", None).await;
    assert_eq!(me["user"], id.as_str());

    let (status, refreshed) = as_user(&t, Some(&token), "POST", "/api/collections/users/auth-refresh", None).await;
    assert_eq!(status, 200);
    assert_eq!(refreshed["record"]["id"], id.as_str());

    let path = format!("/api/collections/users/records/{id}");
    let change = json!({"password": "battery staple", "passwordConfirm": "battery staple"});
    let (status, got) = as_user(&t, Some(&token), "PATCH", &path, Some(change.clone())).await;
    assert_eq!(status, 400, "the old password is needed: {got}");
    assert_eq!(violations(&got), [("invalid_string".to_owned(), "oldPassword".to_owned())]);
    let mut with_old = change.clone();
    with_old["oldPassword"] = json!("correct horse");
    let (status, _) = as_user(&t, Some(&token), "PATCH", &path, Some(with_old)).await;
    assert_eq!(status, 200);
    let (status, body) = as_user(&t, Some(&token), "GET", "/api/_a2app/whoami", None).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
    let (status, _) = t
        .call(
            "POST",
            "/api/collections/users/auth-with-password",
            Some(json!({"identity": "ann@example.com", "password": "battery staple"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, body) = as_user(&t, Some("garbage.token.here"), "GET", "/api/collections/notes/records", None).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
}

#[tokio::test]
async fn an_idempotency_key_belongs_to_the_caller_who_used_it() {
    let t = TestApp::fixture("notes").await;
    let (ann, ann_token) = t.user("ann@example.com", "correct horse").await;
    let (bob, bob_token) = t.user("bob@example.com", "correct horse").await;
    let create = |token: &str, owner: &str, title: &str| {
        t.http
            .post(format!("{}/api/collections/notes/records", t.url))
            .header("X-LUI-Token", &t.token)
            .header("Authorization", token.to_owned())
            .header("Idempotency-Key", "same-key")
            .json(&json!({"title": title, "owner": owner, "public": false}))
    };
    let (status, first) = t.send(create(&ann_token, &ann, "ann's"), None).await;
    assert_eq!(status, 200, "{first}");
    // Bob's key is his own: his write is stored, and Ann's record id stays hidden from him.
    let (status, body) = t.send(create(&bob_token, &bob, "bob's"), None).await;
    assert_eq!((status, body["title"].as_str()), (200, Some("bob's")), "{body}");
    let (status, body) = t.send(create(&ann_token, &ann, "ann's again"), None).await;
    assert_eq!(
        (status, body["code"].as_str(), body["id"].as_str()),
        (409, Some("duplicate_request"), first["id"].as_str())
    );
    let (_, page) = as_user(&t, None, "GET", "/api/collections/notes/records?sort=title", None).await;
    let titles: Vec<&str> = page["items"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["ann's", "bob's"]);
}

#[tokio::test]
async fn rules_decide_what_each_user_sees_and_changes() {
    let t = TestApp::fixture("notes").await;
    let (ann, ann_token) = t.user("ann@example.com", "correct horse").await;
    let (bob, bob_token) = t.user("bob@example.com", "correct horse").await;
    let note = |title: &str, owner: &str, public: bool| json!({"title": title, "owner": owner, "public": public});

    let (status, private) =
        as_user(&t, Some(&ann_token), "POST", "/api/collections/notes/records", Some(note("ann private", &ann, false)))
            .await;
    assert_eq!(status, 200, "{private}");
    let (status, _) =
        as_user(&t, Some(&ann_token), "POST", "/api/collections/notes/records", Some(note("ann public", &ann, true)))
            .await;
    assert_eq!(status, 200);
    // Ann cannot create a note in Bob's name: the create rule refuses it, and nothing is stored.
    let (status, body) =
        as_user(&t, Some(&ann_token), "POST", "/api/collections/notes/records", Some(note("forged", &bob, false)))
            .await;
    assert_eq!((status, body["code"].as_str()), (403, Some("forbidden")));

    let titles = |page: &Value| -> Vec<String> {
        let mut t: Vec<String> =
            page["items"].as_array().unwrap().iter().map(|r| r["title"].as_str().unwrap().to_owned()).collect();
        t.sort();
        t
    };
    let (_, page) = as_user(&t, Some(&bob_token), "GET", "/api/collections/notes/records", None).await;
    assert_eq!(titles(&page), ["ann public"]);
    let (_, page) = as_user(&t, Some(&ann_token), "GET", "/api/collections/notes/records", None).await;
    assert_eq!(titles(&page), ["ann private", "ann public"]);
    let (_, page) = as_user(&t, None, "GET", "/api/collections/notes/records", None).await;
    assert_eq!(titles(&page), ["ann private", "ann public"], "the owner sees everything");

    let path = format!("/api/collections/notes/records/{}", private["id"].as_str().unwrap());
    let (status, _) = as_user(&t, Some(&bob_token), "GET", &path, None).await;
    assert_eq!(status, 404, "a hidden record is not there");
    let (status, _) = as_user(&t, Some(&bob_token), "PATCH", &path, Some(json!({"title": "bob was here"}))).await;
    assert_eq!(status, 404);
    let (status, _) = as_user(&t, Some(&bob_token), "DELETE", &path, None).await;
    assert_eq!(status, 404);
    // Ann may edit her note but not give it away (`@request.body.owner:changed = false`).
    let (status, _) = as_user(&t, Some(&ann_token), "PATCH", &path, Some(json!({"owner": bob}))).await;
    assert_eq!(status, 404);
    let (status, edited) = as_user(&t, Some(&ann_token), "PATCH", &path, Some(json!({"title": "renamed"}))).await;
    assert_eq!((status, edited["title"].as_str()), (200, Some("renamed")));
    assert_eq!(edited["_receipt"]["caller"], "user");

    // An entity without rules is locked to the owner.
    let (status, body) = as_user(&t, Some(&ann_token), "GET", "/api/collections/audit_notes/records", None).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("forbidden")));
    let (status, _) =
        as_user(&t, None, "POST", "/api/collections/audit_notes/records", Some(json!({"text": "x"}))).await;
    assert_eq!(status, 200);
    let (status, _) = t.send(t.http.get(format!("{}/api/collections/audit_notes/records", t.url)), None).await;
    assert_eq!(status, 403, "anonymous readers meet the same lock");

    // Users see themselves only, and another user's email stays hidden.
    let (_, page) = as_user(&t, Some(&bob_token), "GET", "/api/collections/users/records", None).await;
    let ids: Vec<&str> = page["items"].as_array().unwrap().iter().map(|u| u["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [bob.as_str()]);
    // Expand shows only what the caller may view: Bob may not view Ann's user record.
    let (_, seen) = as_user(&t, Some(&bob_token), "GET", "/api/collections/notes/records?expand=owner", None).await;
    assert_eq!(seen["items"][0]["expand"], json!({}), "{seen}");
    let (_, own) =
        as_user(&t, Some(&ann_token), "GET", "/api/collections/notes/records?expand=owner&sort=title", None).await;
    assert_eq!(own["items"][0]["expand"]["owner"]["email"], "ann@example.com");
}

/// `@request.query.*` and `@request.headers.*` read the request's own query
/// string and headers, in a list's filter (the agent token's) and in rules,
/// as PocketBase reads them: names lower-cased with `-` as `_`.
#[tokio::test]
async fn filters_and_rules_read_the_request_query_and_headers() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "L"})).await;
    for title in ["hello", "other"] {
        t.create("cards", json!({"title": title, "list": list["id"]})).await;
    }
    let titles = |page: &Value| -> Vec<String> {
        page["items"].as_array().unwrap().iter().map(|c| c["title"].as_str().unwrap().to_owned()).collect()
    };
    let (status, page) =
        t.call("GET", "/api/collections/cards/records?filter=title%3D%40request.query.t&t=hello", None).await;
    assert_eq!((status, titles(&page)), (200, vec!["hello".to_owned()]), "{page}");
    let req = t
        .http
        .get(format!("{}/api/collections/cards/records?filter=title%3D%40request.headers.x_title", t.url))
        .header("X-LUI-Token", &t.token)
        .header("X-Title", "other");
    let (status, page) = t.send(req, None).await;
    assert_eq!((status, titles(&page)), (200, vec!["other".to_owned()]), "{page}");

    // A multi-user app whose list rule lets a request ask for public notes
    // by its query, and shows a note to a caller naming its title in a header.
    let t = TestApp::notes_with_rules(json!({
        "list": "owner = @request.auth.id || (public = true && @request.query.shared = 'yes')",
        "view": "owner = @request.auth.id || title = @request.headers.x_note_title",
    }))
    .await;
    let (ann, ann_token) = t.user("ann@example.com", "pass words").await;
    let (_, bob_token) = t.user("bob@example.com", "pass words").await;
    let body = json!({"title": "ann's", "owner": ann, "public": true});
    let (status, note) = as_user(&t, Some(&ann_token), "POST", "/api/collections/notes/records", Some(body)).await;
    assert_eq!(status, 200, "{note}");
    let (_, page) = as_user(&t, Some(&bob_token), "GET", "/api/collections/notes/records", None).await;
    assert_eq!(page["totalItems"], 0, "{page}");
    let (_, page) = as_user(&t, Some(&bob_token), "GET", "/api/collections/notes/records?shared=yes", None).await;
    assert_eq!(page["totalItems"], 1, "{page}");
    let path = format!("{}/api/collections/notes/records/{}", t.url, note["id"].as_str().unwrap());
    let (status, _) = t.send(t.http.get(&path).header("Authorization", &bob_token), None).await;
    assert_eq!(status, 404);
    let (status, seen) =
        t.send(t.http.get(&path).header("Authorization", &bob_token).header("X-Note-Title", "ann's"), None).await;
    assert_eq!((status, seen["title"].as_str()), (200, Some("ann's")));
}

/// A stale If-Match answers the record as it is only to a caller who may
/// view it: an update rule that lets anyone write does not let them read.
#[tokio::test]
async fn a_version_conflict_shows_the_record_only_to_who_may_view_it() {
    let t = TestApp::notes_with_rules(json!({"update": "@request.auth.id != ''", "delete": "@request.auth.id != ''"}))
        .await;
    let (ann, ann_token) = t.user("ann@example.com", "pass words").await;
    let (_, bob_token) = t.user("bob@example.com", "pass words").await;
    let body = json!({"title": "ann's secret", "owner": ann, "public": false});
    let (_, note) = as_user(&t, Some(&ann_token), "POST", "/api/collections/notes/records", Some(body)).await;
    let path = format!("{}/api/collections/notes/records/{}", t.url, note["id"].as_str().unwrap());
    for method in [reqwest::Method::PATCH, reqwest::Method::DELETE] {
        let stale = |token: &str| {
            let req =
                t.http.request(method.clone(), &path).header("X-LUI-Token", &t.token).header("Authorization", token);
            t.send(req.header("If-Match", "2020-01-01 00:00:00.000Z"), Some(json!({})))
        };
        let (status, body) = stale(&bob_token).await;
        assert_eq!((status, body["code"].as_str()), (409, Some("version_conflict")), "{method}: {body}");
        assert_eq!(body["record"], json!({"id": note["id"], "updated": note["updated"]}), "{method}: no title for bob");
        let (status, body) = stale(&ann_token).await;
        assert_eq!((status, body["record"]["title"].as_str()), (409, Some("ann's secret")), "{method}: {body}");
        assert_eq!(body["record"]["collectionName"], "notes");
    }
}
