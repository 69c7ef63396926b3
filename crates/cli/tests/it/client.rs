//! `a2app`, the real binary: against a real `agent-app serve` started here, and
//! against small fake servers for what a real app never answers (each gate
//! failure, operations and jobs, a lost answer to a write).
//!
//! Every command runs with `HOME` and `XDG_CONFIG_HOME` in a temp dir, so the
//! config directory is found the way a user's is, and the real one is untouched.

use crate::{Server, copy_app, example, free_port};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One user's home: the config directory lives under it.
pub(crate) struct Home(tempfile::TempDir);

impl Home {
    pub(crate) fn new() -> Home {
        Home(tempfile::tempdir().unwrap())
    }

    pub(crate) fn config_dir(&self) -> PathBuf {
        self.0.path().join("config").join("a2app")
    }

    pub(crate) fn env(&self, cmd: &mut Command) {
        cmd.env_remove("A2APP_CONFIG_DIR")
            .env_remove("A2APP_TOKEN")
            .env("HOME", self.0.path())
            .env("XDG_CONFIG_HOME", self.0.path().join("config"))
            .env("A2APP_POLL_MS", "20");
    }

    /// `agent-app serve` for this home, waiting until it registered.
    pub(crate) fn serve(&self, dir: &Path, port: u16) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-app"));
        self.env(&mut cmd);
        let server = Server::start_with(cmd, dir, port, &[]);
        // This app's own entry with this URL: another app may have registered
        // the same port before (a port reused), so the URL alone proves nothing.
        let manifest: toml::Table = std::fs::read_to_string(dir.join("app.toml")).unwrap().parse().unwrap();
        let id = manifest["id"].as_str().unwrap().to_owned();
        let deadline = Instant::now() + Duration::from_secs(10);
        let want = format!("http://127.0.0.1:{port}");
        while Instant::now() < deadline {
            let text = std::fs::read_to_string(self.config_dir().join("apps.json")).unwrap_or_default();
            let registry: Value = serde_json::from_str(&text).unwrap_or_default();
            if registry["apps"][&id]["url"] == want.as_str() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!("agent-app serve did not register {id} at {want}");
    }

    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[], None)
    }

    pub(crate) fn run_with(&self, args: &[&str], envs: &[(&str, &str)], stdin: Option<&str>) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2app"));
        self.env(&mut cmd);
        cmd.args(args).envs(envs.iter().copied()).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        if let Some(text) = stdin {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        }
        drop(child.stdin.take());
        Run(child.wait_with_output().unwrap())
    }
}

pub(crate) struct Run(Output);

/// A text as a2app printed it to a pipe: one fenced block (checked) read
/// inside, lines of the client's own kept; JSON and empty text as they are.
fn inside(text: &str) -> String {
    let Some(start) = text.find("Untrusted data from the app (through a2app)") else { return text.to_owned() };
    let end = text[start..].find("<<<end a2app-data ").map(|i| start + i).expect("a closing line");
    let close = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
    let block = text[start..close].trim_end_matches('\n');
    let body = crate::fence::unfenced(block);
    let trailing = if text[..close].ends_with('\n') { "\n" } else { "" };
    format!("{}{body}{trailing}{}", &text[..start], &text[close..])
}

impl From<Output> for Run {
    fn from(output: Output) -> Run {
        Run(output)
    }
}

impl Run {
    pub(crate) fn code(&self) -> i32 {
        self.0.status.code().unwrap_or(-1)
    }
    /// stdout, read inside its fence: text to a pipe (what an agent's shell
    /// reads) comes fenced as the app's data, which this asserts.
    pub(crate) fn out(&self) -> String {
        inside(&String::from_utf8_lossy(&self.0.stdout))
    }
    /// stderr, read inside its fence, as [`Run::out`].
    pub(crate) fn err(&self) -> String {
        inside(&String::from_utf8_lossy(&self.0.stderr))
    }
    /// stdout as it came.
    pub(crate) fn raw_out(&self) -> String {
        String::from_utf8_lossy(&self.0.stdout).into_owned()
    }
    /// stderr as it came.
    pub(crate) fn raw_err(&self) -> String {
        String::from_utf8_lossy(&self.0.stderr).into_owned()
    }
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.0.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", self.out(), self.err()))
    }
    /// Asserts the exit code, showing everything when it is not the one expected.
    pub(crate) fn expect(self, code: i32) -> Run {
        assert_eq!(self.code(), code, "stdout:\n{}\nstderr:\n{}", self.out(), self.err());
        self
    }
}

pub(crate) fn kanban(home: &Home) -> (tempfile::TempDir, Server) {
    let dir = copy_app(&example("kanban"));
    let server = home.serve(dir.path(), free_port());
    (dir, server)
}

/// The app's own page asking for `capability` (its origin, no token): the
/// only kind of caller that may ask. Answers the request's id.
pub(crate) fn page_asks(url: &str, capability: &str, params: Value) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let answer = crate::http()
            .build()
            .unwrap()
            .post(format!("{url}/api/_a2app/requests"))
            .header("Origin", url)
            .json(&json!({"capability": capability, "params": params}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        answer.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned()
    })
}

/// The app's "tomorrow", from the serverNow it reports.
pub(crate) fn tomorrow(home: &Home, target: &str) -> String {
    let root = home.run(&["--json", target]).expect(0).json();
    let now: jiff::Timestamp = root["app"]["serverNow"].as_str().unwrap().replacen(' ', "T", 1).parse().unwrap();
    now.to_zoned_datetime(jiff::tz::TimeZone::UTC).date().tomorrow().unwrap().to_string()
}

