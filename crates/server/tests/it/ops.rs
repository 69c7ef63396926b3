//! Operations and jobs over real HTTP: each executor kind, approvals, params,
//! attribution and rate limits; the scheduler with a clock the test advances.

use crate::{NOW, TestApp, violations};
use a2app_core::operations::{Outcome, Registry};
use serde_json::{Value, json};
use std::time::Duration;

/// Operations used besides the kanban example's own.
const OPS: &str = r#"[
  {"name": "delete_card", "description": "Delete one card.", "destructive": true,
   "params": {"card": {"type": "string", "required": true}},
   "executor": {"kind": "crud", "entity": "cards", "action": "delete", "id": "{:card}"}},
  {"name": "clear_done", "description": "Delete done cards.", "destructive": true, "params": {},
   "executor": {"kind": "crud", "entity": "cards", "action": "delete", "filter": "done = true"}},
  {"name": "add_list", "description": "Add a list.",
   "params": {"name": {"type": "string", "required": true}, "color": {"type": "string", "enum": ["gray", "red"], "default": "red"}},
   "executor": {"kind": "crud", "entity": "lists", "action": "create"}},
  {"name": "titled", "description": "Cards with a title.",
   "params": {"title": {"type": "string", "required": true}},
   "executor": {"kind": "crud", "entity": "cards", "action": "list", "filter": "title = {:title}"}},
  {"name": "echo", "description": "Echo.", "params": {"text": {"type": "string"}, "n": {"type": "number"}},
   "executor": {"kind": "http", "method": "POST", "path": "/echo"}},
  {"name": "search", "description": "Search.", "params": {"q": {"type": "string"}, "n": {"type": "number"}},
   "executor": {"kind": "http", "method": "GET", "path": "/search"}},
  {"name": "refuse", "description": "Refused.", "params": {}, "executor": {"kind": "http", "method": "POST", "path": "/refuse"}},
  {"name": "fail", "description": "Fails.", "params": {}, "executor": {"kind": "http", "method": "POST", "path": "/fail"}},
  {"name": "slow", "description": "Slow.", "params": {},
   "executor": {"kind": "http", "method": "GET", "path": "/slow", "timeout": "500ms"}},
  {"name": "big", "description": "Big.", "params": {}, "executor": {"kind": "http", "method": "GET", "path": "/big"}},
  {"name": "moved", "description": "Moved.", "params": {}, "executor": {"kind": "http", "method": "GET", "path": "/moved"}},
  {"name": "cut", "description": "Cut.", "params": {}, "executor": {"kind": "http", "method": "GET", "path": "/cut"}},
  {"name": "drop", "description": "Dropped.", "params": {}, "executor": {"kind": "http", "method": "GET", "path": "/drop"}},
  {"name": "greet", "description": "Native.", "params": {"who": {"type": "string", "default": "world"}},
   "executor": {"kind": "native"}},
  {"name": "count", "description": "Native job.", "params": {"to": {"type": "number", "default": 3}},
   "executor": {"kind": "job", "run": "native"}},
  {"name": "export_board", "description": "Export.", "params": {}, "executor": {"kind": "job", "run": "export"}},
  {"name": "boom", "description": "Panics.", "params": {}, "executor": {"kind": "native"}},
  {"name": "boom_job", "description": "Panics later.", "params": {}, "executor": {"kind": "job", "run": "native"}}
]"#;

/// The test backend (`tests/backend/backend.py`), a real process on loopback.
struct Backend {
    child: std::process::Child,
    url: String,
}

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
        Backend { child, url: format!("http://127.0.0.1:{}", line.trim()) }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn registry() -> Registry {
    Registry::new()
        .handler("greet", |ctx| async move {
            let who = ctx.params["who"].as_str().unwrap_or_default().to_owned();
            Ok(Outcome::from(json!({ "hello": who, "agent": ctx.caller.agent })))
        })
        .job("count", |ctx, progress| async move {
            let to = ctx.params["to"].as_u64().unwrap_or(0);
            for i in 1..=to {
                progress.report(i, to, format!("counted {i}")).await?;
            }
            Ok(json!({ "counted": to }))
        })
        .handler("boom", |_| async { panic!("a handler bug") })
        .job("boom_job", |_, _| async { panic!("a job bug") })
}

