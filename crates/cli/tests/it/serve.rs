//! `agent-app serve`: launch-time migration and durability under SIGKILL.

use crate::{Server, copy_app, example, free_port, run};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn write_schema(dir: &std::path::Path, schema: &Value) {
    std::fs::write(dir.join("schema.json"), schema.to_string()).unwrap();
}

fn serve_once(dir: &std::path::Path, extra: &[&str]) -> (i32, String) {
    // A refused migration exits before listening; a good one is stopped here.
    let port = free_port();
    let mut cmd = crate::bin();
    cmd.arg("serve").arg(dir).args(["--http", &format!("127.0.0.1:{port}")]).args(extra);
    let mut child = cmd.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            let _ = child.kill();
            let _ = child.wait();
            return (0, String::new());
        }
        assert!(std::time::Instant::now() < deadline, "serve neither listened nor exited");
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn post(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    entity: &str,
    body: &Value,
) -> Result<(u16, Value), reqwest::Error> {
    let resp = http
        .post(format!("{url}/api/collections/{entity}/records"))
        .header("X-LUI-Token", token)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await?;
    let status = resp.status().as_u16();
    Ok((status, resp.json().await?))
}

#[tokio::test]
async fn additive_changes_apply_and_destructive_ones_need_the_flag() {
    let dir = copy_app(&example("kanban"));
    let port = free_port();
    let server = Server::start(dir.path(), port, &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    let http = crate::http().build().unwrap();
    let (status, _) =
        post(&http, &server.url, &token, "lists", &json!({"name": "Keep me", "color": "red"})).await.unwrap();
    assert_eq!(status, 200);
    let version = |url: String| {
        let http = http.clone();
        async move {
            let id: Value = http.get(format!("{url}/api/_a2app")).send().await.unwrap().json().await.unwrap();
            id["schemaVersion"].as_str().unwrap().to_owned()
        }
    };
    let first_version = version(server.url.clone()).await;
    drop(server);
    // The same schema, reformatted, is the same version.
    let text = std::fs::read_to_string(dir.path().join("schema.json")).unwrap();
    let reformatted: Value = serde_json::from_str(&text).unwrap();
    std::fs::write(dir.path().join("schema.json"), serde_json::to_string(&reformatted).unwrap()).unwrap();
    let server = Server::start(dir.path(), free_port(), &[]);
    assert_eq!(version(server.url.clone()).await, first_version);
    drop(server);

    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("schema.json")).unwrap()).unwrap();
    // Additive: a new entity, a new optional field, a new index.
    schema["entities"]["tags"] = json!({"fields": {"name": {"type": "string"}}});
    schema["entities"]["lists"]["fields"]["archived"] = json!({"type": "boolean"});
    schema["entities"]["lists"]["indexes"] = json!([["position"], ["archived"]]);
    write_schema(dir.path(), &schema);
    assert_eq!(serve_once(dir.path(), &[]).0, 0);

    // Destructive: dropping a field that holds data, changing a type.
    let mut dropped = schema.clone();
    dropped["entities"]["lists"]["fields"].as_object_mut().unwrap().remove("color");
    dropped["entities"]["lists"]["fields"]["position"] = json!({"type": "string"});
    write_schema(dir.path(), &dropped);
    let (code, err) = serve_once(dir.path(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("dropping field lists.color would lose its values in 1 records"), "{err}");
    assert!(err.contains("--allow-destructive"), "{err}");

    // Nothing was changed by the refusal: the old schema still serves the data.
    write_schema(dir.path(), &schema);
    let server = Server::start(dir.path(), free_port(), &[]);
    let page: Value =
        http.get(format!("{}/api/collections/lists/records", server.url)).send().await.unwrap().json().await.unwrap();
    assert_eq!(page["items"][0]["color"], "red");
    assert_eq!(page["items"][0]["archived"], false);
    assert_ne!(version(server.url.clone()).await, first_version, "a changed schema is a new version");
    drop(server);

    write_schema(dir.path(), &dropped);
    assert_eq!(serve_once(dir.path(), &["--allow-destructive"]).0, 0);
}

