//! The PocketBase-compatible records API: shapes, status codes, list parameters.

use crate::{TestApp, violations};
use serde_json::json;

#[tokio::test]
async fn create_view_update_delete_have_pocketbase_shapes() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do", "id": "todo00000000001"})).await;
    assert_eq!(list["id"], "todo00000000001");
    assert_eq!(list["collectionId"], "pbc_3277857102");
    assert_eq!(list["collectionName"], "lists");
    assert_eq!(list["created"], "2026-07-30 09:15:00.000Z");
    assert_eq!(list["position"], 0);
    assert_eq!(list["color"], "gray");
    let keys: Vec<&str> = list.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["collectionId", "collectionName", "id", "name", "position", "color", "created", "updated", "_receipt"]
    );
    assert_eq!(list["_receipt"]["text"], "Added \"To Do\" to lists");
    assert_eq!(list["_receipt"]["caller"], "agent");
    assert_eq!(list["_receipt"]["agent"], "tests");

    let card = t
        .create("cards", json!({"title": "Eat", "list": "todo00000000001", "due_date": "2026-07-31T12:00:00+02:00", "labels": ["bug", "docs"]}))
        .await;
    let id = card["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 15);
    assert!(id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()));
    assert_eq!(card["due_date"], "2026-07-31 10:00:00.000Z");
    assert_eq!(card["labels"], json!(["bug", "docs"]));
    assert_eq!(card["assignees"], json!([]));
    assert_eq!(card["meta"], json!(null));
    assert_eq!(card["done"], false);

    let (status, got) = t.call("GET", &format!("/api/collections/cards/records/{id}?expand=list"), None).await;
    assert_eq!(status, 200);
    assert_eq!(got["expand"]["list"]["name"], "To Do");

    let (status, got) = t
        .call("PATCH", &format!("/api/collections/cards/records/{id}"), Some(json!({"done": true, "points": 3})))
        .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["done"], true);
    assert_eq!(got["points"], 3);
    assert_eq!(got["title"], "Eat");

    let (status, body) = t.call("DELETE", &format!("/api/collections/cards/records/{id}"), None).await;
    assert_eq!((status, body), (204, serde_json::Value::Null));
    let (status, body) = t.call("GET", &format!("/api/collections/cards/records/{id}"), None).await;
    assert_eq!(status, 404);
    assert_eq!(body["code"], "not_found");
    assert_eq!(body["status"], 404);
}

#[tokio::test]
async fn list_pages_clamp_and_skip_totals() {
    let t = TestApp::kanban().await;
    for i in 0..45 {
        t.create("lists", json!({"name": format!("L{i:02}"), "position": i})).await;
    }
    let (status, page) = t.call("GET", "/api/collections/lists/records", None).await;
    assert_eq!(status, 200);
    assert_eq!((page["page"].as_u64(), page["perPage"].as_u64()), (Some(1), Some(30)));
    assert_eq!((page["totalItems"].as_i64(), page["totalPages"].as_i64()), (Some(45), Some(2)));
    assert_eq!(page["items"].as_array().unwrap().len(), 30);
    // The total follows every write (the whole-entity count is cached per commit).
    let extra = t.create("lists", json!({"name": "L45", "position": 45})).await;
    let (_, page) = t.call("GET", "/api/collections/lists/records", None).await;
    assert_eq!(page["totalItems"], 46);
    t.call("DELETE", &format!("/api/collections/lists/records/{}", extra["id"].as_str().unwrap()), None).await;
    let (_, page) = t.call("GET", "/api/collections/lists/records", None).await;
    assert_eq!(page["totalItems"], 45);

    let (_, page) = t.call("GET", "/api/collections/lists/records?page=2&perPage=20&sort=-position", None).await;
    let names: Vec<&str> = page["items"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 20);
    assert_eq!(names[0], "L24");
    assert_eq!(page["totalPages"], 3);

    let (_, page) = t.call("GET", "/api/collections/lists/records?perPage=5000&skipTotal=1", None).await;
    assert_eq!(page["perPage"], 1000);
    assert_eq!((page["totalItems"].as_i64(), page["totalPages"].as_i64()), (Some(-1), Some(-1)));
    assert_eq!(page["items"].as_array().unwrap().len(), 45);

    let (_, page) = t.call("GET", "/api/collections/lists/records?page=0&perPage=-3&fields=name", None).await;
    assert_eq!((page["page"].as_u64(), page["perPage"].as_u64()), (Some(1), Some(30)));
    assert_eq!(page["items"][0].as_object().unwrap().keys().collect::<Vec<_>>(), ["name"]);

    let (status, body) = t.call("GET", "/api/collections/lists/records?page=x", None).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")));

    // A parameter given twice is refused, not the whole query dropped (which
    // answered every record, unfiltered) nor its second value.
    for query in
        ["filter=name='L01'&filter=name='L02'", "perPage=5&perPage=10", "fields=name&sort=-position&sort=position"]
    {
        let (status, body) = t.call("GET", &format!("/api/collections/lists/records?{query}"), None).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")), "{query}: {body}");
        assert!(body["message"].as_str().unwrap().contains("duplicate field"), "{query}: {body}");
    }
    let live = t.create("lists", json!({"name": "live"})).await;
    let id = live["id"].as_str().unwrap();
    let (status, body) =
        t.call("GET", &format!("/api/collections/lists/records/{id}?fields=id&fields=name"), None).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")), "{body}");
}

