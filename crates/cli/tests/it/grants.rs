//! Deployed identity from the agent's side, through the real `a2app`: against
//! a real `agent-app serve` (a person decides by HTTP from the app's own
//! origin, as its page does), and against a fake app for what only the wire
//! shows (which headers a call carries, the retry after a refused token).

use crate::client::{Fake, Home, Run, identity, kanban, no_route};
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `a2app ARGS`, started and left running (a `grant ask` waiting for a person).
fn start(home: &Home, args: &[&str]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2app"));
    home.env(&mut cmd);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Writes a client file as the client does, for its owner only (a grants
/// file others could read loses its cached tokens).
fn write_private(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

/// The grants file of this home, `{}` when there is none.
fn held(home: &Home) -> Value {
    std::fs::read_to_string(home.config_dir().join("grants.json"))
        .map(|text| serde_json::from_str(&text).unwrap())
        .unwrap_or_else(|_| json!({}))
}

/// The id of the grant the running ask stored as pending.
fn pending_id(home: &Home, origin: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if let Some(id) = held(home)[origin]["id"].as_str() {
            return id.to_owned();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("no grant was asked: {}", held(home));
}

/// One HTTP call from the test: `origin` set is the app's own page (the
/// person); `bearer` set is a grant's token. Answers the status and the body.
fn http(method: &str, url: &str, origin: Option<&str>, bearer: Option<&str>) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let client = crate::http().build().unwrap();
        let mut req = client.request(method.parse().unwrap(), url);
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        if let Some(t) = bearer {
            req = req.header("Authorization", format!("Bearer {t}"));
        }
        if method == "POST" {
            req = req.header("content-type", "application/json").body("{}");
        }
        let answer = req.send().await.unwrap();
        (answer.status().as_u16(), answer.json::<Value>().await.unwrap_or(Value::Null))
    })
}

/// A person's decision on grant `id` at the app's own page.
fn person(url: &str, id: &str, verb: &str) -> Value {
    let (status, body) = http("POST", &format!("{url}/api/_a2app/grants/{id}/{verb}"), Some(url), None);
    assert_eq!(status, 200, "{verb}: {body}");
    body
}

fn finish(child: Child) -> Run {
    Run::from(child.wait_with_output().unwrap())
}

/// The records of `entity`, read anonymously (reads on loopback need nothing).
fn count(url: &str, entity: &str) -> i64 {
    http("GET", &format!("{url}/api/collections/{entity}/records"), None, None).1["totalItems"].as_i64().unwrap()
}

#[test]
fn an_approved_grant_reads_within_its_scopes_and_nothing_more() {
    let home = Home::new();
    let (dir, server) = kanban(&home);
    let url = server.url.clone();
    let agent_token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    let env = [("A2APP_TOKEN", agent_token.as_str())];
    let list = home.run_with(&["--json", "kanban", "create", "lists", "name=To Do"], &env, None).expect(0).json();
    let list_id = list["record"]["id"].as_str().unwrap().to_owned();
    home.run_with(&["kanban", "create", "cards", "title=First", &format!("list={list_id}")], &env, None).expect(0);

    // Asked, waiting; a person approves; the ask ends with the active grant.
    let asking =
        start(&home, &["--json", "--agent", "grant-test", "kanban", "grant", "ask", "--scope", "data:cards:read"]);
    let id = pending_id(&home, &url);
    assert_eq!(held(&home)[&url]["status"], "pending", "kept before the decision");
    let approved = person(&url, &id, "approve");
    let asked = finish(asking).expect(0);
    let asked_json = asked.json();
    let grant = &asked_json["grant"];
    assert_eq!((grant["id"].as_str(), grant["status"].as_str()), (Some(id.as_str()), Some("active")));
    assert_eq!(grant["scopes"], json!(["data:cards:read"]));
    assert_eq!(grant["agent"], "grant-test");
    assert_eq!(grant["actsFor"], "owner");
    assert_eq!(grant["fingerprint"], approved["fingerprint"]);
    assert_eq!(asked_json["inUse"], true);
    let notes = asked.err();
    assert!(notes.contains(&format!("a person approves it at {url}/_/")), "{notes}");
    assert!(notes.contains(&format!("key fingerprint: {}", grant["fingerprint"].as_str().unwrap())), "{notes}");
    let stored = &held(&home)[&url];
    assert_eq!((stored["appId"].as_str(), stored["status"].as_str()), (Some("kanban"), Some("active")));
    assert_eq!(held(&home).as_object().unwrap().len(), 1);

    // Every call acts with the grant, not the local app's agent token.
    let who = home.run(&["--json", "kanban", "whoami"]).expect(0).json();
    assert_eq!(who["whoami"]["kind"], format!("grant:{id}"));
    assert_eq!(who["whoami"]["scopes"], json!(["data:cards:read"]));
    assert_eq!(who["credential"], json!({"kind": "grant", "id": id}));
    let cards = home.run(&["--json", "kanban", "cards"]).expect(0).json();
    assert_eq!(cards["items"].as_array().unwrap().len(), 1, "{cards}");
    assert_eq!(cards["items"][0]["title"], "First");
    let token = held(&home)[&url]["token"]["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("a2g_"));
    let printed = format!("{}{}", home.run(&["kanban", "cards"]).expect(0).out(), asked.out());
    assert!(!printed.contains(&token), "a token never reaches stdout");

    // Outside its scopes: refused by the app, nothing written.
    let refused =
        home.run(&["--json", "kanban", "create", "cards", "title=Second", &format!("list:=\"{list_id}\"")]).expect(2);
    let error = &refused.json()["error"];
    assert_eq!(error["code"], "insufficient_scope");
    assert_eq!(error["scope"], "data:cards:write");
    assert_eq!(error["grant"], id.as_str());
    assert_eq!(count(&url, "cards"), 1);
    // An explicit agent token comes first, as before grants.
    let with_env = home.run_with(&["--json", "kanban", "whoami"], &env, None).expect(0).json();
    assert_eq!(
        (with_env["whoami"]["kind"].as_str(), with_env["credential"]["kind"].as_str()),
        (Some("agent"), Some("env"))
    );
    home.run_with(&["kanban", "create", "cards", "title=Second", &format!("list={list_id}")], &env, None).expect(0);
    assert_eq!(count(&url, "cards"), 2);

    // A token the app refuses is traded for a new one and the call repeated once;
    // so is one with less than a minute left.
    let mut file = held(&home);
    file[&url]["token"]["token"] = json!("a2g_not_a_token_the_app_knows");
    write_private(&home.config_dir().join("grants.json"), &file.to_string());
    assert_eq!(home.run(&["--json", "kanban", "cards"]).expect(0).json()["items"].as_array().unwrap().len(), 2);
    let renewed = held(&home)[&url]["token"].clone();
    assert!(renewed["token"].as_str().unwrap().starts_with("a2g_"));
    assert_ne!(renewed["token"], "a2g_not_a_token_the_app_knows");
    let mut file = held(&home);
    file[&url]["token"]["expires"] = json!(a2app_cli::unix_now() + 30);
    write_private(&home.config_dir().join("grants.json"), &file.to_string());
    home.run(&["kanban", "cards"]).expect(0);
    let traded = held(&home)[&url]["token"].clone();
    assert_ne!(traded["token"], renewed["token"]);
    assert!(traded["expires"].as_i64().unwrap() >= a2app_cli::unix_now() + 800);

    // The person revokes it: the next call is refused, never made with less.
    person(&url, &id, "revoke");
    let gone = home.run(&["--json", "kanban", "cards"]).expect(2).json();
    assert_eq!(gone["error"]["code"], "unauthorized");
    assert_eq!(gone["error"]["grant"], id.as_str());
    let status = home.run(&["--json", "kanban", "grant"]).expect(2).json();
    assert_eq!(
        (status["error"]["code"].as_str(), status["error"]["status"].as_str()),
        (Some("grant_revoked"), Some("revoked"))
    );
    assert_eq!(held(&home), json!({}), "a closed grant is forgotten");
    assert_eq!(home.run(&["--json", "kanban", "whoami"]).expect(0).json()["credential"]["kind"], "localApp");
}

#[test]
fn grant_revoke_ends_it_at_the_app_with_its_own_token_and_the_key_stays() {
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let url = server.url.clone();
    let first = home.run(&["--json", "kanban", "grant", "ask", "data:cards:read", "--no-wait"]).expect(0).json();
    let id = first["grant"]["id"].as_str().unwrap().to_owned();
    assert_eq!(first["grant"]["status"], "pending");
    assert_eq!(first["approveAt"], format!("{url}/_/"));
    // Not used while pending.
    assert_eq!(home.run(&["--json", "kanban", "whoami"]).expect(0).json()["credential"]["kind"], "localApp");
    let status = home.run(&["--json", "kanban", "grant"]).expect(0).json();
    assert_eq!(status["grant"]["status"], "pending");

    // Approved meanwhile: `grant` takes it up.
    person(&url, &id, "approve");
    let status = home.run(&["--json", "kanban", "grant"]).expect(0).json();
    assert_eq!((status["grant"]["status"].as_str(), status["inUse"].as_bool()), (Some("active"), Some(true)));
    home.run(&["kanban", "cards"]).expect(1);
    let token = held(&home)[&url]["token"]["token"].as_str().unwrap().to_owned();
    let (ok, _) = http("GET", &format!("{url}/api/collections/cards/records"), None, Some(&token));
    assert_eq!(ok, 200);
    let again = home.run(&["--json", "kanban", "grant", "ask", "data:lists:read"]).expect(2).json();
    assert_eq!(again["error"]["code"], "grant_held");

    let revoked = home.run(&["--json", "kanban", "grant", "revoke"]).expect(0).json();
    assert_eq!((revoked["revoked"].as_bool(), revoked["forgotten"].as_bool()), (Some(true), Some(true)));
    assert_eq!(revoked["grant"]["status"], "revoked");
    assert_eq!(http("GET", &format!("{url}/api/_a2app/grants/{id}"), None, None).1["status"], "revoked");
    let (status, body) = http("GET", &format!("{url}/api/collections/cards/records"), None, Some(&token));
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")), "its tokens stopped at once");
    assert_eq!(held(&home), json!({}));
    assert_eq!(home.run(&["--json", "kanban", "whoami"]).expect(0).json()["credential"]["kind"], "localApp");
    home.run(&["kanban", "grant", "revoke"]).expect(1);
    home.run(&["kanban", "grant"]).expect(1);

    // One key per config directory, private, the same on every run.
    let key = home.config_dir().join("agent-key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(
            std::fs::metadata(home.config_dir().join("grants.json")).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let before = std::fs::read(&key).unwrap();
    let second = home.run(&["--json", "kanban", "grant", "ask", "op:move_card", "--no-wait"]).expect(0).json();
    assert_eq!(second["grant"]["fingerprint"], first["grant"]["fingerprint"]);
    assert_eq!(std::fs::read(&key).unwrap(), before);
    assert_ne!(second["grant"]["id"], first["grant"]["id"]);
}

#[test]
fn a_denied_an_unanswered_and_an_unknown_scope_each_end_with_their_code() {
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let url = server.url.clone();

    let asking = start(&home, &["--json", "kanban", "grant", "ask", "data:cards:write", "--wait", "60"]);
    let id = pending_id(&home, &url);
    person(&url, &id, "deny");
    let denied = finish(asking).expect(2).json();
    assert_eq!(denied["error"]["code"], "grant_denied");
    assert_eq!(denied["error"]["grant"], id.as_str());
    assert_eq!(held(&home), json!({}));

    let waited = home.run(&["--json", "kanban", "grant", "ask", "data:cards:read", "--wait", "1"]).expect(2).json();
    assert_eq!(waited["error"]["code"], "grant_pending");
    assert_eq!(waited["error"]["approveAt"], format!("{url}/_/"));
    assert_eq!(held(&home)[&url]["status"], "pending", "kept, to take up later");

    let unknown =
        home.run(&["--json", "kanban", "grant", "ask", "data:nope:read", "--scope", "op:nope"]).expect(2).json();
    let codes: Vec<(&str, &str)> = unknown["error"]["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["code"].as_str().unwrap(), v["field"].as_str().unwrap()))
        .collect();
    // `--scope` comes first, then the words after `ask`.
    assert_eq!(codes, [("unknown_operation", "scopes.0"), ("unknown_entity", "scopes.1")]);
    assert_eq!(home.run(&["--json", "kanban", "grant", "ask"]).expect(2).json()["error"]["code"], "invalid_command");
}

/// The fake app for grant calls: it knows the token `a2g_fresh` only, and
/// trades a signature for it.
fn grant_app() -> Fake {
    Fake::start(|req| {
        let json = |status, body: Value| Some((status, "application/json", body.to_string()));
        match (req.method.as_str(), req.path.split('?').next().unwrap_or("")) {
            ("GET", "/api/_a2app") => Some((200, "application/json", identity("fake-kanban", "1.0"))),
            ("POST", "/api/_a2app/grants/g1234567890abcd/token") => {
                json(200, json!({"token": "a2g_fresh", "expiresIn": 900, "expires": "2026-07-30 09:30:00.000Z"}))
            }
            ("GET", "/api/_a2app/whoami") => match req.header("authorization") {
                Some("Bearer a2g_fresh") | None => json(
                    200,
                    json!({"kind": "grant:g1234567890abcd", "scopes": ["data:cards:read"], "app": "fake-kanban",
                           "authMode": "single-user", "may": {"read": true, "write": false, "operations": false}}),
                ),
                Some(_) => json(
                    401,
                    json!({"a2app": true, "ok": false, "code": "unauthorized", "status": 401,
                           "message": "the grant token is unknown, expired or revoked"}),
                ),
            },
            _ => no_route(),
        }
    })
}

#[test]
fn a_grant_call_carries_its_access_token_and_no_agent_token() {
    let home = Home::new();
    let app = grant_app();
    let dir = home.config_dir();
    std::fs::create_dir_all(&dir).unwrap();
    // The key: 32 zero bytes are "A" × 43 in base64url.
    std::fs::write(dir.join("agent-key"), format!("{}\n", "A".repeat(43))).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("agent-key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let key = a2app_client::agent_key::AgentKey::from_seed(&[0; 32]);
    let origin = app.url.clone();
    let grants = json!({origin.as_str(): {"appId": "fake-kanban", "id": "g1234567890abcd", "status": "active",
        "scopes": ["data:cards:read"], "agent": "a2app-cli", "fingerprint": key.fingerprint(),
        "token": {"token": "a2g_stale", "expires": a2app_cli::unix_now() + 600}}});
    write_private(&dir.join("grants.json"), &grants.to_string());

    // The cached token is refused: traded for a new one, the call made once more.
    let who = home.run(&["--json", &app.url, "whoami"]).expect(0).json();
    assert_eq!(who["whoami"]["kind"], "grant:g1234567890abcd");
    let reads = app.seen("GET", "/api/_a2app/whoami");
    let sent: Vec<(Option<&str>, Option<&str>)> =
        reads.iter().map(|r| (r.header("authorization"), r.header("x-lui-token"))).collect();
    assert_eq!(sent, [(Some("Bearer a2g_stale"), None), (Some("Bearer a2g_fresh"), None)]);
    let trades = app.seen("POST", "/api/_a2app/grants/g1234567890abcd/token");
    assert_eq!(trades.len(), 1);
    assert_eq!(trades[0].header("authorization"), None, "the trade carries no credential but the signature");
    let body: Value = serde_json::from_str(&trades[0].body).unwrap();
    assert_eq!(body["nonce"].as_str().unwrap().len(), 43);
    assert!((body["timestamp"].as_i64().unwrap() - a2app_cli::unix_now()).abs() < 60);
    assert_eq!(body["signature"].as_str().unwrap().len(), 86, "64 bytes, base64url");

    // Kept for the next run: no second trade.
    home.run(&["--json", &app.url, "whoami"]).expect(0);
    assert_eq!(app.seen("POST", "/api/_a2app/grants/g1234567890abcd/token").len(), 1);
    assert_eq!(app.seen("GET", "/api/_a2app/whoami")[2].header("authorization"), Some("Bearer a2g_fresh"));

    // An explicit agent token comes first: sent as before, and no grant at all.
    home.run_with(&["--json", &app.url, "whoami"], &[("A2APP_TOKEN", "agent-token")], None).expect(0);
    let last = app.seen("GET", "/api/_a2app/whoami").pop().unwrap();
    assert_eq!((last.header("x-lui-token"), last.header("authorization")), (Some("agent-token"), None));
}

/// `agent-app grants` lists an app's grants from its files, and `--revoke`
/// ends one, whether or not the app is being served.
#[test]
fn the_owner_lists_and_revokes_grants_from_the_files() {
    let dir = crate::copy_app(&crate::example("kanban"));
    let out = crate::run(&["grants", dir.path().to_str().unwrap()]);
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).as_ref()), (Some(0), "no grants\n"));

    // An agent asks, in-process (as it would over HTTP).
    let id = {
        let def = a2app_core::app::load(dir.path()).unwrap();
        let (app, _) = a2app_core::App::open(def, a2app_core::app::OpenOptions::default()).unwrap();
        let app = std::sync::Arc::new(app);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let ask = json!({
            "publicKey": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
            "agent": "bot on ci",
            "scopes": ["data:cards:read", "op:export_board"],
        });
        let grant = runtime
            .block_on(a2app_core::grants::ask(&app, &a2app_core::caller::Caller::anonymous(), "", &ask))
            .unwrap_or_else(|e| panic!("{:?}", e.to_body()));
        grant.id
    };
    let out = crate::run(&["grants", dir.path().to_str().unwrap()]);
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(listed.starts_with(&format!("{id}  pending ")), "{listed}");
    assert!(listed.contains("  bot on ci  "), "{listed}");
    assert!(listed.trim_end().ends_with("for -  from -  data:cards:read op:export_board"), "{listed}");

    let out = crate::run(&["grants", dir.path().to_str().unwrap(), "--revoke", &id]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("{id} revoked: ")));
    let out = crate::run(&["grants", dir.path().to_str().unwrap(), "--revoke", &id]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the grant is revoked already"));
    let out = crate::run(&["grants", dir.path().to_str().unwrap(), "--revoke", "abcdefghijklmno"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: cannot revoke grant abcdefghijklmno: not_found: The requested resource wasn't found.\n"
    );
    let out = crate::run(&["grants", dir.path().to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with(&format!("{id}  revoked ")));
}

/// Hardening issue, finding 2: the owner clears a flood of pending asks from
/// the files, all of them or one source's.
#[test]
fn the_owner_denies_pending_grants_in_bulk() {
    let dir = crate::copy_app(&crate::example("kanban"));
    {
        let def = a2app_core::app::load(dir.path()).unwrap();
        let (app, _) = a2app_core::App::open(def, a2app_core::app::OpenOptions::default()).unwrap();
        let app = std::sync::Arc::new(app);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let keys = [
            "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
            "iojj3XQJ8ZX9UtstPLpdcspnCb8dlBIb83SIAbQPb1w",
            "gTl3Dqh9F19Wo1Rmw0x-zMuNipG07jeiXfYPW4_Js5Q",
        ];
        for (key, source) in keys.iter().zip(["203.0.113.9", "203.0.113.9", "198.51.100.4"]) {
            let ask = json!({"publicKey": key, "agent": "flood", "scopes": ["data:cards:read"]});
            runtime
                .block_on(a2app_core::grants::ask(&app, &a2app_core::caller::Caller::anonymous(), source, &ask))
                .unwrap_or_else(|e| panic!("{:?}", e.to_body()));
        }
    }
    let path = dir.path().to_str().unwrap();
    let listed = String::from_utf8_lossy(&crate::run(&["grants", path]).stdout).into_owned();
    assert_eq!(listed.matches("from 203.0.113.9").count(), 2, "{listed}");
    let out = crate::run(&["grants", path, "--deny-pending", "--source", "203.0.113.9"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "denied 2 pending grants\n");
    let out = crate::run(&["grants", path, "--deny-pending"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "denied 1 pending grant\n");
    let listed = String::from_utf8_lossy(&crate::run(&["grants", path]).stdout).into_owned();
    assert_eq!((listed.lines().count(), listed.matches(" denied ").count()), (3, 3), "{listed}");
    // --source alone says what it needs.
    let out = crate::run(&["grants", path, "--source", "203.0.113.9"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Hardening issue, finding 9: the owner decides a call waiting for a person
/// from the files, as on the app's page.
#[test]
fn the_owner_approves_or_denies_a_waiting_call_from_the_files() {
    let dir = crate::copy_app(&crate::example("kanban"));
    let path = dir.path().to_str().unwrap();
    assert_eq!(String::from_utf8_lossy(&crate::run(&["approvals", path]).stdout), "no calls waiting\n");
    {
        let def = a2app_core::app::load(dir.path()).unwrap();
        let (app, _) = a2app_core::App::open(def, a2app_core::app::OpenOptions::default()).unwrap();
        for key in ["apv_one", "apv_two"] {
            let approval = a2app_core::store::Approval {
                key: key.into(),
                call: a2app_core::store::ApprovedCall {
                    approver: "grant:g1".into(),
                    operation: "clear_done".into(),
                    params: serde_json::Map::new(),
                },
                expires: "2999-01-01 00:00:00.000Z".into(),
                used: false,
                consent: a2app_core::store::Consent::Waiting,
                created: "2026-07-30 09:00:00.000Z".into(),
                agent: "bot on ci".into(),
            };
            app.store.issue_approval(&approval, "2026-07-30 09:00:00.000Z", 100).unwrap();
        }
    }
    let listed = String::from_utf8_lossy(&crate::run(&["approvals", path]).stdout).into_owned();
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(listed.starts_with("apv_one  clear_done  {}  by bot on ci  until 2999-01-01"), "{listed}");
    let out = crate::run(&["approvals", path, "--approve", "apv_one"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "apv_one approved: clear_done for bot on ci\n");
    let out = crate::run(&["approvals", path, "--deny", "apv_two"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "apv_two denied: clear_done for bot on ci\n");
    let out = crate::run(&["approvals", path, "--deny", "apv_two"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("decided already"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&crate::run(&["approvals", path]).stdout), "no calls waiting\n");
}