async fn app_with(backend: Option<&str>) -> TestApp {
    let section = backend.map(|url| format!("\n[backend]\nurl = \"{url}\"\n")).unwrap_or_default();
    TestApp::build(move |toml| format!("{toml}{section}"), Some(OPS), registry()).await
}

impl TestApp {
    async fn op(&self, name: &str, params: Value) -> (u16, Value) {
        self.call("POST", &format!("/api/ops/{name}"), Some(params)).await
    }

    async fn op_approved(&self, name: &str, params: Value, key: &str) -> (u16, Value) {
        let req = self
            .http
            .post(format!("{}/api/ops/{name}", self.url))
            .header("X-LUI-Token", &self.token)
            .header("X-LUI-Agent", "tests")
            .header("X-A2App-Approval", key);
        self.send(req, Some(params)).await
    }

    async fn card(&self, list: &str, title: &str, done: bool) -> String {
        let card = self.create("cards", json!({"title": title, "list": list, "done": done})).await;
        card["id"].as_str().unwrap().to_owned()
    }

    async fn exists(&self, entity: &str, id: &str) -> bool {
        self.call("GET", &format!("/api/collections/{entity}/records/{id}"), None).await.0 == 200
    }

    async fn wait_job(&self, id: &str) -> Value {
        for _ in 0..200 {
            let (status, job) = self.call("GET", &format!("/api/_jobs/{id}"), None).await;
            assert_eq!(status, 200, "{job}");
            if !["queued", "running"].contains(&job["state"].as_str().unwrap()) {
                return job;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("job {id} did not finish");
    }
}

#[tokio::test]
async fn ops_are_listed_like_describe_lists_them() {
    let t = TestApp::kanban().await;
    let (status, ops) = t.call("GET", "/api/_ops", None).await;
    assert_eq!(status, 200);
    let (_, describe) = t.call("GET", "/api/_a2app/describe", None).await;
    assert_eq!(ops, describe["operations"]);
    let move_card = ops.as_array().unwrap().iter().find(|o| o["name"] == "move_card").unwrap();
    assert_eq!(move_card["executor"], "crud");
    assert_eq!(move_card["url"], "/api/ops/move_card");
    assert_eq!(move_card["params"]["card"]["type"], "string");
    assert_eq!(move_card["params"]["card"]["required"], true);
    let clear = ops.as_array().unwrap().iter().find(|o| o["name"] == "clear_done").unwrap();
    assert_eq!(clear["destructive"], true);
    let export = ops.as_array().unwrap().iter().find(|o| o["name"] == "export_board").unwrap();
    assert_eq!((export["executor"].as_str(), export["schedule"].as_str()), (Some("job"), Some("daily 03:00")));
}

#[tokio::test]
async fn crud_update_moves_a_card_through_the_write_path() {
    let t = TestApp::kanban().await;
    let todo = t.create("lists", json!({"name": "To Do"})).await["id"].as_str().unwrap().to_owned();
    let done = t.create("lists", json!({"name": "Done"})).await["id"].as_str().unwrap().to_owned();
    let card = t.card(&todo, "Eat chicken", false).await;

    let (status, body) = t.op("move_card", json!({"card": card, "list": done, "position": 2})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["ok"].as_bool(), body["operation"].as_str()), (Some(true), Some("move_card")));
    assert_eq!((body["result"]["list"].as_str(), body["result"]["position"].as_f64()), (Some(&*done), Some(2.0)));
    assert!(body["result"].get("_receipt").is_none());
    let receipts = body["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1);
    assert_eq!((receipts[0]["action"].as_str(), receipts[0]["agent"].as_str()), (Some("update"), Some("tests")));
    // The stored record, and the audit: the write's receipt, then the run.
    let (_, stored) = t.call("GET", &format!("/api/collections/cards/records/{card}"), None).await;
    assert_eq!(stored["list"], done);
    let (_, audit) = t.call("GET", "/api/_a2app/receipts", None).await;
    let last = audit["items"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["action"].as_str(), last["id"].as_str()), (Some("operation"), Some("move_card")));
    assert_eq!(last["agent"], "tests");

    // The guard applies: a ref to a list that does not exist is refused, nothing changes.
    let (status, body) = t.op("move_card", json!({"card": card, "list": "nosuchlist00000"})).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_ref")), "{body}");
    let (status, body) = t.op("move_card", json!({"card": "nosuchcard00000", "list": todo})).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")), "{body}");
}

#[tokio::test]
async fn crud_create_and_list_bind_params_as_values() {
    let t = app_with(None).await;
    let (status, body) = t.op("add_list", json!({"name": "Backlog"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!((body["result"]["name"].as_str(), body["result"]["color"].as_str()), (Some("Backlog"), Some("red")));
    let list = body["result"]["id"].as_str().unwrap().to_owned();
    t.card(&list, "a \" quote", false).await;
    t.card(&list, "plain", false).await;

    let (status, page) = t.op("titled", json!({"title": "a \" quote"})).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["result"]["totalItems"], 1);
    assert_eq!(page["result"]["items"][0]["title"], "a \" quote");
    // A param is a value, never filter text: this matches no title.
    let (_, page) = t.op("titled", json!({"title": "x\" || title != \""})).await;
    assert_eq!(page["result"]["totalItems"], 0);

    // The kanban example's own list op, with a boolean param.
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "L"})).await["id"].as_str().unwrap().to_owned();
    t.card(&list, "open", false).await;
    t.card(&list, "closed", true).await;
    let (_, page) = t.op("cards_in_list", json!({"list": list})).await;
    assert_eq!(page["result"]["totalItems"], 1, "{page}");
    let (_, page) = t.op("cards_in_list", json!({"list": list, "include_done": true})).await;
    assert_eq!(page["result"]["totalItems"], 2, "{page}");
}