#[tokio::test]
async fn client_ids_are_accepted_once() {
    let t = TestApp::kanban().await;
    t.create("lists", json!({"name": "A", "id": "aaaaaaaaaaaaaaa"})).await;
    let (status, body) =
        t.call("POST", "/api/collections/lists/records", Some(json!({"name": "B", "id": "aaaaaaaaaaaaaaa"}))).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("duplicate_id")));
    let (status, body) =
        t.call("POST", "/api/collections/lists/records", Some(json!({"name": "B", "id": "BAD"}))).await;
    assert_eq!(status, 400);
    assert_eq!(violations(&body), [("invalid_string".to_owned(), "id".to_owned())]);
}

#[tokio::test]
async fn every_violation_comes_back_in_one_answer() {
    let t = TestApp::kanban().await;
    let body = json!({"title": 5, "list": "nope00000000001", "due_date": "tomorrow", "bogus": 1});
    let (status, got) = t.call("POST", "/api/collections/cards/records", Some(body)).await;
    assert_eq!(status, 400);
    assert_eq!(got["a2app"], true);
    assert_eq!(got["ok"], false);
    assert_eq!(got["code"], "invalid_string");
    assert_eq!(
        violations(&got),
        [
            ("invalid_string".to_owned(), "title".to_owned()),
            ("invalid_ref".to_owned(), "list".to_owned()),
            ("invalid_date".to_owned(), "due_date".to_owned()),
            ("unknown_field".to_owned(), "bogus".to_owned()),
        ]
    );
    let (_, page) = t.call("GET", "/api/collections/cards/records", None).await;
    assert_eq!(page["totalItems"], 0, "nothing was written");
}

#[tokio::test]
async fn deleting_a_list_held_by_a_required_ref_is_refused() {
    let t = TestApp::kanban().await;
    t.create("lists", json!({"name": "A", "id": "aaaaaaaaaaaaaaa"})).await;
    let m = t.create("members", json!({"name": "Ann", "id": "mmmmmmmmmmmmmmm"})).await;
    let card = t.create("cards", json!({"title": "c", "list": "aaaaaaaaaaaaaaa", "assignees": [m["id"]]})).await;
    let (status, body) = t.call("DELETE", "/api/collections/lists/records/aaaaaaaaaaaaaaa", None).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("in_use")));
    // An optional ref is cleared instead.
    let (status, _) = t.call("DELETE", "/api/collections/members/records/mmmmmmmmmmmmmmm", None).await;
    assert_eq!(status, 204);
    let (_, got) =
        t.call("GET", &format!("/api/collections/cards/records/{}", card["id"].as_str().unwrap()), None).await;
    assert_eq!(got["assignees"], json!([]));
}