#[test]
fn walks_and_writes_a_local_app_by_name() {
    let home = Home::new();
    let (_dir, server) = kanban(&home);

    let apps = home.run(&["--json"]).expect(0).json();
    assert_eq!(apps["apps"][0]["id"], "kanban");
    assert_eq!(apps["apps"][0]["url"], server.url);

    // The root screen; the first contact is announced once.
    let root = home.run(&["kanban"]).expect(0);
    assert!(root.err().contains("First contact with http://127.0.0.1:"), "{}", root.err());
    assert!(root.out().contains("Kanban Board (kanban)"), "{}", root.out());
    assert!(root.out().contains("a2app kanban create lists name=…"), "hints echo the target: {}", root.out());
    let again = home.run(&["--json", "kanban"]).expect(0);
    assert!(!again.err().contains("First contact"));
    let root = again.json();
    assert_eq!(root["credential"]["kind"], "localApp");
    assert_eq!(root["firstContact"], false);
    let counts: Vec<(&str, i64)> = root["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["count"].as_i64().unwrap()))
        .collect();
    assert_eq!(counts, vec![("lists", 0), ("members", 0), ("cards", 0)]);

    home.run(&["kanban", "create", "lists", "name=To Do"]).expect(0);
    let due = tomorrow(&home, "kanban");
    let made =
        home.run(&["kanban", "create", "cards", "title=Eat chicken", "list=To Do", "due_date=tomorrow"]).expect(0);
    assert!(made.out().starts_with("✓ Added \"Eat chicken\" to To Do, due "), "{}", made.out());
    let made = home
        .run(&[
            "--json",
            "kanban",
            "create",
            "cards",
            "title=Buy milk",
            "list=To Do",
            "due_day=tomorrow",
            "priority=high",
        ])
        .expect(0)
        .json();
    assert_eq!(made["alreadyDone"], false);
    assert_eq!(made["record"]["due_day"], due);
    assert_eq!(made["receipt"]["action"], "create");
    let id = made["id"].as_str().unwrap().to_owned();

    // The list shows labels, refs by their labels.
    let list = home.run(&["kanban", "cards"]).expect(0);
    assert!(list.out().contains("Buy milk") && list.out().contains("To Do"), "{}", list.out());
    let list = home.run(&["--json", "kanban", "cards", "--filter", "priority = \"high\""]).expect(0).json();
    assert_eq!(list["totalItems"], 1);
    assert_eq!(list["items"][0]["_label"], "Buy milk");
    home.run(&["kanban", "cards", "--filter", "priority = \"urgent\""]).expect(1);

    let shown = home.run(&["--json", "kanban", "cards", &id]).expect(0).json();
    assert_eq!(shown["record"]["title"], "Buy milk");
    let updated = home.run(&["kanban", "update", "cards", &id, "done=yes"]).expect(0);
    assert!(updated.out().contains("Updated \"Buy milk\""), "{}", updated.out());

    let who = home.run(&["--json", "kanban", "whoami"]).expect(0).json();
    assert_eq!(who["whoami"]["kind"], "agent");
    let part = home.run(&["--json", "kanban", "describe", "cards"]).expect(0).json();
    assert_eq!(part["describe"]["label"], "title");

    // Delete: shown, refused without --yes, done with it.
    let refused = home.run(&["kanban", "delete", "cards", &id]).expect(2);
    assert!(refused.err().contains("approval_required") && refused.err().contains("--yes"), "{}", refused.err());
    home.run(&["kanban", "cards", &id]).expect(0);
    let deleted = home.run(&["kanban", "delete", "cards", &id, "--yes"]).expect(0);
    assert!(deleted.out().contains("Deleted \"Buy milk\""), "{}", deleted.out());
    home.run(&["kanban", "cards", &id]).expect(1);

    // The same app by URL: same pin, same local token.
    let by_url = home.run(&["--json", &server.url]).expect(0).json();
    assert_eq!(by_url["app"]["id"], "kanban");
}

#[test]
fn an_ambiguous_label_is_refused_and_nothing_is_written() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    home.run(&["kanban", "create", "lists", "name=To Do"]).expect(0);
    home.run(&["kanban", "create", "lists", "name=To Do"]).expect(0);
    let lists = home.run(&["--json", "kanban", "lists"]).expect(0).json();
    let mut ids: Vec<&str> = lists["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    ids.sort();

    let refused =
        home.run(&["--json", "kanban", "create", "cards", "title=Eat chicken", "list=To Do"]).expect(2).json();
    assert_eq!(refused["error"]["code"], "invalid_ref");
    assert_eq!(refused["error"]["field"], "list");
    let mut candidates: Vec<&str> =
        refused["error"]["candidates"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    candidates.sort();
    assert_eq!(candidates, ids);
    let human = home.run(&["kanban", "create", "cards", "title=Eat chicken", "list=To Do"]).expect(2);
    assert!(human.err().contains("ambiguous") && human.err().contains(ids[0]) && human.err().contains(ids[1]));

    // Read back: nothing was written.
    let cards = home.run(&["--json", "kanban", "cards"]).expect(1).json();
    assert_eq!(cards["totalItems"], 0);

    // No match: refused too, with near candidates.
    let none = home.run(&["--json", "kanban", "create", "cards", "title=x", "list=do"]).expect(2).json();
    assert_eq!(none["error"]["code"], "invalid_ref");
    assert_eq!(none["error"]["candidates"].as_array().unwrap().len(), 2);

    // A label with quotes and a backslash is quoted and escaped for the filter.
    let odd = r#"Say "hi" \ now"#;
    let list = home.run(&["--json", "kanban", "create", "lists", &format!("name={odd}")]).expect(0).json();
    let card = home.run(&["--json", "kanban", "create", "cards", "title=Odd", &format!("list={odd}")]).expect(0).json();
    assert_eq!(card["record"]["list"], list["id"]);
    home.run(&["kanban", "delete", "cards", card["id"].as_str().unwrap(), "--yes"]).expect(0);

    // Most mistakes are caught before sending, all at once, with the fix.
    let bad =
        home.run(&["--json", "kanban", "create", "cards", "titel=x", "priority=High", "points=1.5"]).expect(2).json();
    let codes: Vec<&str> =
        bad["error"]["violations"].as_array().unwrap().iter().map(|v| v["code"].as_str().unwrap()).collect();
    assert_eq!(codes, vec!["unknown_field", "invalid_enum", "invalid_number", "required_field", "required_field"]);
    assert_eq!(bad["error"]["fix"].as_str().unwrap().split('?').next().unwrap(), "did you mean title");
    home.run(&["--json", "kanban", "cards"]).expect(1);
}

#[test]
fn a_replayed_key_is_already_done_and_a_port_change_is_invisible() {
    let home = Home::new();
    let dir = copy_app(&example("kanban"));
    let server = home.serve(dir.path(), free_port());
    let first = home.run(&["--json", "kanban", "create", "lists", "name=Inbox", "--key", "k-1"]).expect(0).json();
    let again = home.run(&["--json", "kanban", "create", "lists", "name=Inbox", "--key", "k-1"]).expect(0).json();
    assert_eq!(again["alreadyDone"], true);
    assert_eq!(again["id"], first["id"]);
    let human = home.run(&["kanban", "create", "lists", "name=Inbox", "--key", "k-1"]).expect(0);
    assert!(human.out().contains("already done") && human.out().contains(first["id"].as_str().unwrap()));
    assert_eq!(home.run(&["--json", "kanban", "lists"]).expect(0).json()["totalItems"], 1);
    drop(server);

    let port = free_port();
    let _server = home.serve(dir.path(), port);
    let root = home.run(&["--json", "kanban"]).expect(0).json();
    assert_eq!(root["app"]["url"], format!("http://127.0.0.1:{port}"));
    home.run(&["kanban", "create", "lists", "name=Later"]).expect(0);
}

#[test]
fn credentials_env_beats_file_beats_local_token() {
    let home = Home::new();
    let (dir, server) = kanban(&home);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();

    // The environment wins over the local token.
    let env = home.run_with(&["kanban", "create", "lists", "name=A"], &[("A2APP_TOKEN", "wrong")], None).expect(2);
    assert!(env.err().contains("unauthorized"), "{}", env.err());

    // The credentials file wins over the local token; it is private.
    home.run_with(&[&server.url, "login"], &[], Some("also-wrong\n")).expect(0);
    let file = home.config_dir().join("credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let stored = home.run(&["--json", "kanban", "whoami"]).expect(2).json();
    assert_eq!(stored["error"]["code"], "unauthorized");
    home.run_with(&["kanban", "login"], &[], Some(&format!("{token}\n"))).expect(0);
    let who = home.run(&["--json", "kanban", "whoami"]).expect(0).json();
    assert_eq!(who["credential"]["kind"], "file");
    let who = home.run_with(&["--json", "kanban", "whoami"], &[("A2APP_TOKEN", &token)], None).expect(0).json();
    assert_eq!(who["credential"]["kind"], "env");

    // Without a stored token, the local app's own.
    home.run(&["kanban", "logout"]).expect(0);
    let who = home.run(&["--json", "kanban", "whoami"]).expect(0).json();
    assert_eq!(who["credential"]["kind"], "localApp");
    assert!(!std::fs::read_to_string(&file).unwrap().contains(&token));
}

#[test]
fn addresses_that_are_not_apps() {
    let home = Home::new();
    for path in [r"C:\apps\kanban", "C:/apps/kanban", "./kanban"] {
        let run = home.run(&[path]).expect(2);
        assert!(run.err().contains("is a path"), "{path}: {}", run.err());
    }
    let unknown = home.run(&["--json", "nosuchapp"]).expect(1).json();
    assert_eq!(unknown["error"]["code"], "unknown_app");
    let closed = format!("http://127.0.0.1:{}", free_port());
    let run = home.run(&[&closed]).expect(3);
    assert!(run.err().contains("cannot reach"), "{}", run.err());
}

// ---- fake servers ----------------------------------------------------------

#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// The app's 404 for a route it does not have.
pub(crate) fn no_route() -> Answer {
    let body = json!({"a2app": true, "ok": false, "code": "not_found", "status": 404, "message": "no such route"});
    Some((404, "application/json", body.to_string()))
}

/// What the fake answers: a status, a content type and a body; `None` drops the
/// connection without answering (a lost answer).
pub(crate) type Answer = Option<(u16, &'static str, String)>;

pub(crate) struct Fake {
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Fake {
    pub(crate) fn start(handler: impl Fn(&Request) -> Answer + Send + 'static) -> Fake {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(request) = read_request(&mut stream) else { continue };
                log.lock().unwrap().push(request.clone());
                let Some((status, content_type, body)) = handler(&request) else {
                    drop(stream);
                    continue;
                };
                let head = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(body.as_bytes());
            }
        });
        Fake { url, seen }
    }

    pub(crate) fn seen(&self, method: &str, path: &str) -> Vec<Request> {
        self.seen.lock().unwrap().iter().filter(|r| r.method == method && r.path == path).cloned().collect()
    }
}

fn read_request(stream: &mut std::net::TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_owned(), v.trim().to_owned()));
        }
    }
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    Some(Request { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() })
}