#[tokio::test]
async fn a_crud_list_counts_every_match_beyond_its_page() {
    let t = app_with(None).await;
    let list = t.create("lists", json!({"name": "L"})).await["id"].as_str().unwrap().to_owned();
    let mut writes = tokio::task::JoinSet::new();
    for _ in 0..1001 {
        let (app, list) = (t.app.clone(), list.clone());
        writes.spawn(async move {
            let caller = a2app_core::caller::Caller::agent(None);
            let body = json!({"title": "many", "list": list});
            a2app_core::records::create(&app, &caller, "cards", &body, &Default::default()).await.map(|_| ())
        });
    }
    while let Some(done) = writes.join_next().await {
        done.unwrap().unwrap();
    }
    t.card(&list, "other", false).await;
    let (status, page) = t.op("titled", json!({"title": "many"})).await;
    assert_eq!(status, 200, "{page}");
    let items = page["result"]["items"].as_array().unwrap();
    assert_eq!((items.len(), page["result"]["perPage"].as_u64()), (1000, Some(1000)));
    assert!(items.iter().all(|c| c["title"] == "many"));
    assert_eq!((page["result"]["totalItems"].as_u64(), page["result"]["totalPages"].as_u64()), (Some(1001), Some(2)));
}

#[tokio::test]
async fn bad_params_are_all_reported_and_unknown_ops_are_404() {
    let t = TestApp::kanban().await;
    // null is no value: neither the default nor "leave the field as it is".
    let (status, body) =
        t.op("move_card", json!({"card": "nosuchcard00000", "list": "nosuchlist00000", "position": null})).await;
    assert_eq!((status, body["code"].as_str(), body["field"].as_str()), (400, Some("invalid_param"), Some("position")));
    let (status, body) = t.op("cards_in_list", json!({"list": "x", "include_done": null})).await;
    assert_eq!((status, body["field"].as_str()), (400, Some("include_done")), "{body}");
    // An approval key for an operation that takes none approves nothing: refused.
    let (status, body) = t.op_approved("cards_in_list", json!({"list": "x"}), "apv_whatever").await;
    assert_eq!((status, body["field"].as_str()), (400, Some("approvalKey")), "{body}");
    let (status, body) = t.op("move_card", json!({"card": 7, "position": "top", "bogus": 1})).await;
    assert_eq!(status, 400, "{body}");
    let mut got = violations(&body);
    got.sort();
    assert_eq!(
        got,
        [
            ("invalid_number".into(), "position".into()),
            ("invalid_param".into(), "bogus".into()),
            ("invalid_param".into(), "list".into()),
            ("invalid_string".into(), "card".into()),
        ]
    );
    let t2 = app_with(None).await;
    let (status, body) = t2.op("add_list", json!({"name": "x", "color": "blue"})).await;
    assert_eq!((status, body["code"].as_str(), body["field"].as_str()), (400, Some("invalid_enum"), Some("color")));
    let (status, body) = t.op("add_list", json!([1])).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("unknown_operation")));
    let (status, body) = t.op("move_card", json!([1])).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_json")));
    // Running needs the write credential, as writes do.
    let (status, body) = t.send(t.http.post(format!("{}/api/ops/export_board", t.url)), Some(json!({}))).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")));
}

