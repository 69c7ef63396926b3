//! Random batches of A2UI messages at `/api/_a2app/surfaces`, from the same
//! seeded generator as the other fuzz tests. Components come from the
//! catalog or near it (unknown components and properties, wrong kinds,
//! functions, events naming anything, children naming anything, cycles),
//! data model paths and values of every depth. Every answer is checked:
//!
//! - 200, or a refusal with a code of the table and that code's status;
//!   never a 5xx, and the server answers to the end;
//! - an accepted batch answers each touched surface as it is then stored,
//!   and a stored surface holds together (a root, every child it names);
//! - a refused batch changes no surface (all or nothing).

use super::{rounds, seed};
use crate::TestApp;
use protocol::ErrorCode;
use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::{RngExt, SeedableRng};
use serde_json::{Value, json};
use std::collections::BTreeMap;

const SURFACES: &[&str] = &["a", "b", "c"];
const IDS: &[&str] = &["root", "t1", "t2", "box", "btn", "in", "ghost"];
/// Names outside the catalog, beside every name in it.
const STRANGERS: &[&str] = &["Blink", "Surface", "Iframe"];

fn value(rng: &mut StdRng, depth: usize) -> Value {
    match rng.random_range(0..8) {
        0 => Value::Null,
        1 => json!(rng.random_bool(0.5)),
        2 => json!(rng.random_range(-1000..1000)),
        3 => json!(["\u{1f99c}:cid:root-x:Map", "text", "<b>x</b>", ""].choose(rng).copied()),
        4 if depth > 0 => Value::Array((0..rng.random_range(0..3)).map(|_| value(rng, depth - 1)).collect()),
        5 if depth > 0 => {
            let mut m = serde_json::Map::new();
            for _ in 0..rng.random_range(0..3) {
                m.insert(
                    ["k", "name", "path", "call", "__proto__"].choose(rng).unwrap().to_string(),
                    value(rng, depth - 1),
                );
            }
            Value::Object(m)
        }
        6 => {
            let path = ["/title", "/a/b", "name", "/x/0"].choose(rng).unwrap();
            json!({ "path": path })
        }
        _ => json!(1.5e300),
    }
}

fn deep(rng: &mut StdRng) -> Value {
    let mut v = json!(1);
    for _ in 0..rng.random_range(0..45) {
        v = json!({ "d": v });
    }
    v
}

fn component(rng: &mut StdRng) -> Value {
    let names: Vec<&str> =
        a2app_a2ui::catalog::COMPONENTS.iter().map(|c| c.name).chain(STRANGERS.iter().copied()).collect();
    let name = *names.choose(rng).unwrap();
    let mut c = json!({"id": IDS.choose(rng).unwrap(), "component": name});
    let id = |rng: &mut StdRng| json!(IDS.choose(rng).unwrap());
    let text = |rng: &mut StdRng| if rng.random_bool(0.7) { json!("Hello") } else { value(rng, 2) };
    match name {
        "Text" => c["text"] = text(rng),
        "Row" | "Column" | "List" => {
            c["children"] = if rng.random_bool(0.8) {
                Value::Array((0..rng.random_range(0..4)).map(|_| id(rng)).collect())
            } else {
                json!({"componentId": IDS.choose(rng).unwrap(), "path": "/items"})
            }
        }
        "Card" => c["child"] = id(rng),
        "Button" => {
            c["child"] = id(rng);
            let name = ["create", "query", "run_operation", "drop", "show"].choose(rng).unwrap();
            c["action"] = if rng.random_bool(0.85) {
                json!({"event": {"name": name, "context": {"entity": "cards", "record": {"title": {"path": "/title"}}}}})
            } else {
                json!({"functionCall": {"call": "openUrl"}})
            };
        }
        "TextField" | "CheckBox" => {
            c["label"] = text(rng);
            c["value"] = json!({"path": "/title"});
        }
        "ChoicePicker" => {
            c["options"] = json!([{"label": "One", "value": "1"}]);
            c["value"] = json!({"path": "/choice"});
        }
        "DateTimeInput" => c["value"] = json!({"@path": "/when"}),
        _ => {}
    }
    if rng.random_bool(0.1) {
        c["onclick"] = json!("steal()");
    }
    if rng.random_bool(0.05) {
        c["weight"] = json!("heavy");
    }
    c
}