pub(crate) fn identity(app_id: &str, protocol: &str) -> String {
    json!({"a2app": true, "protocol": protocol, "adapterVersion": "9.9.9",
           "app": {"id": app_id, "name": "Fake Kanban", "pbVersion": "0.40.6"},
           "schemaVersion": "sv_fake", "serverNow": "2026-07-30 09:15:00.000Z", "serverTzOffsetMinutes": 120})
    .to_string()
}

fn canned(status: u16, content_type: &'static str, body: &str) -> Fake {
    let body = body.to_owned();
    Fake::start(move |_| Some((status, content_type, body.clone())))
}

#[test]
fn the_gate_diagnoses_each_failure() {
    let home = Home::new();
    let forbidden_host =
        serde_json::to_string(&a2app_core::Error::ForbiddenHost("kanban.example.com".into()).to_body()).unwrap();
    let json_type = "application/json";
    let rows: Vec<(Fake, &str, &[&str])> = vec![
        (canned(200, json_type, r#"{"hello": "world"}"#), "not_an_app", &["no \"a2app\": true marker"]),
        (canned(200, "text/html", "<!doctype html><html><body>hi</body></html>"), "not_an_app", &["HTML page"]),
        (canned(404, "text/plain", "404 page not found"), "not_an_app", &["not JSON"]),
        (canned(200, json_type, &identity("kanban", "2.0")), "unsupported_protocol", &["\"2.0\"", "exactly 1.0"]),
        (canned(200, json_type, &identity("", "1.0")), "not_an_app", &["no app.id"]),
        (
            canned(200, json_type, &identity("kanban", "1.0").replace(r#""id":"kanban","#, "")),
            "not_an_app",
            &["incomplete", "id"],
        ),
        (
            // The envelope exactly as the server's core makes it.
            canned(403, json_type, &forbidden_host),
            "forbidden_host",
            &["real and running", "\"kanban.example.com\"", "allowed_hosts", "owner"],
        ),
        (canned(401, "text/plain", "Unauthorized"), "proxy_auth", &["proxy or tunnel", "public by design"]),
    ];
    for (fake, code, words) in &rows {
        let run = home.run(&[&fake.url]).expect(2);
        assert!(run.err().contains(&format!("error: {code}")), "{code}: {}", run.err());
        for w in *words {
            assert!(run.err().contains(w), "{code}: {w:?} not in {}", run.err());
        }
        let json = home.run(&["--json", &fake.url]).expect(2).json();
        assert_eq!(json["error"]["code"], *code);
        assert!(json["error"]["fix"].is_string());
        // Nothing but the identity document was asked for, and never with a token.
        let seen = fake.seen.lock().unwrap();
        assert!(seen.iter().all(|r| r.path == "/api/_a2app" && r.header("x-lui-token").is_none()), "{seen:?}");
    }
}

#[test]
fn a_changed_app_id_is_refused_until_forgotten() {
    let home = Home::new();
    let id = Arc::new(Mutex::new("kanban".to_owned()));
    let current = id.clone();
    let fake = Fake::start(move |r| match r.path.as_str() {
        "/api/_a2app" => Some((200, "application/json", identity(&current.lock().unwrap(), "1.0"))),
        _ => Some((200, "application/json", describe_doc().to_string())),
    });
    let first = home.run(&[&fake.url, "describe"]).expect(0);
    assert!(
        first.err().contains("First contact") && first.err().contains("pinning app.id \"kanban\""),
        "{}",
        first.err()
    );
    let second = home.run(&[&fake.url, "describe"]).expect(0);
    assert!(!second.err().contains("First contact"));

    *id.lock().unwrap() = "not-kanban".into();
    let refused = home.run(&[&fake.url, "describe"]).expect(2);
    assert!(refused.err().contains("error: app_changed"), "{}", refused.err());
    assert!(
        refused.err().contains("now identifies as \"not-kanban\", but was pinned to \"kanban\""),
        "{}",
        refused.err()
    );
    let json = home.run(&["--json", &fake.url]).expect(2).json();
    assert_eq!((json["error"]["pinned"].as_str(), json["error"]["now"].as_str()), (Some("kanban"), Some("not-kanban")));

    home.run(&[&fake.url, "forget"]).expect(0);
    let repinned = home.run(&[&fake.url, "describe"]).expect(0);
    assert!(repinned.err().contains("pinning app.id \"not-kanban\""), "{}", repinned.err());
}

pub(crate) fn describe_doc() -> Value {
    let op = |name: &str, destructive: bool, executor: &str, params: Value| {
        json!({"name": name, "description": format!("{name} things"), "params": params, "executor": executor,
               "destructive": destructive, "url": format!("/api/ops/{name}")})
    };
    json!({
        "app": {"id": "kanban", "name": "Fake Kanban", "authMode": "single-user", "timezone": "Europe/Berlin"},
        "schemaVersion": "sv_fake",
        "entities": {
            "lists": {"label": "name", "records": "/api/collections/lists/records",
                      "fields": {"name": {"type": "string", "required": true}},
                      "systemFields": {"id": {"type": "string", "readOnly": true, "format": "id"}}},
            "cards": {"label": "title", "records": "/api/collections/cards/records",
                      "fields": {"title": {"type": "string", "required": true}, "due_date": {"type": "datetime"}},
                      "systemFields": {"id": {"type": "string", "readOnly": true, "format": "id"}}}
        },
        "operations": [
            op("purge_done", true, "crud", json!({"older_than_days": {"type": "number", "required": true}})),
            op("reindex", false, "job", json!({"mode": {"type": "string", "enum": ["fast", "full"], "default": "fast"}}))
        ],
        "conventions": {}
    })
}

/// A fake app with operations and jobs, answering the fixed wire contract.
fn ops_app() -> Fake {
    let polls = Arc::new(Mutex::new(0u32));
    Fake::start(move |r| {
        let ok = |v: Value| Some((200, "application/json", v.to_string()));
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/api/_a2app") => ok(serde_json::from_str(&identity("kanban", "1.0")).unwrap()),
            ("GET", "/api/_a2app/describe") => ok(describe_doc()),
            ("GET", "/api/_ops") => ok(describe_doc()["operations"].clone()),
            ("POST", "/api/ops/purge_done") => {
                let params: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
                if r.header("x-a2app-approval") == Some("appr-1") {
                    ok(json!({"ok": true, "operation": "purge_done", "result": {"deleted": 2},
                              "receipts": [{"text": "Deleted \"Old\" from cards", "action": "delete", "entity": "cards",
                                            "id": "aaaaaaaaaaaaaaa", "fields": {}, "at": "2026-07-30 09:15:01.000Z", "caller": "agent"}]}))
                } else {
                    let body = json!({"a2app": true, "ok": false, "code": "approval_required", "status": 428,
                                      "message": "purge_done is destructive; repeat with the approval key once a person confirmed",
                                      "approvalKey": "appr-1", "operation": "purge_done", "params": params});
                    Some((428, "application/json", body.to_string()))
                }
            }
            ("POST", "/api/ops/reindex") => Some((
                202,
                "application/json",
                json!({"ok": true, "operation": "reindex", "jobId": "job1", "status": "/api/_jobs/job1"}).to_string(),
            )),
            ("GET", "/api/_jobs/job1") => {
                let mut n = polls.lock().unwrap();
                *n += 1;
                let (state, done) = match *n {
                    1 => ("queued", 0),
                    2 => ("running", 1),
                    3 => ("running", 2),
                    _ => ("succeeded", 3),
                };
                ok(json!({"id": "job1", "operation": "reindex", "state": state,
                          "progress": {"done": done, "total": 3, "message": "indexing"},
                          "result": if state == "succeeded" { json!({"indexed": 3}) } else { Value::Null }, "error": null}))
            }
            _ => no_route(),
        }
    })
}

#[test]
fn a_destructive_operation_runs_only_with_an_explicit_flag() {
    let home = Home::new();
    let app = ops_app();
    let ops = home.run(&["--json", &app.url, "ops"]).expect(0).json();
    assert_eq!(ops["operations"].as_array().unwrap().len(), 2);

    // Local checks first: a missing or unknown parameter costs no request.
    let bad = home.run(&["--json", &app.url, "run", "purge_done", "days=3"]).expect(2).json();
    assert_eq!(bad["error"]["code"], "invalid_param");
    assert!(app.seen("POST", "/api/ops/purge_done").is_empty());

    let refused = home.run(&[&app.url, "run", "purge_done", "older_than_days=30"]).expect(2);
    assert!(refused.err().contains("purge_done is destructive: purge_done things"), "{}", refused.err());
    assert!(refused.err().contains("\"older_than_days\":30") && refused.err().contains("--yes"), "{}", refused.err());
    assert!(!refused.err().contains("appr-1"), "the approval key is not handed out");
    let calls = app.seen("POST", "/api/ops/purge_done");
    assert_eq!(calls.len(), 1);
    assert!(calls[0].header("x-a2app-approval").is_none());

    let done = home.run(&[&app.url, "run", "purge_done", "older_than_days=30", "--yes"]).expect(0);
    assert!(done.err().contains("approved with --yes"), "{}", done.err());
    assert!(
        done.out().contains("✓ purge_done done") && done.out().contains("Deleted \"Old\" from cards"),
        "{}",
        done.out()
    );
    let calls = app.seen("POST", "/api/ops/purge_done");
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[2].header("x-a2app-approval"), Some("appr-1"));
    assert_eq!(serde_json::from_str::<Value>(&calls[2].body).unwrap(), json!({"older_than_days": 30}));
}

#[test]
fn a_job_is_followed_with_plain_lines_off_a_terminal() {
    let home = Home::new();
    let app = ops_app();
    let bad = home.run(&["--json", &app.url, "run", "reindex", "mode=slow"]).expect(2).json();
    assert_eq!(bad["error"]["fix"], "use one of: fast, full");
    let run = home.run(&[&app.url, "run", "reindex", "mode=full"]).expect(0);
    let err = run.err();
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("job job1")).collect();
    assert_eq!(
        lines,
        vec![
            "job job1: queued 0/3 indexing",
            "job job1: running 1/3 indexing",
            "job job1: running 2/3 indexing",
            "job job1: succeeded 3/3 indexing"
        ]
    );
    assert!(run.out().contains("✓ job job1 (reindex) succeeded"), "{}", run.out());
    let no_wait = home.run(&["--json", &app.url, "run", "reindex", "--no-wait"]).expect(0).json();
    assert_eq!(no_wait["jobId"], "job1");
}

#[test]
fn a_write_whose_answer_was_lost_is_retried_with_the_same_key() {
    let home = Home::new();
    let posts = Arc::new(Mutex::new(VecDeque::from([None, Some(409)])));
    let queue = posts.clone();
    let app = Fake::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/_a2app") => Some((200, "application/json", identity("kanban", "1.0"))),
        ("GET", "/api/_a2app/describe") => Some((200, "application/json", describe_doc().to_string())),
        ("POST", "/api/collections/lists/records") => match queue.lock().unwrap().pop_front().flatten() {
            // The first attempt "succeeded" but its answer is lost: the connection drops.
            None => None,
            Some(_) => Some((
                409,
                "application/json",
                json!({"a2app": true, "ok": false, "code": "duplicate_request", "status": 409,
                       "message": "this Idempotency-Key was already used", "id": "firstrecord0001"})
                .to_string(),
            )),
        },
        _ => Some((404, "application/json", "{}".into())),
    });
    let run = home.run_with(&[&app.url, "create", "lists", "name=Inbox"], &[("A2APP_TOKEN", "t")], None).expect(0);
    assert!(run.out().contains("already done") && run.out().contains("lists/firstrecord0001"), "{}", run.out());
    let calls = app.seen("POST", "/api/collections/lists/records");
    assert_eq!(calls.len(), 2);
    let keys: Vec<&str> = calls.iter().map(|c| c.header("idempotency-key").unwrap()).collect();
    assert_eq!(keys[0], keys[1]);
    assert_eq!(calls[0].header("x-lui-token"), Some("t"));
}