#[tokio::test]
async fn approval_keys_missing_wrong_replayed_expired_and_correct() {
    let t = app_with(None).await;
    let list = t.create("lists", json!({"name": "L"})).await["id"].as_str().unwrap().to_owned();
    let (a, b) = (t.card(&list, "a", false).await, t.card(&list, "b", false).await);

    // Missing: 428 with a key bound to the normalized params; nothing deleted.
    let (status, body) = t.op("delete_card", json!({"card": a})).await;
    assert_eq!((status, body["code"].as_str()), (428, Some("approval_required")), "{body}");
    assert_eq!((body["operation"].as_str(), &body["params"]), (Some("delete_card"), &json!({"card": a})));
    assert!(body["message"].as_str().unwrap().contains("X-A2App-Approval"));
    let key = body["approvalKey"].as_str().unwrap().to_owned();
    assert!(t.exists("cards", &a).await);

    // Wrong params, or another operation: refused, and the key stays good for its own call.
    let (status, body) = t.op_approved("delete_card", json!({"card": b}), &key).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("approval_invalid")), "{body}");
    let (status, body) = t.op_approved("clear_done", json!({}), &key).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("approval_invalid")));
    let (status, body) = t.op_approved("delete_card", json!({"card": a}), "apv_made_up").await;
    assert_eq!((status, body["code"].as_str()), (403, Some("approval_invalid")));
    assert!(t.exists("cards", &a).await && t.exists("cards", &b).await);

    // Correct: runs once.
    let (status, body) = t.op_approved("delete_card", json!({"card": a}), &key).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"], json!({"deleted": 1}));
    assert_eq!(body["receipts"][0]["action"], "delete");
    assert!(!t.exists("cards", &a).await);

    // Replayed: refused.
    let (status, body) = t.op_approved("delete_card", json!({"card": a}), &key).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("approval_invalid")));
    assert!(body["message"].as_str().unwrap().contains("already used"), "{body}");

    // Expired: keys live 15 minutes on the app's clock.
    let (_, body) = t.op("delete_card", json!({"card": b})).await;
    let key = body["approvalKey"].as_str().unwrap().to_owned();
    t.clock.set(NOW.parse::<jiff::Timestamp>().unwrap() + jiff::SignedDuration::from_mins(16));
    let (status, body) = t.op_approved("delete_card", json!({"card": b}), &key).await;
    assert_eq!((status, body["code"].as_str()), (403, Some("approval_invalid")));
    assert!(t.exists("cards", &b).await);
}

#[tokio::test]
async fn clear_done_deletes_every_done_card_once_approved() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "L"})).await["id"].as_str().unwrap().to_owned();
    let open = t.card(&list, "open", false).await;
    let (d1, d2) = (t.card(&list, "d1", true).await, t.card(&list, "d2", true).await);
    let (status, body) = t.op("clear_done", json!({})).await;
    assert_eq!(status, 428);
    let key = body["approvalKey"].as_str().unwrap().to_owned();
    let (status, body) = t.op_approved("clear_done", json!({}), &key).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"], json!({"deleted": 2}));
    assert_eq!(body["receipts"].as_array().unwrap().len(), 2);
    assert!(t.exists("cards", &open).await);
    assert!(!t.exists("cards", &d1).await && !t.exists("cards", &d2).await);
}