#[tokio::test]
async fn every_acknowledged_create_survives_sigkill() {
    let dir = copy_app(&example("kanban"));
    let port = free_port();
    let mut server = Server::start(dir.path(), port, &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    let http = crate::http().timeout(Duration::from_secs(5)).build().unwrap();
    let (status, list) = post(&http, &server.url, &token, "lists", &json!({"name": "Burst"})).await.unwrap();
    assert_eq!(status, 200);
    let list_id = list["id"].as_str().unwrap().to_owned();

    let acked: Arc<Mutex<Vec<Value>>> = Arc::default();
    let mut tasks = Vec::new();
    for worker in 0..16 {
        let (http, url, token, acked, list_id) =
            (http.clone(), server.url.clone(), token.clone(), Arc::clone(&acked), list_id.clone());
        tasks.push(tokio::spawn(async move {
            for n in 0..10_000 {
                let body = json!({
                    "title": format!("w{worker} n{n}"), "list": list_id, "points": n % 100,
                    "labels": ["bug"], "meta": {"worker": worker, "n": n}, "due_day": "2026-07-31"
                });
                match post(&http, &url, &token, "cards", &body).await {
                    Ok((200, mut record)) => {
                        // The stored record is what must survive; the receipt is about it.
                        record.as_object_mut().unwrap().remove("_receipt");
                        acked.lock().unwrap().push(record)
                    }
                    Ok((status, body)) => panic!("unexpected answer {status}: {body}"),
                    Err(_) => return,
                }
            }
        }));
    }
    // Kill mid-burst, once a good number of writes were acknowledged.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < 300 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 300, "only {} writes were acknowledged before the kill", acked.len());

    let server = Server::start(dir.path(), free_port(), &[]);
    let mut missing = 0;
    for record in &acked {
        let url = format!("{}/api/collections/cards/records/{}", server.url, record["id"].as_str().unwrap());
        let stored: Value = http.get(url).send().await.unwrap().json().await.unwrap();
        if &stored != record {
            missing += 1;
        }
    }
    assert_eq!(missing, 0, "{missing} of {} acknowledged records were lost or changed", acked.len());
}

#[test]
fn token_prints_and_rotates() {
    let dir = copy_app(&example("kanban"));
    let d = dir.path().to_str().unwrap();
    let a = String::from_utf8(run(&["token", d]).stdout).unwrap();
    let b = String::from_utf8(run(&["token", d]).stdout).unwrap();
    let c = String::from_utf8(run(&["token", d, "--rotate"]).stdout).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert_eq!(a.trim().len(), 44);
}

#[tokio::test]
async fn keyed_writes_survive_sigkill_without_duplicates() {
    let dir = copy_app(&example("kanban"));
    let mut server = Server::start(dir.path(), free_port(), &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    let http = crate::http().timeout(Duration::from_secs(5)).build().unwrap();
    let keyed = |url: &str, key: &str| {
        http.post(format!("{url}/api/collections/lists/records"))
            .header("X-LUI-Token", &token)
            .header("Idempotency-Key", key)
            .header("content-type", "application/json")
            .body(json!({"name": key}).to_string())
            .send()
    };

    // Each worker sends distinct keys; every key attempted is remembered, acked or not.
    let attempted: Arc<Mutex<Vec<String>>> = Arc::default();
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let mut tasks = Vec::new();
    for worker in 0..12 {
        let (http, url, token) = (http.clone(), server.url.clone(), token.clone());
        let (attempted, acked) = (Arc::clone(&attempted), Arc::clone(&acked));
        tasks.push(tokio::spawn(async move {
            for n in 0..10_000 {
                let key = format!("w{worker}-{n}");
                attempted.lock().unwrap().push(key.clone());
                let sent = http
                    .post(format!("{url}/api/collections/lists/records"))
                    .header("X-LUI-Token", &token)
                    .header("Idempotency-Key", &key)
                    .header("content-type", "application/json")
                    .body(json!({"name": key}).to_string())
                    .send()
                    .await;
                let Ok(resp) = sent else { return };
                assert_eq!(resp.status().as_u16(), 200);
                let Ok(body) = resp.json::<Value>().await else { return };
                acked.lock().unwrap().push((key, body["id"].as_str().unwrap().to_owned()));
            }
        }));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < 200 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let (attempted, acked) = (attempted.lock().unwrap().clone(), acked.lock().unwrap().clone());
    assert!(acked.len() >= 200, "only {} keyed writes were acknowledged", acked.len());

    // After the restart, a retry of every key attempted: an acknowledged key is
    // refused naming its record; an unknown outcome is settled either way.
    let server = Server::start(dir.path(), free_port(), &[]);
    let mut record_of_key = std::collections::HashMap::new();
    for key in &attempted {
        let resp = keyed(&server.url, key).await.unwrap();
        let status = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap();
        let id = match status {
            409 => {
                assert_eq!(body["code"], "duplicate_request");
                body["id"].as_str().unwrap().to_owned()
            }
            200 => body["id"].as_str().unwrap().to_owned(),
            other => panic!("retry of {key} answered {other}: {body}"),
        };
        record_of_key.insert(key.clone(), id);
    }
    for (key, id) in &acked {
        assert_eq!(record_of_key.get(key), Some(id), "acknowledged {key} lost or rewritten");
    }
    let page: Value = http
        .get(format!("{}/api/collections/lists/records?perPage=1000&fields=name", server.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut names: Vec<&str> = page["items"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
    let total = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), total, "a key wrote twice");
    assert_eq!(page["totalItems"].as_u64(), Some(attempted.len() as u64), "one record per key attempted, no more");
}

/// The server's peak resident memory so far, in MiB (`VmHWM`).
fn peak_mib(server: &Server) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", server.child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// Sets the server's peak resident memory back to what it holds now.
fn reset_peak(server: &Server) {
    std::fs::write(format!("/proc/{}/clear_refs", server.child.id()), "5").unwrap();
}

/// Hardening issue, finding 1: an `expand` path that goes back and forth
/// (`list.cards_via_list.list…`) copied every card under every card: 40 cards
/// made a 700 MB answer and a 9 GB peak. Now the whole expansion is weighed
/// before a copy is made and refused past the per-answer budget, quickly and
/// without the memory.
#[tokio::test]
async fn an_expand_that_multiplies_is_refused_fast_and_the_memory_stays_low() {
    let dir = copy_app(&example("kanban"));
    let port = free_port();
    let mut server = Server::start(dir.path(), port, &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    let http = crate::http().build().unwrap();
    let url = server.url.clone();
    let (status, list) = post(&http, &url, &token, "lists", &json!({"name": "All"})).await.unwrap();
    assert_eq!(status, 200, "{list}");
    let list = list["id"].as_str().unwrap().to_owned();
    let seed = |from: usize, to: usize, meta: Option<String>| {
        let (http, url, token, list) = (http.clone(), url.clone(), token.clone(), list.clone());
        async move {
            let mut tasks = Vec::new();
            for chunk in (from..to).collect::<Vec<_>>().chunks(100) {
                let chunk = chunk.to_vec();
                let (http, url, token, list, meta) =
                    (http.clone(), url.clone(), token.clone(), list.clone(), meta.clone());
                tasks.push(tokio::spawn(async move {
                    for i in chunk {
                        let mut body = json!({"title": format!("card {i}"), "list": list});
                        if let Some(m) = &meta {
                            body["meta"] = json!({"blob": m});
                        }
                        let (status, answer) = post(&http, &url, &token, "cards", &body).await.unwrap();
                        assert_eq!(status, 200, "{answer}");
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        }
    };
    let path = "list.cards_via_list.list.cards_via_list.list.cards_via_list";
    let get = |query: String| {
        // A client of its own: the server is restarted below, and a pooled
        // connection to the old process would be read as a failed request.
        let (http, url) = (crate::http().build().unwrap(), url.clone());
        async move {
            let started = std::time::Instant::now();
            let resp = http.get(format!("{url}/api/collections/cards/records?{query}")).send().await.unwrap();
            let status = resp.status().as_u16();
            let body: Value = resp.json().await.unwrap();
            (status, body, started.elapsed())
        }
    };
    // About 25 cards, one holding 1 MB of meta: the bytes bound it.
    seed(0, 24, None).await;
    seed(24, 25, Some("x".repeat(1_000_000))).await;
    // What storing the 1 MB card took is not the attack's: from here, the peak
    // counts the expanding requests.
    reset_peak(&server);
    let (status, body, took) = get(format!("expand={path}")).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("expand_too_large")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("perPage"), "{body}");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    // The same with 40 cards of no size, and with 1,000.
    seed(25, 40, None).await;
    let (status, body, took) = get(format!("expand={path}")).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("expand_too_large")), "{body}");
    assert!(took < Duration::from_secs(1), "took {took:?}");
    seed(40, 1000, None).await;
    // A fresh process on the same database: what the 1,000 creates left in
    // SQLite's page caches (several readers' and the writer's, up to 16 MB
    // each) is not the attack's either, and it made the peak swing 86 to
    // 100+ MiB with the machine's load.
    drop(server);
    server = Server::start(dir.path(), port, &[]);
    reset_peak(&server);
    for query in [format!("expand={path}"), format!("perPage=1&expand={path}")] {
        let (status, body, took) = get(query).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("expand_too_large")), "{body}");
        assert!(took < Duration::from_secs(1), "took {took:?}");
    }
    // A single back-and-forth is within the budget and answered whole: one
    // card, its list, and the list's 1,000 cards.
    let (status, body, _) = get("perPage=1&expand=list.cards_via_list".into()).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["items"][0]["expand"]["list"]["expand"]["cards_via_list"].as_array().unwrap().len(), 1000);
    let peak = peak_mib(&server);
    assert!(peak < 100, "the server's peak memory was {peak} MiB");
}