#[test]
fn a_lookup_that_cannot_be_read_is_reported_as_the_calls_failure_and_nothing_is_written() {
    let home = Home::new();
    let mut doc = describe_doc();
    doc["entities"]["cards"]["fields"]["list"] = json!({"type": "ref", "entity": "lists", "required": true});
    let app = Fake::start(move |r| match (r.method.as_str(), r.path.split('?').next().unwrap_or_default()) {
        ("GET", "/api/_a2app") => Some((200, "application/json", identity("kanban", "1.0"))),
        ("GET", "/api/_a2app/describe") => Some((200, "application/json", doc.to_string())),
        // A proxy in front of the app, failing the label lookup.
        ("GET", "/api/collections/lists/records") => Some((502, "text/html", "<html>Bad Gateway</html>".into())),
        _ => Some((404, "application/json", "{}".into())),
    });
    let token = [("A2APP_TOKEN", "t")];
    let run =
        home.run_with(&["--json", &app.url, "create", "cards", "title=Eat", "list=To Do"], &token, None).expect(3);
    let json = run.json();
    assert_eq!(json["error"]["code"], "unexpected_answer", "{json}");
    assert!(json["error"]["message"].as_str().unwrap().contains("HTTP 502"), "{json}");
    assert!(app.seen("POST", "/api/collections/cards/records").is_empty());
}