#[tokio::test]
async fn stale_if_match_is_a_version_conflict() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "A"})).await;
    let path = format!("/api/collections/lists/records/{}", list["id"].as_str().unwrap());
    let req = t
        .http
        .patch(format!("{}{path}", t.url))
        .header("X-LUI-Token", &t.token)
        .header("If-Match", "2020-01-01 00:00:00.000Z");
    let (status, body) = t.send(req, Some(json!({"name": "B"}))).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("version_conflict")));
    assert_eq!(body["record"]["name"], "A");
    let req = t
        .http
        .patch(format!("{}{path}", t.url))
        .header("X-LUI-Token", &t.token)
        .header("If-Match", list["updated"].as_str().unwrap());
    let (status, body) = t.send(req, Some(json!({"name": "B"}))).await;
    assert_eq!((status, body["name"].as_str()), (200, Some("B")));
    // An If-Match or a key the server cannot read is refused, not ignored
    // (ignored, the update would run unconditionally, the retry twice).
    for name in ["If-Match", "Idempotency-Key"] {
        let bytes = reqwest::header::HeaderValue::from_bytes(b"2026-01-01 \xe9").unwrap();
        let req = t.http.patch(format!("{}{path}", t.url)).header("X-LUI-Token", &t.token).header(name, bytes);
        let (status, body) = t.send(req, Some(json!({"name": "C"}))).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")), "{name}: {body}");
    }
    let (_, stored) = t.call("GET", &path, None).await;
    assert_eq!(stored["name"], "B");
    // A delete holds to its If-Match too: a stale version deletes nothing.
    let req = t
        .http
        .delete(format!("{}{path}", t.url))
        .header("X-LUI-Token", &t.token)
        .header("If-Match", "2020-01-01 00:00:00.000Z");
    let (status, body) = t.send(req, None).await;
    assert_eq!(
        (status, body["code"].as_str(), body["record"]["name"].as_str()),
        (409, Some("version_conflict"), Some("B"))
    );
    let (status, _) = t.call("GET", &path, None).await;
    assert_eq!(status, 200, "the record is still there");
    let req = t
        .http
        .delete(format!("{}{path}", t.url))
        .header("X-LUI-Token", &t.token)
        .header("If-Match", format!("\"{}\"", stored["updated"].as_str().unwrap()));
    let (status, _) = t.send(req, None).await;
    assert_eq!(status, 204, "the current version, quoted as an ETag, deletes it");
    let other = t.create("lists", json!({"name": "Other"})).await;
    let other = format!("{}/api/collections/lists/records/{}", t.url, other["id"].as_str().unwrap());
    let req = t.http.patch(&other).header("X-LUI-Token", &t.token).header("If-Match", "*");
    let (status, _) = t.send(req, Some(json!({"name": "Any version"}))).await;
    assert_eq!(status, 200, "If-Match: * holds for any version of a record that exists");
    let (status, _) = t.call("GET", &path, None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn unknown_entities_bad_json_and_methods_get_the_envelope() {
    let t = TestApp::kanban().await;
    let (status, body) = t.call("GET", "/api/collections/boards/records", None).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("unknown_entity")));
    let req = t
        .http
        .post(format!("{}/api/collections/lists/records", t.url))
        .header("X-LUI-Token", &t.token)
        .body("{\"name\": ");
    let (status, body) = t.send(req, None).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_json")));
    let (status, body) = t.call("POST", "/api/collections/lists/records", Some(json!(["x"]))).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_json")));
    let (status, body) = t.call("PUT", "/api/collections/lists/records", None).await;
    assert_eq!((status, body["code"].as_str()), (405, Some("method_not_allowed")));
    let req = t
        .http
        .post(format!("{}/api/collections/lists/records", t.url))
        .header("X-LUI-Token", &t.token)
        .body(vec![b' '; 2 << 20]);
    let (status, body) = t.send(req, None).await;
    assert_eq!((status, body["code"].as_str()), (413, Some("payload_too_large")));
}