#[tokio::test]
async fn http_executor_calls_the_real_backend() {
    let backend = Backend::start();
    let t = app_with(Some(&backend.url)).await;

    let (status, body) = t.op("echo", json!({"text": "hi", "n": 2})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["body"], json!({"text": "hi", "n": 2}));
    let headers = &body["result"]["headers"];
    assert_eq!(headers["x-a2app-agent"], "tests");
    assert_eq!(headers["x-a2app-caller"], "agent");
    assert_eq!(headers["x-a2app-operation"], "echo");
    assert!(headers.get("x-lui-token").is_none(), "the token must not reach the backend: {headers}");
    assert!(headers.get("idempotency-key").is_none());
    assert_eq!(body["receipts"], json!([]));
    // An Idempotency-Key is the backend's to honour: it is passed on.
    let req =
        t.http.post(format!("{}/api/ops/echo", t.url)).header("X-LUI-Token", &t.token).header("Idempotency-Key", "k1");
    let (status, body) = t.send(req, Some(json!({}))).await;
    assert_eq!((status, body["result"]["headers"]["idempotency-key"].as_str()), (200, Some("k1")), "{body}");
    // A key or an approval that is not printable ASCII is refused, not read as absent.
    for name in ["Idempotency-Key", "X-A2App-Approval"] {
        let bytes = reqwest::header::HeaderValue::from_bytes(b"cl\xe9").unwrap();
        let req = t.http.post(format!("{}/api/ops/echo", t.url)).header("X-LUI-Token", &t.token).header(name, bytes);
        let (status, body) = t.send(req, Some(json!({}))).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_query")), "{name}: {body}");
        assert_eq!(body["message"], format!("the {name} header must be printable ASCII"));
    }

    let (status, body) = t.op("search", json!({"q": "milk & eggs", "n": 3})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["query"], json!({"q": "milk & eggs", "n": "3"}));

    // Failures are codes, never a 200; a 4xx answer is passed on, a 5xx one is not.
    let (status, body) = t.op("refuse", json!({})).await;
    assert_eq!(
        (status, body["code"].as_str(), body["backendStatus"].as_u64()),
        (502, Some("backend_error"), Some(422))
    );
    assert_eq!(body["backend"]["code"], "no_room");
    let (status, body) = t.op("fail", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (502, Some("backend_error")));
    assert!(!body.to_string().contains("Traceback"), "{body}");
    // Once the call was sent, no failure claims that nothing ran.
    let (status, body) = t.op("slow", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (504, Some("backend_timeout")));
    assert!(body["message"].as_str().unwrap().contains("it may have run"), "{body}");
    let (status, body) = t.op("drop", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (504, Some("backend_timeout")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("it may have run"), "{body}");
    for (op, why) in [("big", "more than 1048576 bytes"), ("cut", "")] {
        let (status, body) = t.op(op, json!({})).await;
        assert_eq!(
            (status, body["code"].as_str(), body["backendStatus"].as_u64()),
            (502, Some("backend_error"), Some(200))
        );
        let message = body["message"].as_str().unwrap();
        assert!(message.contains("answered 200, so the operation ran") && message.contains(why), "{op}: {message}");
    }
    let (status, body) = t.op("moved", json!({})).await;
    assert_eq!((status, body["backendStatus"].as_u64()), (502, Some(303)));
    assert!(body["message"].as_str().unwrap().contains("redirect (303), which is not followed"), "{body}");

    drop(backend);
    let (status, body) = t.op("echo", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (503, Some("backend_unavailable")));
    // An app without a backend says so.
    let t = app_with(None).await;
    let (status, body) = t.op("echo", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (503, Some("backend_unavailable")));
    assert!(body["message"].as_str().unwrap().contains("[backend]"));
}

#[tokio::test]
async fn export_job_answers_at_once_and_reports_progress_and_result() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "L"})).await["id"].as_str().unwrap().to_owned();
    t.card(&list, "c", false).await;
    let (status, body) = t.op("export_board", json!({})).await;
    assert_eq!(status, 202, "{body}");
    let id = body["jobId"].as_str().unwrap().to_owned();
    assert_eq!(body["status"], format!("/api/_jobs/{id}"));
    let job = t.wait_job(&id).await;
    assert_eq!(job["state"], "succeeded", "{job}");
    assert_eq!(job["operation"], "export_board");
    assert_eq!(job["progress"], json!({"done": 3, "total": 3, "message": "exported cards"}));
    assert_eq!(job["result"]["records"], json!({"lists": 1, "members": 0, "cards": 1}));
    assert_eq!(job["error"], Value::Null);
    let file = t.dir.path().join(job["result"]["file"].as_str().unwrap());
    let export: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    assert_eq!(export["entities"]["cards"][0]["title"], "c");
    assert_eq!(
        (job["createdAt"].as_str(), job["updatedAt"].as_str()),
        (Some("2026-07-30 09:15:00.000Z"), Some("2026-07-30 09:15:00.000Z"))
    );

    let (status, body) = t.call("GET", "/api/_jobs/nosuchjob000000", None).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));

    // A retried start with the same Idempotency-Key starts nothing and names the first job.
    let start = || {
        t.http
            .post(format!("{}/api/ops/export_board", t.url))
            .header("X-LUI-Token", &t.token)
            .header("Idempotency-Key", "export-1")
    };
    let (status, first) = t.send(start(), Some(json!({}))).await;
    assert_eq!(status, 202, "{first}");
    let (status, again) = t.send(start(), Some(json!({}))).await;
    assert_eq!((status, again["code"].as_str()), (409, Some("duplicate_request")), "{again}");
    assert_eq!(again["id"], first["jobId"]);
    t.wait_job(first["jobId"].as_str().unwrap()).await;
}