#[test]
fn a_refusal_with_a_code_newer_than_the_client_keeps_the_apps_code_and_message() {
    let home = Home::new();
    let app = Fake::start(move |r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/_a2app") => Some((200, "application/json", identity("kanban", "1.0"))),
        ("GET", "/api/_a2app/describe") => Some((200, "application/json", describe_doc().to_string())),
        ("POST", "/api/collections/lists/records") => Some((
            429,
            "application/json",
            json!({"a2app": true, "ok": false, "code": "quota_exceeded", "status": 429,
                   "message": "the app's monthly quota is used up", "violations": []})
            .to_string(),
        )),
        _ => Some((404, "application/json", "{}".into())),
    });
    let token = [("A2APP_TOKEN", "t")];
    let run = home.run_with(&["--json", &app.url, "create", "lists", "name=Inbox"], &token, None).expect(2);
    let json = run.json();
    assert_eq!(
        (json["error"]["code"].as_str(), json["error"]["message"].as_str()),
        (Some("quota_exceeded"), Some("the app's monthly quota is used up")),
        "{json}"
    );
    assert!(json["error"]["fix"].as_str().unwrap().contains("the app is newer"), "{json}");
}

/// A fake app that stores nothing: it answers a create with the body it got
/// and a receipt, and serves identity with a settable schemaVersion.
fn echo_app(schema_version: Arc<Mutex<String>>) -> Fake {
    Fake::start(move |r| {
        let ok = |v: Value| Some((200, "application/json", v.to_string()));
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/api/_a2app") => {
                let mut doc: Value = serde_json::from_str(&identity("kanban", "1.0")).unwrap();
                doc["schemaVersion"] = json!(*schema_version.lock().unwrap());
                ok(doc)
            }
            ("GET", "/api/_a2app/describe") => {
                let mut doc = describe_doc();
                doc["schemaVersion"] = json!(*schema_version.lock().unwrap());
                ok(doc)
            }
            ("POST", "/api/collections/cards/records") => {
                let mut record: Value = serde_json::from_str(&r.body).unwrap();
                record["id"] = json!("newcard00000001");
                record["_receipt"] = json!({"text": "Added \"Eat\" to cards, due Fri 31 Jul", "action": "create",
                    "entity": "cards", "id": "newcard00000001", "fields": {}, "at": "2026-07-30 09:15:00.000Z", "caller": "agent"});
                ok(record)
            }
            _ => Some((404, "application/json", "{}".into())),
        }
    })
}

