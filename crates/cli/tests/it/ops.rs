//! Operations through the real binary: the build gate's fixtures (one per
//! kind of mistake, asserting the reported path) and job persistence across
//! a SIGKILL of `agent-app serve`.

use crate::{Server, copy_app, example, free_port, run};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const APP: &str = "id = \"t\"\nname = \"T\"\n";

/// Runs `agent-app check` on kanban's schema with `operations` and `toml`.
fn check(toml: &str, operations: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(example("kanban").join("schema.json"), dir.path().join("schema.json")).unwrap();
    std::fs::write(dir.path().join("app.toml"), toml).unwrap();
    std::fs::write(dir.path().join("operations.json"), operations).unwrap();
    let out = run(&["check", dir.path().to_str().unwrap()]);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

fn op(name: &str, executor: &str, extra: &str) -> String {
    format!(r#"{{"name": "{name}", "description": "d", {extra} "executor": {executor}}}"#)
}

#[test]
fn each_kind_of_operation_mistake_is_reported_with_its_path() {
    let update = r#"{"kind": "crud", "entity": "cards", "action": "update", "id": "{:card}", "set": {"done": true}}"#;
    let card = r#""params": {"card": {"type": "string", "required": true}},"#;
    let rows: Vec<(String, &str)> = vec![
        (
            format!("[{}, {}]", op("a", update, card), op("a", update, card)),
            "operations.json: $[1].name: duplicate operation \"a\"",
        ),
        (
            op("a", update, r#""params": {"card": {"type": "date"}},"#),
            "operations.json: $[0].params.card.type: param type must be one of: string, number, boolean",
        ),
        (
            op("a", r#"{"kind": "crud", "entity": "tasks", "action": "list"}"#, ""),
            "operations.json: $[0].executor.entity: unknown entity \"tasks\"",
        ),
        (
            op("a", r#"{"kind": "crud", "entity": "cards", "action": "list", "filter": "done = = true"}"#, ""),
            "operations.json: $[0].executor.filter: invalid filter:",
        ),
        (
            op("a", r#"{"kind": "crud", "entity": "cards", "action": "list", "filter": "colour = 'red'"}"#, ""),
            "operations.json: $[0].executor.filter: invalid filter for cards:",
        ),
        (
            op("a", r#"{"kind": "crud", "entity": "cards", "action": "delete", "filter": "list = {:list}"}"#, ""),
            "operations.json: $[0].executor.filter: {:list} names no declared param",
        ),
        (
            op(
                "a",
                r#"{"kind": "crud", "entity": "cards", "action": "delete", "filter": "list = {:list}"}"#,
                r#""params": {"list": {"type": "string"}},"#,
            ),
            "operations.json: $[0].executor.filter: {:list} names a param a call may leave out; make it required or give it a default",
        ),
        (
            op(
                "a",
                r#"{"kind": "crud", "entity": "cards", "action": "update", "id": "{:card}", "set": {"state": 1}}"#,
                card,
            ),
            "operations.json: $[0].executor.set.state: \"state\" is not a field of cards",
        ),
        (
            op("a", r#"{"kind": "job", "run": "export"}"#, r#""schedule": "every tuesday","#),
            "operations.json: $[0].schedule: bad interval \"tuesday\"",
        ),
        (
            op("a", r#"{"kind": "job", "run": "export"}"#, r#""schedule": "daily 9am","#),
            "operations.json: $[0].schedule: bad time \"9am\"",
        ),
        (
            op("a", r#"{"kind": "http", "method": "POST", "path": "echo"}"#, ""),
            "operations.json: $[0].executor.path: path must be a route",
        ),
        (op("a", r#"{"kind": "shell"}"#, ""), "operations.json: $[0].executor.kind: executor kind must be one of"),
        (
            op("describe", r#"{"kind": "job", "run": "export"}"#, ""),
            "operations.json: $[0].name: \"describe\" is the name of one of the app's own MCP tools",
        ),
    ];
    for (ops, want) in &rows {
        let ops = if ops.starts_with('[') { ops.clone() } else { format!("[{ops}]") };
        let (code, out) = check(APP, &ops);
        assert_eq!(code, 1, "{ops}\n{out}");
        assert!(out.lines().any(|l| l.starts_with(want)), "{ops}\nwanted a line starting with: {want}\ngot:\n{out}");
    }
}

/// The test backend (`tests/backend/backend.py`), which advertises its routes.
struct Backend(std::process::Child, String);

impl Backend {
    fn start() -> Backend {
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/backend/backend.py");
        let mut child = std::process::Command::new("python3")
            .arg(script)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the test backend");
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        Backend(child, format!("http://127.0.0.1:{}", line.trim()))
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn http_routes_are_checked_against_the_backend_when_it_is_reachable() {
    let backend = Backend::start();
    let toml = format!("{APP}[backend]\nurl = \"{}\"\n", backend.1);
    let routes = [
        ("POST", "/echo"),
        ("GET", "/search"),
        ("POST", "/refuse"),
        ("POST", "/fail"),
        ("GET", "/slow"),
        ("GET", "/big"),
        ("GET", "/moved"),
        ("GET", "/cut"),
        ("GET", "/drop"),
    ];
    let http = |m: &str, p: &str| format!(r#"{{"kind": "http", "method": "{m}", "path": "{p}"}}"#);
    let all: Vec<String> =
        routes.iter().enumerate().map(|(i, (m, p))| op(&format!("op{i}"), &http(m, p), "")).collect();
    let (code, out) = check(&toml, &format!("[{}]", all.join(",")));
    assert_eq!((code, out.as_str()), (0, "ok: t (3 entities, 20 fields, 9 operations)\n"));

    // A declared route the backend does not serve, and a served one no operation declares.
    let mut some = all[..5].to_vec();
    some.push(op("nope", &http("POST", "/nope"), ""));
    some.extend_from_slice(&all[6..]);
    let (code, out) = check(&toml, &format!("[{}]", some.join(",")));
    assert_eq!(code, 1, "{out}");
    let want = [
        format!("operations.json: $[5].executor.path: the backend at {} does not serve POST /nope", backend.1),
        format!("operations.json: $: the backend at {} serves GET /big, but no operation declares it", backend.1),
    ];
    assert_eq!(out.lines().collect::<Vec<_>>(), want, "{out}");

    // Reported together with the problems of other files.
    let broken = tempfile::tempdir().unwrap();
    std::fs::write(broken.path().join("schema.json"), r#"{"entities": {"a": {"fields": {"x": {"type": "nope"}}}}}"#)
        .unwrap();
    std::fs::write(broken.path().join("app.toml"), &toml).unwrap();
    std::fs::write(broken.path().join("operations.json"), format!("[{}]", some.join(","))).unwrap();
    let out = run(&["check", broken.path().to_str().unwrap()]);
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.starts_with("schema.json: $.entities.a.fields.x.type"), "{out}");
    assert!(out.contains("$[5].executor.path") && out.contains("serves GET /big"), "{out}");

    // A backend that is not running is noted, not a failure.
    drop(backend);
    let (code, _) = check(&toml, &format!("[{}]", all.join(",")));
    assert_eq!(code, 0);
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    http.get(url).send().await.unwrap().json().await.unwrap()
}

#[tokio::test]
async fn a_job_running_when_the_server_is_killed_is_interrupted_with_its_last_progress() {
    let dir = copy_app(&example("kanban"));
    let slow = json!([{"name": "slow_export", "description": "An export with a pause after each entity.",
        "params": {}, "executor": {"kind": "job", "run": "export", "pace": "10s"}}]);
    std::fs::write(dir.path().join("operations.json"), slow.to_string()).unwrap();
    let port = free_port();
    let mut server = Server::start(dir.path(), port, &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    let http = crate::http().timeout(Duration::from_secs(5)).build().unwrap();
    let resp = http
        .post(format!("{}/api/ops/slow_export", server.url))
        .header("X-LUI-Token", &token)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    let started: Value = resp.json().await.unwrap();
    let status_url = format!("{}{}", server.url, started["status"].as_str().unwrap());

    // Wait for the first step to be reported, then kill the server mid-job.
    let deadline = Instant::now() + Duration::from_secs(10);
    let before = loop {
        let job = get(&http, &status_url).await;
        if job["state"] == "running" && job["progress"]["done"] == 1 {
            break job;
        }
        assert!(Instant::now() < deadline, "the job never reported progress: {job}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    server.child.kill().unwrap(); // SIGKILL: no shutdown code runs
    server.child.wait().unwrap();
    drop(server);

    let _server = Server::start(dir.path(), port, &[]);
    // A fresh client: the old one's pooled connection died with the server.
    let http = crate::http().timeout(Duration::from_secs(5)).build().unwrap();
    let after = get(&http, &status_url).await;
    assert_eq!(after["state"], "interrupted", "{after}");
    assert_eq!(after["progress"], before["progress"]);
    assert_eq!(after["progress"], json!({"done": 1, "total": 3, "message": "exported lists"}));
    assert_eq!((&after["result"], &after["error"]), (&Value::Null, &Value::Null));
    // Never re-run: it stays interrupted and no export file appears.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(get(&http, &status_url).await["state"], "interrupted");
    let exports = dir.path().join("data/exports");
    assert!(!exports.exists() || std::fs::read_dir(exports).unwrap().next().is_none());
}

/// The `a2app` client against the real server: the wire contract both sides were built to.
#[test]
fn the_a2app_client_runs_the_kanban_operations() {
    let home = tempfile::tempdir().unwrap();
    let env = |cmd: &mut std::process::Command| {
        cmd.env_remove("A2APP_CONFIG_DIR")
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path().join("config"))
            .env("A2APP_POLL_MS", "20");
    };
    let dir = copy_app(&example("kanban"));
    let mut serve = crate::bin();
    env(&mut serve);
    let server = Server::start_with(serve, dir.path(), free_port(), &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    let a2app = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_a2app"));
        env(&mut cmd);
        let out = cmd.env("A2APP_TOKEN", &token).arg(&server.url).args(args).output().unwrap();
        (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let http = crate::http().build().unwrap();
    let create = |entity: &str, body: Value| {
        let req = http
            .post(format!("{}/api/collections/{entity}/records", server.url))
            .header("X-LUI-Token", &token)
            .header("content-type", "application/json")
            .body(body.to_string());
        let record: Value = runtime.block_on(async { req.send().await.unwrap().json().await.unwrap() });
        record["id"].as_str().unwrap().to_owned()
    };
    let (todo, done) = (create("lists", json!({"name": "To Do"})), create("lists", json!({"name": "Done"})));
    let card = create("cards", json!({"title": "Ship it", "list": todo, "done": true}));

    let (code, out) = a2app(&["--json", "ops"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("move_card") && out.contains("export_board"), "{out}");

    let (code, out) = a2app(&["--json", "run", "move_card", &format!("card={card}"), &format!("list={done}")]);
    assert_eq!(code, 0, "{out}");
    let moved: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(moved["result"]["list"], done, "{out}");

    // Destructive: refused without --yes (nothing deleted), run once with it.
    let (code, _) = a2app(&["run", "clear_done"]);
    assert_eq!(code, 2);
    let (code, out) = a2app(&["--json", "run", "clear_done", "--yes"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["result"], json!({"deleted": 1}), "{out}");

    let (code, out) = a2app(&["--json", "run", "export_board"]);
    assert_eq!(code, 0, "{out}");
    let job: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(job["job"]["state"], "succeeded", "{out}");
    assert_eq!(job["job"]["result"]["records"], json!({"lists": 2, "members": 0, "cards": 0}), "{out}");
}
