//! Files of binary fields: multipart uploads, checks, serving, cleanup.

use crate::{TestApp, pairs, violations};
use reqwest::multipart::{Form, Part};
use serde_json::{Value, json};

const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 1, 2, 3];

async fn post(t: &TestApp, method: reqwest::Method, path: &str, form: Form) -> (u16, Value) {
    let req = t.http.request(method, format!("{}{path}", t.url)).header("X-LUI-Token", &t.token).multipart(form);
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

fn avatar(bytes: &[u8], name: &str, mime: &str) -> Part {
    Part::bytes(bytes.to_vec()).file_name(name.to_owned()).mime_str(mime).unwrap()
}

fn stored(t: &TestApp, id: &str) -> Vec<String> {
    let dir = t.app.definition.data_dir().join("storage/members").join(id);
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[tokio::test]
async fn an_uploaded_file_is_stored_served_replaced_and_removed() {
    let t = TestApp::kanban().await;
    let form = Form::new()
        .text("@jsonPayload", json!({"name": "Ann"}).to_string())
        .part("avatar", avatar(PNG, "Me (1).png", "image/png"));
    let (status, member) = post(&t, reqwest::Method::POST, "/api/collections/members/records", form).await;
    assert_eq!(status, 200, "{member}");
    let id = member["id"].as_str().unwrap().to_owned();
    let name = member["avatar"].as_str().unwrap().to_owned();
    assert!(name.starts_with("me_1_") && name.ends_with(".png"), "{name}");
    assert_eq!(stored(&t, &id), std::slice::from_ref(&name));

    let resp = t.http.get(format!("{}/api/files/members/{id}/{name}", t.url)).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    // The SDK's file URLs name the collection by its id, as PocketBase's routes take either.
    let by_id = a2app_core::schema::collection_id("members");
    let same = t.http.get(format!("{}/api/files/{by_id}/{id}/{name}", t.url)).send().await.unwrap();
    assert_eq!((same.status().as_u16(), same.bytes().await.unwrap().as_ref()), (200, PNG));
    let (status, got) = t.call("GET", &format!("/api/collections/{by_id}/records/{id}"), None).await;
    assert_eq!((status, got["collectionName"].as_str()), (200, Some("members")));
    assert_eq!(resp.headers()["content-type"], "image/png");
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    assert_eq!(resp.bytes().await.unwrap().as_ref(), PNG);

    let form = Form::new().part("avatar", avatar(PNG, "new.png", "image/png"));
    let (status, updated) =
        post(&t, reqwest::Method::PATCH, &format!("/api/collections/members/records/{id}"), form).await;
    assert_eq!(status, 200, "{updated}");
    let new_name = updated["avatar"].as_str().unwrap().to_owned();
    assert_eq!(stored(&t, &id), std::slice::from_ref(&new_name), "the replaced file is gone");
    let (status, _) = t.call("GET", &format!("/api/files/members/{id}/{name}"), None).await;
    assert_eq!(status, 404);
    let (status, _) = t.call("GET", &format!("/api/files/members/{id}/..%2F..%2Fdata.db"), None).await;
    assert_eq!(status, 404);

    let (status, cleared) =
        t.call("PATCH", &format!("/api/collections/members/records/{id}"), Some(json!({"avatar": null}))).await;
    assert_eq!((status, cleared["avatar"].as_str()), (200, Some("")));
    assert!(stored(&t, &id).is_empty(), "clearing the field removes its file");
    let form = Form::new().part("avatar", avatar(PNG, "again.png", "image/png"));
    post(&t, reqwest::Method::PATCH, &format!("/api/collections/members/records/{id}"), form).await;
    let (status, _) = t.call("DELETE", &format!("/api/collections/members/records/{id}"), None).await;
    assert_eq!(status, 204);
    assert!(!t.app.definition.data_dir().join("storage/members").join(&id).exists());
}

#[tokio::test]
async fn a_bad_upload_is_refused_with_every_problem_and_leaves_nothing() {
    let t = TestApp::kanban().await;
    let form = Form::new()
        .text("@jsonPayload", json!({"name": ""}).to_string())
        .part("avatar", avatar(b"<svg onload=alert(1)/>", "x.png", "image/png"))
        .part("website", avatar(PNG, "y.png", "image/png"));
    let (status, body) = post(&t, reqwest::Method::POST, "/api/collections/members/records", form).await;
    assert_eq!(status, 400, "{body}");
    let got: Vec<(&str, &str)> = body["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["code"].as_str().unwrap(), v["field"].as_str().unwrap()))
        .collect();
    assert_eq!(got, [("required_field", "name"), ("invalid_string", "avatar"), ("unknown_field", "website")]);
    let (_, page) = t.call("GET", "/api/collections/members/records", None).await;
    assert_eq!(page["totalItems"], 0);
    assert!(!t.app.definition.data_dir().join("storage").exists(), "no file was kept");
}

#[tokio::test]
async fn form_parts_are_read_whole_or_refused() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "L"})).await["id"].as_str().unwrap().to_owned();
    // As the PocketBase SDK sends a body beside a file: each object value in
    // an @jsonPayload of its own, every other value as a text part, read by
    // its field's type.
    let form = Form::new()
        .text("title", "typed")
        .text("list", list.clone())
        .text("points", "5")
        .text("done", "true")
        .text("@jsonPayload", json!({"labels": ["bug"]}).to_string())
        .text("@jsonPayload", json!({"meta": {"a": 1}}).to_string());
    let (status, card) = post(&t, reqwest::Method::POST, "/api/collections/cards/records", form).await;
    assert_eq!(status, 200, "{card}");
    assert_eq!(
        (&card["points"], &card["done"], &card["labels"], &card["meta"]),
        (&json!(5), &json!(true), &json!(["bug"]), &json!({"a": 1}))
    );
    // A name sent twice is a list, as PocketBase reads a form.
    let form = Form::new()
        .text("title", "two labels")
        .text("list", list.clone())
        .text("labels", "bug")
        .text("labels", "chore");
    let (status, card) = post(&t, reqwest::Method::POST, "/api/collections/cards/records", form).await;
    assert_eq!((status, &card["labels"]), (200, &json!(["bug", "chore"])), "{card}");
    // ... and a list where one value belongs, or text that is no number, is
    // the guard's to refuse.
    let form = Form::new().text("title", "a").text("title", "b").text("list", list.clone()).text("points", "abc");
    let (status, body) = post(&t, reqwest::Method::POST, "/api/collections/cards/records", form).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(violations(&body), pairs(&[("invalid_string", "title"), ("invalid_number", "points")]));

    // Text that is not UTF-8 is refused, not stored with replacement characters.
    let form =
        Form::new().text("title", "x").text("list", list.clone()).part("description", Part::bytes(b"caf\xe9".to_vec()));
    let (status, body) = post(&t, reqwest::Method::POST, "/api/collections/cards/records", form).await;
    assert_eq!(
        (status, body["code"].as_str(), body["field"].as_str()),
        (400, Some("invalid_string"), Some("description"))
    );
    // A field given twice (two payloads, or a payload and a part) is refused, not picked.
    let form = Form::new()
        .text("@jsonPayload", json!({"title": "from the payload", "list": list}).to_string())
        .text("@jsonPayload", json!({"list": list}).to_string())
        .text("title", "from a part");
    let (status, body) = post(&t, reqwest::Method::POST, "/api/collections/cards/records", form).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(violations(&body), pairs(&[("invalid_json", "list"), ("invalid_json", "title")]));
    let (_, page) = t.call("GET", "/api/collections/cards/records", None).await;
    assert_eq!(page["totalItems"], 2, "only the two good cards were stored");

    // An empty file input (no name, no bytes) uploads nothing: the stored
    // file stays.
    let form = Form::new().text("name", "Ann").part("avatar", avatar(PNG, "me.png", "image/png"));
    let (_, member) = post(&t, reqwest::Method::POST, "/api/collections/members/records", form).await;
    let id = member["id"].as_str().unwrap().to_owned();
    let form = Form::new().text("name", "Ann B").part("avatar", Part::bytes(Vec::new()).file_name(""));
    let (status, updated) =
        post(&t, reqwest::Method::PATCH, &format!("/api/collections/members/records/{id}"), form).await;
    assert_eq!((status, updated["name"].as_str()), (200, Some("Ann B")), "{updated}");
    assert_eq!(updated["avatar"], member["avatar"]);
    assert_eq!(stored(&t, &id).len(), 1);
}