#[test]
fn relative_dates_use_the_apps_clock_and_zone() {
    // The fake app says it is Thursday 30 July 2026, 09:15 UTC, at UTC+2.
    let home = Home::new();
    let app = echo_app(Arc::new(Mutex::new("sv_fake".into())));
    let token = [("A2APP_TOKEN", "t")];
    for (input, sent) in [
        ("tomorrow", "2026-07-31T00:00:00+02:00"),
        ("friday", "2026-07-31T00:00:00+02:00"),
        ("next thursday", "2026-08-06T00:00:00+02:00"),
        ("in 3 days", "2026-08-02T00:00:00+02:00"),
        ("2026-07-30T10:00:00Z", "2026-07-30T10:00:00Z"),
    ] {
        let due = format!("due_date={input}");
        let run =
            home.run_with(&["--json", &app.url, "create", "cards", "title=Eat", &due], &token, None).expect(0).json();
        assert_eq!(run["record"]["due_date"], sent, "{input}");
    }
    let refused =
        home.run_with(&[&app.url, "create", "cards", "title=Eat", "due_date=someday"], &token, None).expect(2);
    assert!(
        refused.err().contains("error: invalid_date (due_date)") && refused.err().contains("fix:"),
        "{}",
        refused.err()
    );
    assert_eq!(app.seen("POST", "/api/collections/cards/records").len(), 5, "the refusal cost no request");
}

#[test]
fn the_schema_is_cached_per_schema_version() {
    let home = Home::new();
    let version = Arc::new(Mutex::new("sv_1".to_owned()));
    let app = echo_app(version.clone());
    for _ in 0..3 {
        home.run(&[&app.url, "describe"]).expect(0);
    }
    assert_eq!(app.seen("GET", "/api/_a2app/describe").len(), 1);
    *version.lock().unwrap() = "sv_2".into();
    let run = home.run(&["--json", &app.url, "describe"]).expect(0).json();
    assert_eq!(run["describe"]["schemaVersion"], "sv_2");
    home.run(&[&app.url, "describe"]).expect(0);
    assert_eq!(app.seen("GET", "/api/_a2app/describe").len(), 2);
}

/// A fake app that identifies and describes itself but never answers a write.
pub(crate) fn silent_writes_app() -> Fake {
    Fake::start(|r| match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api/_a2app") => Some((200, "application/json", identity("kanban", "1.0"))),
        ("GET", "/api/_a2app/describe") => Some((200, "application/json", describe_doc().to_string())),
        _ => None,
    })
}

#[test]
fn a_write_that_never_gets_an_answer_names_the_key_to_repeat() {
    let home = Home::new();
    let app = silent_writes_app();
    let run = home
        .run_with(&["--json", &app.url, "create", "lists", "name=Inbox"], &[("A2APP_TOKEN", "t")], None)
        .expect(3)
        .json();
    assert_eq!(run["error"]["code"], "outcome_unknown");
    let key = run["error"]["idempotencyKey"].as_str().unwrap();
    assert!(run["error"]["fix"].as_str().unwrap().contains(&format!("--key {key}")));
    let calls = app.seen("POST", "/api/collections/lists/records");
    assert_eq!(calls.len(), 3, "the first attempt and two retries");
    assert!(calls.iter().all(|c| c.header("idempotency-key") == Some(key)));
}