#[tokio::test]
async fn native_handlers_and_native_jobs_run_by_name() {
    let t = app_with(None).await;
    let (status, body) = t.op("greet", json!({"who": "Ada"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"], json!({"hello": "Ada", "agent": "tests"}));
    let (status, body) = t.op("count", json!({"to": 4})).await;
    assert_eq!(status, 202, "{body}");
    let job = t.wait_job(body["jobId"].as_str().unwrap()).await;
    assert_eq!(job["state"], "succeeded");
    assert_eq!(job["progress"], json!({"done": 4, "total": 4, "message": "counted 4"}));
    assert_eq!(job["result"], json!({"counted": 4}));

    // A panicking handler is an internal error without detail; a panicking job fails.
    let (status, body) = t.op("boom", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (500, Some("internal")));
    assert!(!body.to_string().contains("bug"), "{body}");
    let (_, body) = t.op("boom_job", json!({})).await;
    let job = t.wait_job(body["jobId"].as_str().unwrap()).await;
    assert_eq!((job["state"].as_str(), job["error"]["code"].as_str()), (Some("failed"), Some("internal")));
    assert!(!job.to_string().contains("bug"), "{job}");
}

#[tokio::test]
async fn a_native_operation_without_a_handler_refuses_to_open() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kanban");
    for f in ["app.toml", "schema.json"] {
        std::fs::copy(root.join(f), dir.path().join(f)).unwrap();
    }
    std::fs::write(dir.path().join("operations.json"), OPS).unwrap();
    let def = a2app_core::app::load(dir.path()).unwrap();
    let err = a2app_core::App::open(def, Default::default()).err().unwrap();
    assert_eq!(
        err.to_string(),
        "operations.json declares native operations with no registered handler: greet, count, boom, boom_job"
    );
}

#[tokio::test]
async fn operations_count_against_the_write_rate_limit() {
    let t = TestApp::with_config(|toml| toml.replace("writes_per_minute = 3000", "writes_per_minute = 2")).await;
    let list = t.create("lists", json!({"name": "L"})).await["id"].as_str().unwrap().to_owned();
    let (status, _) = t.op("cards_in_list", json!({"list": list})).await;
    assert_eq!(status, 200);
    let (status, body) = t.op("cards_in_list", json!({"list": list})).await;
    assert_eq!((status, body["code"].as_str()), (429, Some("rate_limited")));
}

mod schedule {
    use a2app_core::clock::FixedClock;
    use a2app_core::{App, OpenOptions};
    use jiff::{SignedDuration, Timestamp};
    use std::sync::Arc;

    const OPS: &str = r#"[
      {"name": "heartbeat", "description": "Adds a list.", "schedule": "every 15m",
       "params": {"name": {"type": "string", "default": "beat"}},
       "executor": {"kind": "crud", "entity": "lists", "action": "create"}},
      {"name": "morning", "description": "Adds a list at 09:00 in Berlin.", "schedule": "daily 09:00",
       "params": {"name": {"type": "string", "default": "morning"}},
       "executor": {"kind": "crud", "entity": "lists", "action": "create"}}
    ]"#;

    fn open(dir: &std::path::Path, clock: &Arc<FixedClock>) -> Arc<App> {
        let def = a2app_core::app::load(dir).unwrap();
        let options = OpenOptions { clock: clock.clone(), ..OpenOptions::default() };
        Arc::new(App::open(def, options).unwrap().0)
    }

    async fn lists(app: &Arc<App>) -> Vec<String> {
        let caller = a2app_core::caller::Caller::anonymous();
        let page =
            a2app_core::records::list(app, &caller, "lists", &Default::default(), Default::default()).await.unwrap();
        page.items.iter().map(|r| r["name"].as_str().unwrap().to_owned()).collect()
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[tokio::test]
    async fn a_failed_scheduled_run_is_in_the_audit_log() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kanban");
        for f in ["app.toml", "schema.json"] {
            std::fs::copy(root.join(f), dir.path().join(f)).unwrap();
        }
        // A card without its required title and list: the guard refuses it every time.
        let ops = r#"[{"name": "broken", "description": "", "schedule": "hourly", "params": {},
                       "executor": {"kind": "crud", "entity": "cards", "action": "create"}}]"#;
        std::fs::write(dir.path().join("operations.json"), ops).unwrap();
        let clock = Arc::new(FixedClock::new(at("2026-07-30T06:30:00Z")));
        let app = open(dir.path(), &clock);
        assert!(a2app_core::schedule::tick(&app).await.is_empty());
        clock.set(at("2026-07-30T07:00:00Z"));
        assert_eq!(a2app_core::schedule::tick(&app).await, ["broken"]);
        let audit = a2app_core::records::receipts(&app, None, 100).await.unwrap();
        assert_eq!(audit.len(), 1);
        assert_eq!(audit[0].text, "Ran scheduled operation broken: failed with required_field");
    }

    #[tokio::test]
    async fn scheduled_runs_follow_the_clock_and_a_missed_slot_runs_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kanban");
        std::fs::copy(root.join("schema.json"), dir.path().join("schema.json")).unwrap();
        let toml = std::fs::read_to_string(root.join("app.toml")).unwrap();
        std::fs::write(dir.path().join("app.toml"), toml.replace("timezone = \"UTC\"", "timezone = \"Europe/Berlin\""))
            .unwrap();
        std::fs::write(dir.path().join("operations.json"), OPS).unwrap();
        let clock = Arc::new(FixedClock::new(at("2026-07-30T06:00:00Z")));

        let app = open(dir.path(), &clock);
        // First start: a baseline, no run.
        assert!(a2app_core::schedule::tick(&app).await.is_empty());
        clock.set(at("2026-07-30T06:10:00Z"));
        assert!(a2app_core::schedule::tick(&app).await.is_empty());
        clock.set(at("2026-07-30T06:15:00Z"));
        assert_eq!(a2app_core::schedule::tick(&app).await, ["heartbeat"]);
        assert!(a2app_core::schedule::tick(&app).await.is_empty(), "one run per slot");
        // 09:00 in Berlin is 07:00 UTC in summer.
        clock.set(at("2026-07-30T06:59:00Z"));
        assert_eq!(a2app_core::schedule::tick(&app).await, ["heartbeat"]);
        clock.set(at("2026-07-30T07:00:00Z"));
        assert_eq!(a2app_core::schedule::tick(&app).await, ["morning"]);
        assert_eq!(lists(&app).await, ["beat", "beat", "morning"]);
        drop(app);

        // Down for three days: dozens of heartbeat slots and three mornings missed;
        // the next start runs each once.
        clock.set(at("2026-08-02T12:00:00Z"));
        let app = open(dir.path(), &clock);
        let mut ran = a2app_core::schedule::tick(&app).await;
        ran.sort();
        assert_eq!(ran, ["heartbeat", "morning"]);
        assert!(a2app_core::schedule::tick(&app).await.is_empty());
        clock.set(at("2026-08-02T12:00:00Z") + SignedDuration::from_mins(15));
        assert_eq!(a2app_core::schedule::tick(&app).await, ["heartbeat"]);
        assert_eq!(lists(&app).await.len(), 6);

        // Each run is in the audit log, attributed to the scheduler.
        let audit = a2app_core::records::receipts(&app, None, 100).await.unwrap();
        let runs: Vec<_> = audit.iter().filter(|r| r.action == "operation").collect();
        assert_eq!(runs.len(), 6);
        assert!(runs.iter().all(|r| r.agent.as_deref() == Some(a2app_core::schedule::AGENT)));
        assert!(runs[0].text.starts_with("Ran scheduled operation heartbeat"), "{}", runs[0].text);
    }
}