fn message(rng: &mut StdRng) -> Value {
    let surface = *SURFACES.choose(rng).unwrap();
    let components = |rng: &mut StdRng| {
        let mut list: Vec<Value> = (0..rng.random_range(0..6)).map(|_| component(rng)).collect();
        if rng.random_bool(0.7) {
            list.insert(0, json!({"id": "root", "component": "Column", "children": ["t1"]}));
            list.insert(1, json!({"id": "t1", "component": "Text", "text": {"path": "/title"}}));
        }
        Value::Array(list)
    };
    let mut m = match rng.random_range(0..5) {
        0 | 1 => json!({"version": "v1.0", "createSurface": {"surfaceId": surface, "components": components(rng),
            "dataModel": {"title": "x", "items": [{"name": "i"}]}}}),
        2 => json!({"version": "v1.0", "updateComponents": {"surfaceId": surface, "components": components(rng)}}),
        3 => {
            let path: String = (0..rng.random_range(0..20))
                .map(|_| format!("/{}", ["a", "b", "0", "-", "~1"].choose(rng).unwrap()))
                .collect();
            let v = if rng.random_bool(0.2) { deep(rng) } else { value(rng, 3) };
            json!({"version": "v1.0", "updateDataModel": {"surfaceId": surface, "path": path, "value": v}})
        }
        _ => json!({"version": "v1.0", "deleteSurface": {"surfaceId": surface}}),
    };
    if rng.random_bool(0.03) {
        m["version"] = json!("1.0");
    }
    m
}

async fn state(t: &TestApp) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for id in SURFACES {
        let (status, body) = t.call("GET", &format!("/api/_a2app/surfaces/{id}"), None).await;
        assert!(status == 200 || status == 404, "{status} {body}");
        if status == 200 {
            out.insert(id.to_string(), body);
        }
    }
    out
}

fn holds_together(message: &Value) {
    let s = &message["createSurface"];
    let components = s["components"].as_array().unwrap();
    let ids: Vec<&str> = components.iter().map(|c| c["id"].as_str().unwrap()).collect();
    if ids.is_empty() {
        return;
    }
    assert!(ids.contains(&"root"), "{message}");
    for c in components {
        for child in c["child"]
            .as_str()
            .into_iter()
            .chain(c["children"].as_array().into_iter().flatten().filter_map(Value::as_str))
        {
            assert!(ids.contains(&child), "{child} dangles in {message}");
        }
    }
}

#[tokio::test]
async fn random_batches_of_a2ui_messages_keep_every_surface_whole() {
    // Reading a surface takes the write credential, so it counts as a write.
    let t = TestApp::with_config(|toml| toml.replace("writes_per_minute = 3000", "writes_per_minute = 0")).await;
    let seed = seed();
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5afe);
    let (mut accepted, mut refused) = (0, 0);
    for round in 0..rounds(150) {
        let batch: Vec<Value> = (0..rng.random_range(1..5)).map(|_| message(&mut rng)).collect();
        let before = state(&t).await;
        let (status, body) = t.call("POST", "/api/_a2app/surfaces", Some(Value::Array(batch.clone()))).await;
        let context = format!("seed {seed} round {round}: {status} {body}\nbatch {}", Value::Array(batch.clone()));
        assert!(status < 500, "{context}");
        let after = state(&t).await;
        if status == 200 {
            accepted += 1;
            // Every surface the batch touched is answered, and only those
            // changed: an answer of `surfaces: []` that stored nothing fails.
            let touched: std::collections::BTreeSet<&str> =
                batch.iter().filter_map(|m| m.as_object()?.values().find_map(|v| v["surfaceId"].as_str())).collect();
            let answered: std::collections::BTreeSet<&str> = body["surfaces"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m.as_object()?.values().find_map(|v| v["surfaceId"].as_str()))
                .collect();
            assert_eq!(answered, touched, "{context}");
            for id in SURFACES.iter().filter(|id| !touched.contains(*id)) {
                assert_eq!(after.get(*id), before.get(*id), "an untouched surface changed: {context}");
            }
            for m in body["surfaces"].as_array().unwrap() {
                if let Some(id) = m["createSurface"]["surfaceId"].as_str() {
                    holds_together(m);
                    assert_eq!(after.get(id), Some(m), "{context}");
                } else {
                    let id = m["deleteSurface"]["surfaceId"].as_str().unwrap();
                    assert!(!after.contains_key(id), "{context}");
                }
            }
        } else {
            refused += 1;
            let code = ErrorCode::from_name(body["code"].as_str().unwrap_or_default());
            assert!(code.is_some_and(|c| c.status() == status), "{context}");
            assert!(body["violations"].as_array().is_some_and(|v| !v.is_empty()), "{context}");
            assert_eq!(after, before, "a refused batch changed a surface: {context}");
        }
    }
    assert!(accepted >= 10 && refused >= 10, "accepted {accepted}, refused {refused}: the generator must do both");
    assert_eq!(t.call("GET", "/api/health", None).await.0, 200);
}