#[test]
fn a_local_port_reused_by_another_app_follows_the_registry() {
    let home = Home::new();
    let kanban_dir = copy_app(&example("kanban"));
    let notes_dir = copy_app(&example("kanban"));
    let toml = std::fs::read_to_string(notes_dir.path().join("app.toml")).unwrap();
    std::fs::write(notes_dir.path().join("app.toml"), toml.replace("id = \"kanban\"", "id = \"notes\"")).unwrap();
    let port = free_port();

    let server = home.serve(kanban_dir.path(), port);
    home.run(&["kanban"]).expect(0);
    drop(server);

    // Another app on the same port: by name it is simply the app that runs there now.
    let _server = home.serve(notes_dir.path(), port);
    let notes = home.run(&["--json", "notes"]).expect(0).json();
    assert_eq!(notes["app"]["id"], "notes");
    assert_eq!(notes["credential"]["kind"], "localApp");
    // kanban's registration is stale: not running, and nothing is sent to notes as kanban.
    let stale = home.run(&["--json", "kanban", "create", "lists", "name=x"]).expect(3).json();
    assert_eq!(stale["error"]["code"], "not_running");
    assert_eq!(home.run(&["--json", "notes", "lists"]).expect(1).json()["totalItems"], 0);
}

/// Random command lines against a served kanban app (seeded; `A2APP_FUZZ_SEED`
/// replays one): every run ends with a documented exit code (0 to 3), none
/// panics, and with `--json` whatever is on stdout is one JSON object.
#[test]
fn random_command_lines_end_with_a_documented_code() {
    use rand::RngExt;
    use rand::seq::IndexedRandom;
    let (seed, runs, mut rng) = crate::fuzz_run(0x00a2_a990u64);
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let list = home.run(&["--json", "kanban", "create", "lists", "name=To Do"]).expect(0).json();
    let list_id = list["id"].as_str().unwrap_or_default().to_owned();
    assert_eq!(list_id.len(), 15, "{list}");

    let targets = ["kanban", server.url.as_str(), "nope", "http://127.0.0.1:1", "", "kanban/x", "ftp://x"];
    let words: &[&str] = &[
        "cards",
        "lists",
        "members",
        "nope",
        "create",
        "update",
        "delete",
        "run",
        "job",
        "whoami",
        "describe",
        "ops",
        "move_card",
        "complete_card",
        "clear_done",
        "cards_in_list",
        "export_board",
        "To Do",
        "title=x",
        "title=",
        "list=To Do",
        "list=",
        "due_date=tomorrow",
        "due_date=next friday",
        "due_date=2026-13-40",
        "priority=high",
        "priority=nope",
        "points=101",
        "points=-1",
        "points=x",
        "labels:=[\"bug\"]",
        "labels:=[",
        "meta:={\"a\":1}",
        "meta:=",
        "done:=true",
        "=x",
        ":=",
        "x",
        "é",
        "🦀",
        "--",
        "-",
        "abcdefghijklmno",
        "card=x",
        "list=x",
        "position=2.5",
    ];
    let flags: &[&[&str]] = &[
        &["--json"],
        &["--filter", "title ~ 'x'"],
        &["--filter", "((("],
        &["--sort", "-created"],
        &["--sort", "nope"],
        &["--page", "0"],
        &["--per-page", "1000"],
        &["--key", "k1"],
        &["--no-wait"],
        &["--agent", "fuzz"],
        &["--yes"],
    ];
    let mut codes = [0usize; 4];
    for run in 0..runs {
        let mut args: Vec<String> = Vec::new();
        if rng.random_bool(0.95) {
            args.push((*targets.choose(&mut rng).unwrap()).to_owned());
        }
        for _ in 0..rng.random_range(0..5) {
            let word = *words.choose(&mut rng).unwrap();
            args.push(if word == "abcdefghijklmno" { list_id.clone() } else { word.to_owned() });
        }
        for _ in 0..rng.random_range(0..3) {
            args.extend(flags.choose(&mut rng).unwrap().iter().map(|s| (*s).to_owned()));
        }
        if rng.random_bool(0.3) {
            args.insert(0, "--json".into());
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = home.run(&argv);
        let context = format!("seed {seed}, run {run}: a2app {argv:?}\nstdout:\n{}\nstderr:\n{}", got.out(), got.err());
        assert!((0..=3).contains(&got.code()), "exit {}: {context}", got.code());
        codes[got.code() as usize] += 1;
        assert!(!got.err().contains("panicked"), "{context}");
        if argv.contains(&"--json") && !got.out().trim().is_empty() {
            let parsed: Result<Value, _> = serde_json::from_slice(&got.0.stdout);
            assert!(parsed.is_ok_and(|v| v.is_object()), "not one JSON object: {context}");
        }
    }
    // The app still answers, and the runs reached every outcome.
    home.run(&["kanban", "whoami"]).expect(0);
    assert!(codes.iter().all(|&n| n >= runs / 40), "exit codes 0, 1, 2, 3: {codes:?}");
}

/// A delete answers 204; its receipt comes from the feed, which holds what
/// was stored strictly after `since`. A delete stored in the very millisecond
/// identity reported must still be found.
#[test]
fn a_delete_in_the_millisecond_identity_reported_still_gets_its_receipt() {
    let home = Home::new();
    let id = "aaaaaaaaaaaaaaa";
    let app = Fake::start(move |r| {
        let ok = |v: Value| Some((200, "application/json", v.to_string()));
        let path = r.path.split('?').next().unwrap_or_default();
        match (r.method.as_str(), path) {
            ("GET", "/api/_a2app") => ok(serde_json::from_str(&identity("kanban", "1.0")).unwrap()),
            ("GET", "/api/_a2app/describe") => ok(describe_doc()),
            ("GET", "/api/collections/cards/records/aaaaaaaaaaaaaaa") => ok(json!({"id": id, "title": "Old"})),
            ("DELETE", "/api/collections/cards/records/aaaaaaaaaaaaaaa") => {
                Some((204, "application/json", String::new()))
            }
            ("GET", "/api/_a2app/receipts") => {
                // Stored at 09:15:00.000, identity's serverNow: only an earlier `since` holds it.
                let since = r.path.split("since=").nth(1).unwrap_or_default().split('&').next().unwrap_or_default();
                let since = since.replace("%3A", ":");
                let items = if since.as_str() < "2026-07-30T09:15:00.000Z" {
                    json!([{"text": "Deleted \"Old\" from cards", "action": "delete", "entity": "cards", "id": id,
                            "fields": {}, "at": "2026-07-30 09:15:00.000Z", "caller": "agent"}])
                } else {
                    json!([])
                };
                ok(json!({"items": items}))
            }
            _ => no_route(),
        }
    });
    let done = home.run(&["--json", &app.url, "delete", "cards", id, "--yes"]).expect(0).json();
    assert_eq!(done["receipt"]["text"], "Deleted \"Old\" from cards");
    let asked = app.seen("GET", "/api/_a2app/receipts?since=2026-07-30T09%3A14%3A59.999Z&limit=1000");
    assert_eq!(asked.len(), 1, "{:?}", app.seen.lock().unwrap().iter().map(|r| r.path.clone()).collect::<Vec<_>>());
}

/// A fake app whose operations lose or repeat: purge_done's approved run
/// never answers; reindex's key was used before (its job failed); a card
/// update's key was used for another card.
fn replaying_app() -> Fake {
    Fake::start(|r| {
        let ok = |v: Value| Some((200, "application/json", v.to_string()));
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/api/_a2app") => ok(serde_json::from_str(&identity("kanban", "1.0")).unwrap()),
            ("GET", "/api/_a2app/describe") => ok(describe_doc()),
            ("GET", "/api/_ops") => ok(describe_doc()["operations"].clone()),
            ("POST", "/api/ops/purge_done") if r.header("x-a2app-approval").is_some() => None,
            ("POST", "/api/ops/purge_done") => {
                let body = json!({"a2app": true, "ok": false, "code": "approval_required", "status": 428,
                                  "message": "purge_done is destructive", "approvalKey": "appr-1",
                                  "operation": "purge_done", "params": {"older_than_days": 30}});
                Some((428, "application/json", body.to_string()))
            }
            ("POST", "/api/ops/reindex") | ("PATCH", "/api/collections/cards/records/cardbbbbbbbbbbb") => {
                let first = if r.path.contains("ops") { "job1" } else { "cardaaaaaaaaaaa" };
                let body = json!({"a2app": true, "ok": false, "code": "duplicate_request", "status": 409,
                                  "message": "this Idempotency-Key was already used", "id": first});
                Some((409, "application/json", body.to_string()))
            }
            ("GET", "/api/_jobs/job1") => ok(json!({"id": "job1", "operation": "reindex", "state": "failed",
                "progress": {"done": 1, "total": 3, "message": "indexing"}, "result": null,
                "error": {"message": "the index is locked"}})),
            _ => no_route(),
        }
    })
}