/// Hardening issue, finding 8: PocketBase's set modifiers (`points+`,
/// `+labels`, `labels-`) were refused as unknown fields. They are applied to
/// the stored value inside the write's transaction, the result is guarded
/// as if sent, and the receipt shows it.
#[tokio::test]
async fn set_modifiers_change_numbers_and_lists_atomically() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let ann = t.create("members", json!({"name": "Ann"})).await;
    let bob = t.create("members", json!({"name": "Bob"})).await;
    let (ann, bob) = (ann["id"].as_str().unwrap(), bob["id"].as_str().unwrap());
    let card = t
        .create(
            "cards",
            json!({"title": "Count", "list": list["id"], "points+": 5, "labels+": ["bug"], "assignees+": ann}),
        )
        .await;
    assert_eq!(
        (card["points"].as_i64(), card["labels"].clone(), card["assignees"].clone()),
        (Some(5), json!(["bug"]), json!([ann]))
    );
    let path = format!("/api/collections/cards/records/{}", card["id"].as_str().unwrap());

    let (status, got) = t
        .call("PATCH", &path, Some(json!({"points-": 2, "+labels": ["docs"], "labels+": "chore", "assignees+": [bob]})))
        .await;
    assert_eq!(status, 200, "{got}");
    assert_eq!(got["points"], 3);
    assert_eq!(got["labels"], json!(["docs", "bug", "chore"]));
    assert_eq!(got["assignees"], json!([ann, bob]));
    assert_eq!(
        got["_receipt"]["text"],
        "Updated \"Count\": points → 3, labels → docs, bug, chore, assignees → Ann, Bob"
    );
    let (_, got) =
        t.call("PATCH", &path, Some(json!({"labels-": ["bug", "docs"], "assignees-": ann, "estimate+": 0.5}))).await;
    assert_eq!(
        (got["labels"].clone(), got["assignees"].clone(), got["estimate"].as_f64()),
        (json!(["chore"]), json!([bob]), Some(0.5))
    );

    // The result is guarded: past the field's range, a ref that is no record.
    for (body, want) in [
        (json!({"points+": 98}), ("out_of_range", "points")),
        (json!({"points-": 4}), ("out_of_range", "points")),
        (json!({"assignees+": "zzzzzzzzzzzzzzz"}), ("invalid_ref", "assignees")),
        (json!({"labels+": "nope"}), ("invalid_enum", "labels")),
        (json!({"title+": "x"}), ("unknown_field", "title")),
        (json!({"points+": "1"}), ("invalid_number", "points")),
        (json!({"points": 1, "points+": 1}), ("invalid_json", "points")),
    ] {
        let (status, refused) = t.call("PATCH", &path, Some(body.clone())).await;
        assert_eq!(
            (status, violations(&refused)),
            (400, vec![(want.0.to_owned(), want.1.to_owned())]),
            "{body}: {refused}"
        );
    }
    let (_, now) = t.call("GET", &path, None).await;
    assert_eq!((now["points"].as_i64(), now["labels"].clone()), (Some(3), json!(["chore"])), "nothing was written");

    // Fifty agents add one at once: every one counts.
    let adds = futures_util::future::join_all((0..50).map(|_| t.call("PATCH", &path, Some(json!({"points+": 1})))));
    let statuses: Vec<u16> = adds.await.into_iter().map(|(s, _)| s).collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    let (_, now) = t.call("GET", &path, None).await;
    assert_eq!(now["points"], 53);
}

/// Issue 41, found while measuring: a filter of only whitespace answered 200
/// with the whole list, where PocketBase 0.40.6 refuses it; an empty one is
/// no filter for both.
#[tokio::test]
async fn a_filter_of_only_whitespace_is_refused_and_an_empty_one_is_none() {
    let t = TestApp::kanban().await;
    t.create("lists", json!({"name": "To Do"})).await;
    for filter in ["%20%20%20", "%0A", "//%20nothing"] {
        let (status, body) = t.call("GET", &format!("/api/collections/lists/records?filter={filter}"), None).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_filter")), "{filter}: {body}");
    }
    let (status, body) = t.call("GET", "/api/collections/lists/records?filter=", None).await;
    assert_eq!((status, body["totalItems"].as_i64()), (200, Some(1)), "{body}");
}
