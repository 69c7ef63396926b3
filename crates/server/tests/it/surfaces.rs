//! A2UI surfaces over HTTP (`/api/_a2app/surfaces`), the same store and
//! checks as MCP's `show`.

use crate::{TestApp, violations};
use serde_json::{Value, json};

fn survey() -> Value {
    json!([{"version": "v1.0", "createSurface": {
    "surfaceId": "survey", "dataModel": {"ok": false},
    "components": [
        {"id": "root", "component": "Card", "child": "ok"},
        {"id": "ok", "component": "CheckBox", "label": "All good?", "value": {"path": "/ok"}}
    ]}}])
}

#[tokio::test]
async fn surfaces_are_rendered_listed_and_read_over_http() {
    let t = TestApp::kanban().await;
    let (status, body) = t.call("POST", "/api/_a2app/surfaces", Some(survey())).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["catalogId"], "urn:a2app:a2ui:catalog:v1");
    assert_eq!(body["surfaces"][0]["createSurface"]["catalogId"], "urn:a2app:a2ui:catalog:v1");
    assert_eq!(body["surfaces"][0]["createSurface"]["components"].as_array().unwrap().len(), 2);

    let set = json!({"version": "v1.0", "updateDataModel": {"surfaceId": "survey", "path": "/ok", "value": true}});
    assert_eq!(t.call("POST", "/api/_a2app/surfaces", Some(set)).await.0, 200);
    let (status, one) = t.call("GET", "/api/_a2app/surfaces/survey", None).await;
    assert_eq!(status, 200);
    assert_eq!(one["createSurface"]["dataModel"], json!({"ok": true}));
    let (_, list) = t.call("GET", "/api/_a2app/surfaces", None).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 1);
    assert_eq!(list["items"][0]["surfaceId"], "survey");

    let (status, missing) = t.call("GET", "/api/_a2app/surfaces/nothing", None).await;
    assert_eq!(status, 404);
    assert_eq!(missing["code"], "unknown_surface");
    let (status, catalog) = t.call("GET", "/api/_a2app/a2ui/catalog", None).await;
    assert_eq!(status, 200);
    assert_eq!(catalog["components"].as_object().unwrap().len(), 11);
}

#[tokio::test]
async fn a_bad_batch_is_refused_whole_with_every_violation_and_without_the_token_at_all() {
    let t = TestApp::kanban().await;
    let mut bad = survey();
    bad[0]["createSurface"]["components"][1]["component"] = json!("Iframe");
    bad[0]["createSurface"]["components"][0]["child"] = json!("gone");
    bad.as_array_mut().unwrap().push(json!({"version": "v1.0", "deleteSurface": {"surfaceId": "never-made"}}));
    let (status, body) = t.call("POST", "/api/_a2app/surfaces", Some(bad)).await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "unknown_component");
    assert_eq!(
        violations(&body),
        [("unknown_component".to_owned(), "/0/createSurface/components/1/component".to_owned())]
    );
    let (_, list) = t.call("GET", "/api/_a2app/surfaces", None).await;
    assert_eq!(list["items"], json!([]), "nothing of it was stored");

    // Checks of the whole surface come after each message reads well.
    let mut dangling = survey();
    dangling[0]["createSurface"]["components"][0]["child"] = json!("gone");
    let (status, body) = t.call("POST", "/api/_a2app/surfaces", Some(dangling)).await;
    assert_eq!(status, 400);
    assert_eq!(violations(&body), [("dangling_reference".to_owned(), "surfaces/survey/components/root".to_owned())]);

    let anonymous = t.http.post(format!("{}/api/_a2app/surfaces", t.url));
    let (status, body) = t.send(anonymous, Some(survey())).await;
    assert_eq!(status, 401, "{body}");
    for path in ["/api/_a2app/surfaces", "/api/_a2app/surfaces/survey"] {
        let (status, _) = t.send(t.http.get(format!("{}{path}", t.url)), None).await;
        assert_eq!(status, 401, "{path} without the token");
    }
    let (status, body) = t.call("POST", "/api/_a2app/surfaces", Some(json!("not messages"))).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_property")));
}

/// The shapes a review used to overflow the stack: each answered with a
/// code, and the server still answers after them.
#[tokio::test]
async fn hostile_batches_get_codes_and_the_server_stays_up() {
    let t = TestApp::kanban().await;
    assert_eq!(t.call("POST", "/api/_a2app/surfaces", Some(survey())).await.0, 200);
    let long = json!({"version": "v1.0", "updateDataModel": {"surfaceId": "survey", "path": "/a".repeat(100_000), "value": 1}});
    let (status, body) = t.call("POST", "/api/_a2app/surfaces", Some(long)).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("out_of_range")));
    let chain: Vec<Value> = (0..5000)
        .map(|i| json!({"id": if i == 0 { "root".to_owned() } else { format!("c{i}") }, "component": "Card", "child": format!("c{}", i + 1)}))
        .collect();
    let chain = json!({"version": "v1.0", "createSurface": {"surfaceId": "chain", "components": chain}});
    let (status, body) = t.call("POST", "/api/_a2app/surfaces", Some(chain)).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("out_of_range")));
    let parrot = json!({"version": "v1.0", "updateDataModel": {"surfaceId": "survey", "path": "/said", "value": "\u{1f99c}:cid:root-x:Map"}});
    assert_eq!(t.call("POST", "/api/_a2app/surfaces", Some(parrot)).await.0, 200);
    let (status, one) = t.call("GET", "/api/_a2app/surfaces/survey", None).await;
    assert_eq!(status, 200);
    assert_eq!(one["createSurface"]["dataModel"]["said"], "\u{1f99c}:cid:root-x:Map");
}