#[test]
fn a_replayed_or_lost_operation_is_reported_as_what_it_is() {
    let home = Home::new();
    let app = replaying_app();
    let token = [("A2APP_TOKEN", "t")];
    // A crud operation may run again on a repeat: its lost answer is not
    // tried again, and the agent is told to check, not to repeat the key.
    let lost = home
        .run_with(&["--json", &app.url, "run", "purge_done", "older_than_days=30", "--yes"], &token, None)
        .expect(3)
        .json();
    assert_eq!((lost["error"]["code"].as_str(), lost["error"].get("idempotencyKey")), (Some("outcome_unknown"), None));
    assert!(
        lost["error"]["fix"].as_str().unwrap().starts_with("the operation may have run: check its effect"),
        "{lost}"
    );
    let approved: Vec<_> = app
        .seen("POST", "/api/ops/purge_done")
        .into_iter()
        .filter(|r| r.header("x-a2app-approval").is_some())
        .collect();
    assert_eq!(approved.len(), 1, "sent once");

    // A job's key used before: the job it started is followed, and it failed.
    let replay = home.run_with(&[&app.url, "run", "reindex", "--key", "k-job"], &token, None).expect(2);
    assert!(replay.err().contains("started job job1; nothing ran again"), "{}", replay.err());
    assert!(replay.err().contains("job job1 (reindex) failed: the index is locked"), "{}", replay.err());
    assert!(!replay.out().contains("already done"), "{}", replay.out());

    // A key the first attempt used on another record did not do this write.
    let other = home
        .run_with(
            &["--json", &app.url, "update", "cards", "cardbbbbbbbbbbb", "title=x", "--key", "k-card"],
            &token,
            None,
        )
        .expect(2)
        .json();
    assert_eq!(
        (other["error"]["code"].as_str(), other["error"]["id"].as_str()),
        (Some("duplicate_request"), Some("cardaaaaaaaaaaa"))
    );
}

/// `a2app claims TARGET`: the message on stdin, checked against what this
/// client stored (as `a2app-cli`); exit 4 when it must be withheld.
#[test]
fn a_message_is_checked_against_what_was_stored() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    home.run(&["kanban", "create", "lists", "name=To Do"]).expect(0);
    home.run(&["kanban", "create", "cards", "title=Fix login", "list=To Do"]).expect(0);

    let message = "I added 'Fix login' and deleted 'Old notes'.";
    let withheld = home.run_with(&["claims", "kanban"], &[], Some(message)).expect(4);
    let text = withheld.out();
    assert!(text.starts_with("withheld: do not show this message"), "{text}");
    assert!(text.contains("\n  no_write: "), "{text}");
    assert!(text.contains("next turn: --since a0r0"), "a withheld turn stays open: {text}");

    // The same turn, corrected; --json is the HTTP answer, and the target may come first.
    let passed = home.run_with(&["--json", "kanban", "claims"], &[], Some("I added 'Fix login'.")).expect(0).json();
    assert_eq!(passed["verdict"], "pass", "{passed}");
    assert_eq!(passed["confirmations"].as_array().map(Vec::len), Some(2), "{passed}");
    assert_eq!(passed["discrepancies"], serde_json::json!([]));

    let empty = home.run_with(&["claims", "kanban"], &[], Some(" \n")).expect(2);
    assert!(empty.err().contains("no message on stdin"), "{}", empty.err());
    let bad = home.run_with(&["claims", "kanban", "--since", "yesterday"], &[], Some("Done.")).expect(2);
    assert!(bad.err().contains("invalid_param"), "{}", bad.err());
}