mod multi_user {
    use crate::{TestApp, as_user};
    use serde_json::{Value, json};

    const OPS: &str = r#"[
      {"name": "notes", "description": "Notes I may see.", "params": {},
       "executor": {"kind": "crud", "entity": "notes", "action": "list", "sort": "title"}},
      {"name": "clear_private", "description": "Delete private notes.", "params": {},
       "executor": {"kind": "crud", "entity": "notes", "action": "delete", "filter": "public = false"}},
      {"name": "rename", "description": "Rename a note.",
       "params": {"note": {"type": "string", "required": true}, "title": {"type": "string", "required": true}},
       "executor": {"kind": "crud", "entity": "notes", "action": "update", "id": "{:note}", "set": {"title": "{:title}"}}}
    ]"#;

    async fn note(t: &TestApp, token: &str, owner: &str, title: &str, public: bool) -> String {
        let body = json!({"title": title, "owner": owner, "public": public});
        let (status, n) = as_user(t, Some(token), "POST", "/api/collections/notes/records", Some(body)).await;
        assert_eq!(status, 200, "{n}");
        n["id"].as_str().unwrap().to_owned()
    }

    fn titles(body: &Value) -> Vec<&str> {
        body["result"]["items"].as_array().unwrap().iter().map(|n| n["title"].as_str().unwrap()).collect()
    }

    #[tokio::test]
    async fn operations_run_as_the_calling_user_under_their_rules() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/notes");
        let t = TestApp::serve(&root, |t| t.to_owned(), Some(OPS), Default::default()).await;
        let (ann, ann_token) = t.user("ann@example.com", "pass words").await;
        let (bob, bob_token) = t.user("bob@example.com", "pass words").await;
        let a = note(&t, &ann_token, &ann, "a: ann's", false).await;
        let b = note(&t, &bob_token, &bob, "b: bob's", false).await;
        note(&t, &bob_token, &bob, "c: bob's public", true).await;

        let (status, body) = as_user(&t, Some(&ann_token), "POST", "/api/ops/notes", Some(json!({}))).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(titles(&body), ["a: ann's", "c: bob's public"]);

        // A filter-wide delete reaches only what ann may see: her own private note.
        let (status, body) = as_user(&t, Some(&ann_token), "POST", "/api/ops/clear_private", Some(json!({}))).await;
        assert_eq!((status, &body["result"]), (200, &json!({"deleted": 1})), "{body}");
        assert_eq!(body["receipts"][0]["id"], a);
        assert_eq!(body["receipts"][0]["caller"], "user");

        // Bob's note is not ann's to rename: to her it is not there, as over
        // the records API (a record a rule hides is not found, not forbidden).
        let params = json!({"note": b, "title": "mine now"});
        let (status, body) = as_user(&t, Some(&ann_token), "POST", "/api/ops/rename", Some(params)).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("not_found")), "{body}");
        let (_, body) = as_user(&t, Some(&bob_token), "POST", "/api/ops/notes", Some(json!({}))).await;
        assert_eq!(titles(&body), ["b: bob's", "c: bob's public"]);
    }
}
