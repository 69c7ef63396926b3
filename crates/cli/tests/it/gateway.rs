//! `a2app mcp`, the real binary, spoken to over its stdin and stdout as an MCP
//! host does, in both protocol eras, against real `agent-app serve`s.

use crate::client::{Fake, Home, describe_doc, identity, kanban, no_route, page_asks, tomorrow};
use crate::{Server, copy_app, example, free_port};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The per-request metadata of the 2026-07-28 era.
fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "it", "version": "1"},
    })
}

/// A running gateway and the lines it writes on stdout.
pub(crate) struct Gateway {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Gateway {
    pub(crate) fn start(home: &Home, args: &[&str], envs: &[(&str, &str)]) -> Gateway {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2app"));
        home.env(&mut cmd);
        cmd.arg("mcp").args(args).envs(envs.iter().copied());
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().expect("a2app mcp starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Gateway { child, stdin, lines, next_id: 1 }
    }

    /// A legacy-era gateway, past `initialize`.
    pub(crate) fn legacy(home: &Home, args: &[&str], envs: &[(&str, &str)]) -> Gateway {
        let mut gw = Gateway::start(home, args, envs);
        let init = gw.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
        );
        assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
        assert_eq!(init["result"]["serverInfo"]["name"], "a2app-gateway");
        gw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        gw
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// One request and its response (every line on stdout must be JSON-RPC).
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(30)).expect("an answer within 30 s");
            let message: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {line}"));
            assert_eq!(message["jsonrpc"], "2.0", "{line}");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// One request, answering each request the gateway sends meanwhile (an
    /// `elicitation/create`) with `reply`; returns the answer and what was asked.
    fn request_answering(&mut self, method: &str, params: Value, reply: &Value) -> (Value, Vec<Value>) {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let mut asked = Vec::new();
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(30)).expect("an answer within 30 s");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message.get("method").is_some() && message.get("id").is_some() {
                self.send(&json!({"jsonrpc": "2.0", "id": message["id"], "result": reply}));
                asked.push(message);
            } else if message["id"] == id {
                return (message, asked);
            }
        }
    }

    /// A tool call's result; asserts it is an error result exactly when `error`
    /// is, and that its text is fenced (`crate::fence::unfenced`), which it
    /// answers with the text inside the fence.
    pub(crate) fn call(&mut self, tool: &str, args: Value, error: bool) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let mut result = answer["result"].clone();
        assert_eq!(result["isError"], error, "{tool} {args}: {answer}");
        assert!(result["content"][0]["text"].as_str().is_some_and(|t| !t.is_empty()), "{answer}");
        result["content"][0]["text"] = crate::fence::unfenced(result["content"][0]["text"].as_str().unwrap()).into();
        result
    }

    pub(crate) fn ok(&mut self, tool: &str, args: Value) -> Value {
        self.call(tool, args, false)["structuredContent"].clone()
    }

    /// A refusal's error object (code, message, fix, …).
    pub(crate) fn refused(&mut self, tool: &str, args: Value) -> Value {
        let result = self.call(tool, args, true);
        let error = result["structuredContent"].clone();
        assert!(error["fix"].as_str().is_some_and(|f| !f.is_empty()), "every refusal says what to do: {error}");
        error
    }

    fn count(&mut self, entity: &str) -> u64 {
        self.ok("query", json!({"app": "kanban", "entity": entity, "perPage": 1}))["totalItems"].as_u64().unwrap()
    }
}

impl Gateway {
    /// Sends one line exactly as given (numbers JSON values cannot hold) and
    /// returns the answer with id `id`.
    fn raw(&mut self, id: u64, line: &str) -> Value {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(30)).expect("an answer within 30 s");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }
}

/// Hardening issue, finding 3, through the gateway: rmcp parses the host's
/// call into doubles before a tool sees it, so the gateway reads the numbers
/// off stdin and refuses one no app would keep, by field, sending nothing.
#[test]
fn a_number_no_app_would_keep_is_refused_by_the_gateway_before_sending() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    let mut gw = Gateway::legacy(&home, &[], &[]);
    gw.ok("create", json!({"app": "kanban", "entity": "lists", "record": {"name": "To Do"}}));
    let before = gw.count("cards");
    let line = r#"{"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": {"name": "create", "arguments":
        {"app": "kanban", "entity": "cards", "record": {"title": "x", "list": "To Do", "estimate": 18446744073709551617}}}}"#
        .replace('\n', " ");
    let answer = gw.raw(900, &line);
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let error = &result["structuredContent"];
    assert_eq!((error["code"].as_str(), error["field"].as_str()), (Some("out_of_range"), Some("estimate")), "{error}");
    assert_eq!(gw.count("cards"), before, "nothing reached the app");
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_tool_surface_is_each_apps_own_with_an_app_argument() {
    let home = Home::new();
    let mut gw = Gateway::legacy(&home, &[], &[]);
    let tools = gw.request("tools/list", json!({}))["result"]["tools"].clone();
    let names: Vec<&str> = tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "apps",
            "search_apps",
            "describe",
            "query",
            "get",
            "create",
            "update",
            "delete",
            "run_operation",
            "job_status",
            "check_claims",
            "whoami",
            "requests",
            "claim_request",
            "answer_request"
        ]
    );
    for tool in tools.as_array().unwrap().iter().skip(2) {
        let schema = &tool["inputSchema"];
        assert_eq!(schema["required"][0], "app", "{tool}");
        assert_eq!(schema["properties"].as_object().unwrap().keys().next().unwrap(), "app", "{tool}");
        assert_eq!(schema["additionalProperties"], false, "{tool}");
    }
    let create = &tools[5];
    assert_eq!(create["inputSchema"]["required"], json!(["app", "entity", "record"]));
    assert!(create["description"].as_str().unwrap().contains("by its label"));
    assert_eq!(tools[7]["annotations"]["destructiveHint"], true, "delete");
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true, "apps");
    assert_eq!(tools[1]["annotations"]["readOnlyHint"], true, "search_apps");
    assert_eq!(tools[1]["inputSchema"]["required"], json!(["query"]));

    // No app is served yet: apps says how one joins; any name is refused.
    let apps = gw.call("apps", json!({}), false);
    assert_eq!(apps["structuredContent"], json!({"apps": []}));
    assert!(apps["content"][0]["text"].as_str().unwrap().contains("agent-app serve"));
    let unknown = gw.refused("describe", json!({"app": "kanban"}));
    assert_eq!(unknown["code"], "unknown_app");
    assert_eq!(unknown["apps"], json!([]));

    // Not a tool, and arguments of the wrong type.
    let nope = gw.request("tools/call", json!({"name": "drop_tables", "arguments": {}}));
    assert_eq!(nope["error"]["code"], -32602);
    let bad = gw.refused("query", json!({"app": 7}));
    assert_eq!((bad["code"].as_str(), bad["field"].as_str()), (Some("invalid_param"), Some("app")));
}

/// What a host pays in context for the gateway does not grow with the apps it
/// drives: one fixed `tools/list`, 11,223 bytes today and held under 11,300
/// (about 2,800 tokens at the usual 4 bytes a token), where every app served
/// on its own adds its own list of about 5,900 bytes.
#[test]
fn the_tool_list_costs_the_same_for_any_number_of_apps() {
    let home = Home::new();
    let size = |home: &Home| {
        let mut gw = Gateway::legacy(home, &[], &[]);
        let answer = gw.request("tools/list", json!({}));
        assert_eq!(gw.ok("apps", json!({}))["apps"].as_array().map(Vec::len).unwrap_or(0), gw_apps(home));
        answer.to_string().len()
    };
    let none = size(&home);
    let (_one, _s1) = kanban(&home);
    let fixture = copy_app(&example("kanban"));
    let toml = std::fs::read_to_string(fixture.path().join("app.toml"))
        .unwrap()
        .replace("id = \"kanban\"", "id = \"kanban2\"");
    std::fs::write(fixture.path().join("app.toml"), toml).unwrap();
    let _s2 = home.serve(fixture.path(), free_port());
    let two = size(&home);
    assert_eq!(none, two, "the same list with no app and with two");
    // The queue's three tools take about 1,900 of these bytes, search_apps
    // (the App Index, issue 45) about 500, check_claims (issue 42) about 690.
    assert!(two < 11_300, "{two} bytes");
}

/// How many apps this home's registry holds.
fn gw_apps(home: &Home) -> usize {
    let text = std::fs::read_to_string(home.config_dir().join("apps.json")).unwrap_or_default();
    serde_json::from_str::<Value>(&text).ok().and_then(|v| v["apps"].as_object().map(|m| m.len())).unwrap_or(0)
}

/// A write whose answer is lost is retried with its key, then reported with
/// the key to repeat it with, as a tool call can.
#[test]
fn a_write_that_never_gets_an_answer_names_the_key_to_repeat() {
    let home = Home::new();
    let app = crate::client::silent_writes_app();
    let mut gw = Gateway::legacy(&home, &[&app.url], &[("A2APP_TOKEN", "t")]);
    let lost = gw.refused(
        "create",
        json!({"app": app.url, "entity": "lists", "record": {"name": "Inbox"}, "idempotencyKey": "k-lost"}),
    );
    assert_eq!((lost["code"].as_str(), lost["idempotencyKey"].as_str()), (Some("outcome_unknown"), Some("k-lost")));
    assert!(lost["fix"].as_str().unwrap().starts_with("repeat the same call with idempotencyKey"), "{lost}");
    let calls = app.seen("POST", "/api/collections/lists/records");
    assert_eq!(calls.len(), 3, "the first attempt and two retries");
    assert!(calls.iter().all(|c| c.header("idempotency-key") == Some("k-lost")));
}

#[test]
fn a_host_that_closes_stdin_ends_the_gateway_quietly() {
    let home = Home::new();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2app"));
    home.env(&mut cmd);
    let out = cmd.arg("mcp").stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
}

#[test]
fn writes_through_the_gateway_are_coerced_guarded_and_receipted() {
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let tomorrow = tomorrow(&home, "kanban");
    let mut gw = Gateway::legacy(&home, &[], &[]);

    let apps = gw.ok("apps", json!({}));
    assert_eq!(
        apps,
        json!({"apps": [{"app": "kanban", "local": true, "id": "kanban", "name": "Kanban Board", "url": server.url, "status": "running"}]})
    );
    let part = gw.ok("describe", json!({"app": "kanban", "path": "cards/fields/title"}));
    assert_eq!(part["type"], "string");
    let whoami = gw.ok("whoami", json!({"app": "kanban"}));
    assert_eq!((whoami["kind"].as_str(), whoami["agent"].as_str()), (Some("agent"), Some("a2app-gateway")));

    // A list, then a card given its list by label and its date as a word.
    let list = gw.call("create", json!({"app": "kanban", "entity": "lists", "record": {"name": "To Do"}}), false);
    assert_eq!(list["content"][0]["text"], "Added \"To Do\" to lists");
    let list_id = list["structuredContent"]["id"].as_str().unwrap().to_owned();
    let card = gw.call(
        "create",
        json!({"app": "kanban", "entity": "cards", "record": {"title": "Eat chicken", "list": "To Do", "due_date": "tomorrow"}}),
        false,
    );
    let text = card["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("Added \"Eat chicken\" to To Do"), "{text}");
    assert!(
        text.contains(&format!("Read as: due_date: tomorrow → {tomorrow}; list: \"To Do\" → {list_id}.")),
        "{text}"
    );
    let card = card["structuredContent"].clone();
    assert_eq!(card["list"], list_id.as_str());
    assert_eq!(card["_receipt"]["action"], "create");
    assert_eq!(card["_receipt"]["agent"], "a2app-gateway");
    let card_id = card["id"].as_str().unwrap().to_owned();
    // Read back the way a person would, over the contract.
    let shown = home.run(&["--json", "kanban", "cards", &card_id]).expect(0).json();
    assert_eq!(shown["record"]["due_date"], format!("{tomorrow} 00:00:00.000Z"));

    // What the client can tell before sending is refused at once, all of it.
    let early =
        gw.refused("create", json!({"app": "kanban", "entity": "cards", "record": {"titel": "x", "list": "To Do"}}));
    let codes: Vec<&str> =
        early["violations"].as_array().unwrap().iter().map(|v| v["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["unknown_field", "required_field"]);
    // The rest is the app's guard's, every violation in one answer.
    let guarded = gw.refused(
        "create",
        json!({"app": "kanban", "entity": "cards", "record": {"title": "x", "list": list_id, "points": 500, "priority": "High"}}),
    );
    let mut found: Vec<(&str, &str)> = guarded["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["field"].as_str().unwrap(), v["code"].as_str().unwrap()))
        .collect();
    found.sort();
    assert_eq!(found, [("points", "out_of_range"), ("priority", "invalid_enum")]);
    assert_eq!(gw.count("cards"), 1, "nothing refused was written");

    // A label that is not exactly one record writes nothing.
    gw.ok("create", json!({"app": "kanban", "entity": "lists", "record": {"name": "To Do"}}));
    let ambiguous =
        gw.refused("create", json!({"app": "kanban", "entity": "cards", "record": {"title": "y", "list": "To Do"}}));
    assert_eq!((ambiguous["code"].as_str(), ambiguous["field"].as_str()), (Some("invalid_ref"), Some("list")));
    assert_eq!(ambiguous["candidates"].as_array().unwrap().len(), 2);
    assert_eq!(gw.count("cards"), 1);

    // A repeated Idempotency-Key writes once.
    let args = json!({"app": "kanban", "entity": "lists", "record": {"name": "Once"}, "idempotencyKey": "gw-once"});
    let first = gw.ok("create", args.clone());
    let again = gw.refused("create", args);
    assert_eq!((again["code"].as_str(), again["id"].as_str()), (Some("duplicate_request"), first["id"].as_str()));
    assert_eq!(gw.count("lists"), 3);

    // An update against a stale read is refused; a fresh one applies.
    let stale = gw.refused(
        "update",
        json!({"app": "kanban", "entity": "cards", "id": card_id, "record": {"points": 3}, "ifMatch": "2000-01-01 00:00:00.000Z"}),
    );
    assert_eq!(stale["code"], "version_conflict");
    let updated = gw.ok(
        "update",
        json!({"app": "kanban", "entity": "cards", "id": card_id, "record": {"points": 3}, "ifMatch": card["updated"]}),
    );
    assert_eq!(updated["points"], 3);

    // Operations: a plain one; a destructive one only with the approval key; a job.
    let done = gw.ok("run_operation", json!({"app": "kanban", "name": "complete_card", "params": {"card": card_id}}));
    assert_eq!(done["receipts"][0]["action"], "update");
    let ask = gw.refused("run_operation", json!({"app": "kanban", "name": "clear_done"}));
    assert_eq!(ask["code"], "approval_required");
    assert!(ask["fix"].as_str().unwrap().contains("after they confirm"), "{ask}");
    let approval = ask["approvalKey"].as_str().unwrap().to_owned();
    assert_eq!(gw.count("cards"), 1, "nothing runs before approval");
    let cleared =
        gw.call("run_operation", json!({"app": "kanban", "name": "clear_done", "approvalKey": approval}), false);
    assert_eq!(cleared["structuredContent"]["receipts"][0]["action"], "delete");
    assert_eq!(gw.count("cards"), 0);
    let started = gw.call("run_operation", json!({"app": "kanban", "name": "export_board"}), false);
    assert!(started["content"][0]["text"].as_str().unwrap().starts_with("Started job"));
    let job_id = started["structuredContent"]["jobId"].as_str().unwrap().to_owned();
    let mut state = String::new();
    for _ in 0..200 {
        state = gw.ok("job_status", json!({"app": "kanban", "jobId": job_id}))["state"].as_str().unwrap().to_owned();
        if state != "queued" && state != "running" {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(state, "succeeded");

    // A delete against a stale read removes nothing; one without a version
    // answers with the system's receipt.
    let stale = gw.refused(
        "delete",
        json!({"app": "kanban", "entity": "lists", "id": list_id, "ifMatch": "2000-01-01 00:00:00.000Z"}),
    );
    assert_eq!(stale["code"], "version_conflict");
    assert_eq!(gw.count("lists"), 3);
    let gone = gw.call("delete", json!({"app": "kanban", "entity": "lists", "id": list_id}), false);
    assert_eq!(gone["structuredContent"]["_receipt"]["action"], "delete");
    assert_eq!(gone["structuredContent"]["_receipt"]["id"], list_id.as_str());
    assert_eq!(gw.count("lists"), 2);
    let missing = gw.refused("get", json!({"app": "kanban", "entity": "lists", "id": list_id}));
    assert_eq!(missing["code"], "not_found");
    assert_eq!(missing["fix"], "check the id: query the entity to see which records exist");
    // The app's refusals get fixes an agent can act on with tools, not shell commands.
    let nope = gw.refused("query", json!({"app": "kanban", "entity": "nope"}));
    assert_eq!(
        (nope["code"].as_str(), nope["fix"].as_str()),
        (Some("unknown_entity"), Some("call describe with this app to see what exists"))
    );
    let early = gw.refused("create", json!({"app": "kanban", "entity": "cards", "record": {"titel": "x"}}));
    assert!(early["fix"].as_str().unwrap().starts_with("did you mean title?"), "the client's own fix stays: {early}");

    // Only the apps in reach: a URL, even this app's own, is refused unless the gateway was started with it.
    let url = gw.refused("query", json!({"app": server.url, "entity": "cards"}));
    assert_eq!((url["code"].as_str(), url["apps"].clone()), (Some("unknown_app"), json!(["kanban"])));
}

#[test]
fn the_2026_era_is_served_statelessly_over_stdio() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    let mut gw = Gateway::start(&home, &[], &[]);
    let discover = gw.request("server/discover", json!({"_meta": modern_meta()}));
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    assert!(discover["result"]["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));
    assert_eq!(discover["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "a2app-gateway");
    let tools = gw.request("tools/list", json!({"_meta": modern_meta()}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 15, "{tools}");
    let made = gw.request(
        "tools/call",
        json!({"name": "create", "arguments": {"app": "kanban", "entity": "lists", "record": {"name": "Modern"}}, "_meta": modern_meta()}),
    );
    let text = crate::fence::unfenced(made["result"]["content"][0]["text"].as_str().unwrap());
    assert_eq!(text, "Added \"Modern\" to lists", "{made}");
    let lists = home.run(&["--json", "kanban", "lists"]).expect(0).json();
    assert_eq!(lists["items"][0]["name"], "Modern");
    // Without the era's metadata and without initialize: refused, not guessed.
    let bare = gw.request("tools/list", json!({}));
    assert_eq!(bare["error"]["code"], -32602, "{bare}");
}

#[test]
fn started_with_targets_it_drives_exactly_those() {
    let dir = copy_app(&example("kanban"));
    let server = Server::start(dir.path(), free_port(), &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    // A person without the app in their registry, who gives its URL and token.
    let home = Home::new();

    let mut gw = Gateway::legacy(&home, &[&server.url], &[("A2APP_TOKEN", &token)]);
    let apps = gw.ok("apps", json!({}));
    assert_eq!(apps["apps"][0]["app"], server.url.as_str());
    assert_eq!(apps["apps"][0]["local"], false);
    assert_eq!(apps["apps"][0]["status"], "running");
    gw.ok("create", json!({"app": server.url, "entity": "lists", "record": {"name": "Remote"}}));
    assert_eq!(gw.refused("describe", json!({"app": "kanban"}))["code"], "unknown_app");
    drop(gw);

    // With two targets the one-run token could belong to either: it is sent to neither.
    let mut gw = Gateway::legacy(&home, &[&server.url, "elsewhere"], &[("A2APP_TOKEN", &token)]);
    let refused = gw.refused("create", json!({"app": server.url, "entity": "lists", "record": {"name": "No"}}));
    assert_eq!(refused["code"], "unauthorized");
    assert!(refused["fix"].as_str().unwrap().contains("a2app URL login"), "{refused}");
    let apps = gw.ok("apps", json!({}));
    let status: Vec<&str> = apps["apps"].as_array().unwrap().iter().map(|a| a["status"].as_str().unwrap()).collect();
    assert_eq!(status, ["running", "unknown_app"]);

    // An app that stopped is reported as such, not as an error of the gateway.
    let url = server.url.clone();
    drop(server);
    let apps = gw.ok("apps", json!({}));
    assert_eq!(apps["apps"][0]["status"], "unreachable");
    let down = gw.refused("query", json!({"app": url, "entity": "lists"}));
    assert_eq!(down["code"], "unreachable");
}

#[test]
fn a_remote_app_joins_once_a_person_connects_it() {
    let dir = copy_app(&example("kanban"));
    let server = Server::start(dir.path(), free_port(), &[]);
    let token = std::fs::read_to_string(dir.path().join(".agent-token")).unwrap().trim().to_owned();
    // Not in this person's registry: a remote app, as far as their gateway knows.
    let home = Home::new();
    let mut gw = Gateway::legacy(&home, &[], &[]);
    assert_eq!(gw.ok("apps", json!({})), json!({"apps": []}));
    assert_eq!(gw.refused("query", json!({"app": server.url, "entity": "lists"}))["code"], "unknown_app");

    // Connecting it is the person's act, in a shell; the running gateway sees it at once.
    home.run_with(&[&server.url, "login"], &[], Some(&format!("{token}\n"))).expect(0);
    let apps = gw.ok("apps", json!({}));
    assert_eq!(
        apps,
        json!({"apps": [{"app": server.url, "local": false, "id": "kanban", "name": "Kanban Board", "url": server.url, "status": "running"}]})
    );
    let made =
        gw.ok("create", json!({"app": format!("{}/", server.url), "entity": "lists", "record": {"name": "Remote"}}));
    assert_eq!(made["_receipt"]["caller"], "agent", "written with the stored token");

    // Disconnecting takes it away again.
    home.run(&[&server.url, "logout"]).expect(0);
    assert_eq!(gw.refused("whoami", json!({"app": server.url}))["code"], "unknown_app");
}

/// Two done cards, ready for `clear_done`.
fn two_done_cards(gw: &mut Gateway) {
    let list = gw.ok("create", json!({"app": "kanban", "entity": "lists", "record": {"name": "Done"}}));
    for title in ["a", "b"] {
        gw.ok(
            "create",
            json!({"app": "kanban", "entity": "cards", "record": {"title": title, "list": list["id"], "done": true}}),
        );
    }
}

#[test]
fn a_legacy_host_that_can_ask_gets_the_persons_approval_within_the_call() {
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let mut gw = Gateway::start(&home, &[], &[]);
    let init = gw.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}}, "clientInfo": {"name": "it", "version": "1"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    gw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    two_done_cards(&mut gw);
    let run = json!({"name": "run_operation", "arguments": {"app": "kanban", "name": "clear_done"}});

    // Declined, dismissed, or accepted with the box unticked: nothing runs.
    for reply in [
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        json!({"action": "accept", "content": {"approve": false}}),
    ] {
        let (answer, asked) = gw.request_answering("tools/call", run.clone(), &reply);
        assert_eq!(asked.len(), 1, "{answer}");
        assert_eq!(asked[0]["method"], "elicitation/create");
        let message = asked[0]["params"]["message"].as_str().unwrap();
        assert_eq!(
            message,
            format!(
                "An agent asks to run the destructive operation \"clear_done\" on Kanban Board ({}). Delete every card marked done. Cannot be undone. Tick \"Run it\" to approve; anything else runs nothing.",
                server.url
            )
        );
        assert_eq!(asked[0]["params"]["requestedSchema"]["required"], json!(["approve"]));
        let result = &answer["result"];
        assert_eq!(result["isError"], true, "{answer}");
        assert_eq!(result["structuredContent"]["code"], "declined");
        assert!(!answer.to_string().contains("approvalKey"), "the agent never sees the key: {answer}");
        assert_eq!(gw.count("cards"), 2);
    }

    // Approved by the person: it runs, and the answer is the app's receipts.
    let (answer, asked) =
        gw.request_answering("tools/call", run, &json!({"action": "accept", "content": {"approve": true}}));
    assert_eq!(asked.len(), 1);
    let result = &answer["result"];
    assert_eq!(result["isError"], false, "{answer}");
    let actions: Vec<&str> = result["structuredContent"]["receipts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["delete", "delete"]);
    assert!(crate::fence::unfenced(result["content"][0]["text"].as_str().unwrap()).starts_with("Deleted"), "{answer}");
    assert_eq!(gw.count("cards"), 0);
}

#[test]
fn a_2026_host_that_can_ask_gets_an_input_required_question_and_repeats_the_call() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    let mut gw = Gateway::start(&home, &[], &[]);
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}}});
    let call = |args: Value, extra: Value| {
        let mut params = json!({"name": "run_operation", "arguments": args, "_meta": meta});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        params
    };
    let create = |record: Value| json!({"name": "create", "arguments": {"app": "kanban", "entity": "lists", "record": record}, "_meta": meta});
    let made = gw.request("tools/call", create(json!({"name": "Done"})));
    let list = made["result"]["structuredContent"]["id"].clone();
    for title in ["a", "b"] {
        let mut card = create(json!({"title": title, "list": list, "done": true}));
        card["arguments"]["entity"] = json!("cards");
        assert_eq!(gw.request("tools/call", card)["result"]["isError"], false);
    }
    let args = json!({"app": "kanban", "name": "clear_done"});
    let ask = |gw: &mut Gateway| {
        let answer = gw.request("tools/call", call(args.clone(), json!({})));
        assert_eq!(answer["result"]["resultType"], "input_required", "{answer}");
        let question = &answer["result"]["inputRequests"]["approval"];
        assert_eq!(question["method"], "elicitation/create", "{answer}");
        assert!(question["params"]["message"].as_str().unwrap().contains("\"clear_done\""));
        assert!(!answer.to_string().contains("approvalKey"), "{answer}");
        answer["result"]["requestState"].as_str().unwrap().to_owned()
    };
    let accept = json!({"approval": {"action": "accept", "content": {"approve": true}}});

    // A no runs nothing; its state is spent.
    let state = ask(&mut gw);
    let no = gw.request(
        "tools/call",
        call(args.clone(), json!({"requestState": state, "inputResponses": {"approval": {"action": "decline"}}})),
    );
    assert_eq!(no["result"]["structuredContent"]["code"], "declined", "{no}");
    let again = gw.request("tools/call", call(args.clone(), json!({"requestState": state, "inputResponses": accept})));
    assert_eq!(again["result"]["structuredContent"]["code"], "invalid_param", "{again}");
    assert_eq!(again["result"]["structuredContent"]["field"], "requestState");
    // A repeat that changed the call does not run either.
    let state = ask(&mut gw);
    let swapped = gw.request(
        "tools/call",
        call(
            json!({"app": "kanban", "name": "export_board"}),
            json!({"requestState": state, "inputResponses": accept}),
        ),
    );
    assert_eq!(swapped["result"]["structuredContent"]["code"], "invalid_param", "{swapped}");
    let count = gw.request(
        "tools/call",
        json!({"name": "query", "arguments": {"app": "kanban", "entity": "cards"}, "_meta": meta}),
    );
    assert_eq!(count["result"]["structuredContent"]["totalItems"], 2);

    // A yes runs it, once.
    let state = ask(&mut gw);
    let yes = gw.request("tools/call", call(args.clone(), json!({"requestState": state, "inputResponses": accept})));
    assert_eq!(yes["result"]["isError"], false, "{yes}");
    assert_eq!(yes["result"]["structuredContent"]["receipts"].as_array().unwrap().len(), 2);
    let count = gw.request(
        "tools/call",
        json!({"name": "query", "arguments": {"app": "kanban", "entity": "cards"}, "_meta": meta}),
    );
    assert_eq!(count["result"]["structuredContent"]["totalItems"], 0);
}

/// A legacy gateway whose host declared form elicitation.
fn asking_host(home: &Home, args: &[&str], envs: &[(&str, &str)]) -> Gateway {
    host_declaring(home, args, envs, json!({"elicitation": {}}))
}

/// A legacy host declaring `capabilities` in initialize.
fn host_declaring(home: &Home, args: &[&str], envs: &[(&str, &str)], capabilities: Value) -> Gateway {
    let mut gw = Gateway::start(home, args, envs);
    let init = gw.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "it", "version": "1"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    gw.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    gw
}

#[test]
fn an_approval_key_the_agent_brings_never_replaces_asking_the_person() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    let mut gw = asking_host(&home, &[], &[]);
    two_done_cards(&mut gw);
    for key in ["apv_made_up", "", "é", "apv_\u{0}"] {
        let call =
            json!({"name": "run_operation", "arguments": {"app": "kanban", "name": "clear_done", "approvalKey": key}});
        let (answer, asked) = gw.request_answering("tools/call", call, &json!({"action": "decline"}));
        assert_eq!(asked.len(), 1, "the person is asked whatever key the agent brings: {answer}");
        assert_eq!(answer["result"]["structuredContent"]["code"], "declined", "{answer}");
        assert!(!answer.to_string().contains("apv_"), "no key reaches the agent: {answer}");
        assert!(!answer.to_string().contains("approvalKey"), "{answer}");
        assert_eq!(gw.count("cards"), 2);
    }
    drop(gw);

    // A host that cannot ask passes the agent's key on; one no header can carry is refused before sending.
    let mut gw = Gateway::legacy(&home, &[], &[]);
    let bad = gw.refused("run_operation", json!({"app": "kanban", "name": "clear_done", "approvalKey": "é"}));
    assert_eq!((bad["code"].as_str(), bad["field"].as_str()), (Some("invalid_param"), Some("X-A2App-Approval")));
    let key = gw.refused(
        "create",
        json!({"app": "kanban", "entity": "lists", "record": {"name": "x"}, "idempotencyKey": "ключ"}),
    );
    assert_eq!((key["code"].as_str(), key["field"].as_str()), (Some("invalid_param"), Some("Idempotency-Key")));
    assert_eq!(gw.count("cards"), 2);
}

#[test]
fn dot_segments_never_reach_another_route() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    let mut gw = Gateway::legacy(&home, &[], &[]);
    let calls = [
        ("describe", json!({"app": "kanban", "path": "../../collections/cards/records"})),
        ("describe", json!({"app": "kanban", "path": "cards/./.."})),
        ("get", json!({"app": "kanban", "entity": "..", "id": "x"})),
        ("get", json!({"app": "kanban", "entity": "cards", "id": ".."})),
        ("query", json!({"app": "kanban", "entity": "."})),
        ("job_status", json!({"app": "kanban", "jobId": ".."})),
        ("delete", json!({"app": "kanban", "entity": "cards", "id": ".."})),
        ("run_operation", json!({"app": "kanban", "name": ".."})),
    ];
    for (tool, args) in calls {
        let refused = gw.refused(tool, args.clone());
        // An operation is looked up in describe first: ".." names none.
        let want = if tool == "run_operation" { "unknown_operation" } else { "invalid_param" };
        assert_eq!(refused["code"], want, "{tool} {args}: {refused}");
    }
    // The shell refuses them alike.
    let run = home.run(&["--json", "kanban", "describe", "../../collections/cards/records"]).expect(2).json();
    assert_eq!(run["error"]["code"], "invalid_param");
}

/// A fake app whose destructive operation's approved run never gets an
/// answer; every request is kept.
fn lost_approval_app() -> Fake {
    Fake::start(|r| {
        let ok = |v: Value| Some((200, "application/json", v.to_string()));
        match (r.method.as_str(), r.path.as_str()) {
            ("GET", "/api/_a2app") => ok(serde_json::from_str(&identity("kanban", "1.0")).unwrap()),
            ("GET", "/api/_a2app/describe") => ok(describe_doc()),
            ("POST", "/api/ops/purge_done") if r.header("x-a2app-approval").is_some() => None,
            ("POST", "/api/ops/purge_done") => {
                // The key is bound to the params as the app read them: a default filled in.
                let body = json!({"a2app": true, "ok": false, "code": "approval_required", "status": 428,
                                  "message": "purge_done is destructive", "approvalKey": "apv_1", "operation": "purge_done",
                                  "params": {"older_than_days": 30, "keep_pinned": true}});
                Some((428, "application/json", body.to_string()))
            }
            _ => no_route(),
        }
    })
}

/// purge_done is a crud operation, whose key the app does not claim: a lost
/// answer is not tried again (it could run twice), and the agent is told to
/// check before calling again; a repeat of the whole call still carries the
/// same derived key.
#[test]
fn an_approved_run_whose_answer_is_lost_is_not_repeated_and_says_to_check() {
    let home = Home::new();
    let app = lost_approval_app();
    let mut gw = asking_host(&home, &[&app.url], &[("A2APP_TOKEN", "t")]);
    let call = json!({"name": "run_operation", "arguments": {"app": app.url, "name": "purge_done", "params": {"older_than_days": 30}, "idempotencyKey": "k-op"}});
    let yes = json!({"action": "accept", "content": {"approve": true}});
    for round in 1..=2 {
        let (answer, asked) = gw.request_answering("tools/call", call.clone(), &yes);
        assert_eq!(asked.len(), 1);
        let message = asked[0]["params"]["message"].as_str().unwrap();
        assert!(
            message.contains(r#"With {"older_than_days":30,"keep_pinned":true}."#),
            "the params the key binds: {message}"
        );
        let error = &answer["result"]["structuredContent"];
        assert_eq!((error["code"].as_str(), error.get("idempotencyKey")), (Some("outcome_unknown"), None), "{answer}");
        assert!(error["fix"].as_str().unwrap().starts_with("the operation may have run: check its effect"), "{answer}");
        let approved = app.seen("POST", "/api/ops/purge_done");
        let keys: Vec<&str> =
            approved.iter().filter_map(|r| r.header("x-a2app-approval").and(r.header("idempotency-key"))).collect();
        assert_eq!(keys, vec!["k-op.approved"; round], "one attempt a call, every call under one key");
    }
}

#[test]
fn a_2026_host_that_can_only_open_urls_is_not_asked() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    let mut gw = Gateway::start(&home, &[], &[]);
    let mut meta = modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"url": {}}});
    let answer = gw.request(
        "tools/call",
        json!({"name": "run_operation", "arguments": {"app": "kanban", "name": "clear_done"}, "_meta": meta}),
    );
    assert_eq!(answer["result"]["structuredContent"]["code"], "approval_required", "{answer}");
    assert!(answer["result"]["structuredContent"]["approvalKey"].as_str().is_some_and(|k| k.starts_with("apv_")));
}

/// The client's own codes, as the README's `--json` section lists them.
const CLIENT_CODES: &[&str] = &[
    "declined",
    "not_an_app",
    "unsupported_protocol",
    "not_running",
    "forbidden_host",
    "invalid_identity",
    "proxy_auth",
    "app_changed",
    "unknown_app",
    "invalid_address",
    "unreachable",
    "outcome_unknown",
    "unexpected_answer",
    "job_failed",
    "job_interrupted",
    "config",
];

/// Random tool calls and malformed messages from a host whose person answers
/// approval questions at random: every request gets one JSON-RPC answer,
/// every refusal a documented code and a fix, no app approval key ever
/// reaches the agent, the gateway outlives them all, and the lists it
/// acknowledged are exactly the lists stored.
#[test]
fn random_tool_calls_end_with_a_documented_code() {
    use rand::RngExt;
    use rand::seq::IndexedRandom;
    let (seed, rounds, mut rng) = crate::fuzz_run(0x00a2_a9a7u64);
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let mut gw = asking_host(&home, &[], &[]);
    let first = gw.ok("create", json!({"app": "kanban", "entity": "lists", "record": {"name": "To Do"}}));
    let mut lists = vec![first["id"].as_str().unwrap().to_owned()];
    let mut cards: Vec<String> = Vec::new();

    let tools = [
        "apps",
        "describe",
        "query",
        "get",
        "create",
        "update",
        "delete",
        "run_operation",
        "job_status",
        "whoami",
        "nope",
        "",
    ];
    let apps =
        [json!("kanban"), json!("Kanban Board"), json!(server.url), json!("nope"), json!(""), json!(3), json!(null)];
    let keys = [
        "entity",
        "id",
        "record",
        "path",
        "filter",
        "sort",
        "page",
        "perPage",
        "expand",
        "fields",
        "name",
        "params",
        "approvalKey",
        "idempotencyKey",
        "ifMatch",
        "jobId",
        "extra",
    ];
    let words = [
        "cards",
        "lists",
        "members",
        "nope",
        "To Do",
        "tomorrow",
        "next friday",
        "2026-13-40",
        "high",
        "-created",
        "title = 'x'",
        "(((",
        "list",
        "cards/fields/title",
        "operations",
        "complete_card",
        "clear_done",
        "export_board",
        "move_card",
        "k1",
        "é🦀",
        "",
        "abcdefghijklmno",
    ];
    let fields =
        ["title", "list", "due_date", "due_day", "priority", "points", "labels", "done", "meta", "name", "nope", "id"];
    // What each tool declares, from the gateway's own list: most calls keep
    // to it, so they get past the check for undeclared arguments.
    let listed = gw.request("tools/list", json!({}));
    let declared: std::collections::HashMap<String, Vec<String>> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let names = t["inputSchema"]["properties"].as_object().map(|p| p.keys().cloned().collect());
            (t["name"].as_str().unwrap().to_owned(), names.unwrap_or_default())
        })
        .collect();
    let mut ok = 0usize;
    let mut refused = std::collections::BTreeSet::new();
    for round in 0..rounds {
        let value = |rng: &mut rand::rngs::StdRng| -> Value {
            match rng.random_range(0..6) {
                0 => json!(rng.random_range(-5i64..200)),
                1 => json!(rng.random_bool(0.5)),
                2 => Value::Null,
                3 => json!([*words.choose(rng).unwrap()]),
                _ => json!(*words.choose(rng).unwrap()),
            }
        };
        // A record of one to four fields, each value right or wrong for it.
        let record = |rng: &mut rand::rngs::StdRng| -> Value {
            let mut record = serde_json::Map::new();
            for _ in 0..rng.random_range(1..5) {
                let v = match rng.random_range(0..5) {
                    0 => json!(rng.random_range(-5i64..200)),
                    1 => json!(["bug", "nope"]),
                    2 => json!(rng.random_bool(0.5)),
                    _ => json!(*words.choose(rng).unwrap()),
                };
                record.insert((*fields.choose(rng).unwrap()).to_owned(), v);
            }
            Value::Object(record)
        };
        let tool = *tools.choose(&mut rng).unwrap();
        let mut args = serde_json::Map::new();
        if rng.random_bool(0.9) {
            args.insert(
                "app".into(),
                if rng.random_bool(0.7) { json!("kanban") } else { apps.choose(&mut rng).unwrap().clone() },
            );
        }
        for _ in 0..rng.random_range(0..3) {
            let key = *keys.choose(&mut rng).unwrap();
            let v = if key == "record" { record(&mut rng) } else { value(&mut rng) };
            args.insert(key.into(), v);
        }
        // Mostly names that exist, so calls get past the first check.
        if rng.random_bool(0.8) {
            args.insert("entity".into(), json!(*["cards", "lists", "cards", "nope"].choose(&mut rng).unwrap()));
        }
        if rng.random_bool(0.6) {
            let id = if rng.random_bool(0.5) { lists.choose(&mut rng) } else { cards.choose(&mut rng) };
            args.insert("id".into(), json!(id.map_or("abcdefghijklmno", String::as_str)));
        }
        if matches!(tool, "create" | "update") && rng.random_bool(0.8) {
            let mut r = record(&mut rng);
            if rng.random_bool(0.5) {
                r["title"] = json!("t");
                r["list"] = json!("To Do");
            }
            args.insert("record".into(), r);
        }
        if tool == "job_status" && rng.random_bool(0.7) {
            args.insert("jobId".into(), json!(*["abcdefghijklmno", "nope", ""].choose(&mut rng).unwrap()));
        }
        if let Some(names) = declared.get(tool)
            && rng.random_bool(0.85)
        {
            args.retain(|key, _| names.contains(key));
        }
        if tool == "run_operation" && rng.random_bool(0.8) {
            let op = *["complete_card", "clear_done", "export_board", "move_card", "cards_in_list"]
                .choose(&mut rng)
                .unwrap();
            args.insert("name".into(), json!(op));
        }
        if tool == "create" && rng.random_bool(0.3) {
            args.insert("entity".into(), json!("lists"));
            args.insert("record".into(), json!({"name": format!("L{round}")}));
        }
        let params = match rng.random_range(0..20) {
            0 => json!({"name": tool, "arguments": false}),
            1 => json!({"arguments": args}),
            _ => json!({"name": tool, "arguments": args}),
        };
        let context = format!("seed {seed}, round {round}: {params}");
        if rng.random_range(0..30) == 0 {
            // A line that is not JSON-RPC: no answer is owed, and the session must go on.
            gw.send(&json!("not a request"));
            writeln!(gw.stdin, "{{garbage").unwrap();
        }
        let replies = [
            json!({"action": "accept", "content": {"approve": true}}),
            json!({"action": "accept", "content": {"approve": false}}),
            json!({"action": "accept"}),
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!({"nonsense": 1}),
        ];
        let reply = replies.choose(&mut rng).unwrap().clone();
        let (answer, _) = gw.request_answering("tools/call", params.clone(), &reply);
        assert!(!answer.to_string().contains("apv_"), "an approval key reached the agent: {context}: {answer}");
        if let Some(error) = answer.get("error") {
            assert!(matches!(error["code"].as_i64(), Some(-32602 | -32601)), "{context}: {answer}");
            continue;
        }
        let result = &answer["result"];
        assert!(
            result["content"][0]["text"].as_str().is_some_and(|t| !crate::fence::unfenced(t).is_empty()),
            "{context}: {answer}"
        );
        if result["isError"] == true {
            let code = result["structuredContent"]["code"].as_str().unwrap_or_default().to_owned();
            assert!(
                protocol::ErrorCode::from_name(&code).is_some() || CLIENT_CODES.contains(&code.as_str()),
                "undocumented code {code:?}: {context}: {answer}"
            );
            assert!(result["structuredContent"]["fix"].as_str().is_some_and(|f| !f.is_empty()), "{context}: {answer}");
            assert_ne!(code, "internal", "{context}: {answer}");
            refused.insert(code);
            continue;
        }
        assert_eq!(result["isError"], false, "{context}: {answer}");
        ok += 1;
        let stored = &result["structuredContent"];
        let on_lists = params["arguments"]["entity"] == "lists" && params["arguments"]["app"] != json!(null);
        match tool {
            "create" if on_lists => lists.push(stored["id"].as_str().unwrap().to_owned()),
            "create" if params["arguments"]["entity"] == "cards" => {
                cards.push(stored["id"].as_str().unwrap().to_owned())
            }
            "delete" if on_lists => lists.retain(|id| Some(id.as_str()) != params["arguments"]["id"].as_str()),
            _ => {}
        }
    }
    assert!(ok >= rounds / 10, "{ok} of {rounds} calls succeeded");
    assert!(refused.len() >= 8, "too few distinct refusals: {refused:?}");
    assert!(refused.contains("declined"), "the person was asked and said no at least once: {refused:?}");
    // The gateway still answers, and stored exactly the lists it acknowledged.
    let stored = gw.ok("query", json!({"app": "kanban", "entity": "lists", "perPage": 500}));
    let mut stored: Vec<&str> = stored["items"].as_array().unwrap().iter().map(|i| i["id"].as_str().unwrap()).collect();
    stored.sort_unstable();
    lists.sort_unstable();
    assert_eq!(stored, lists, "seed {seed}");
}

const UI: &str = "io.modelcontextprotocol/ui";

/// The tools naming a view, as `name → resourceUri`.
fn linked(list: &Value) -> Vec<(String, String)> {
    let tools = list["result"]["tools"].as_array().unwrap();
    tools
        .iter()
        .filter_map(|t| Some((t["name"].as_str()?.to_owned(), t["_meta"]["ui"]["resourceUri"].as_str()?.to_owned())))
        .collect()
}

/// The gateway serves the apps' own MCP Apps page, which asks each app's
/// describe through the host, and links it only for hosts that draw views.
#[test]
fn a_host_that_draws_views_gets_the_view_linked_from_the_record_tools() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    const VIEW: &str = "ui://a2app-gateway/view";
    let mut gw =
        host_declaring(&home, &[], &[], json!({"extensions": {UI: {"mimeTypes": ["text/html;profile=mcp-app"]}}}));
    let list = gw.request("tools/list", json!({}));
    let expected: Vec<(String, String)> =
        ["query", "get", "create", "update", "delete", "run_operation", "job_status", "show"]
            .iter()
            .map(|n| (n.to_string(), VIEW.to_owned()))
            .collect();
    assert_eq!(linked(&list), expected);

    let resources = gw.request("resources/list", json!({}));
    let listed = resources["result"]["resources"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{resources}");
    assert_eq!(listed[0]["uri"], VIEW);
    assert_eq!(listed[0]["mimeType"], "text/html;profile=mcp-app");
    let read = gw.request("resources/read", json!({"uri": VIEW}));
    let page = &read["result"]["contents"][0];
    assert_eq!(page["mimeType"], "text/html;profile=mcp-app");
    assert!(page["text"].as_str().unwrap().contains("const MODEL = {\"gateway\":true};"), "{read}");
    let other = gw.request("resources/read", json!({"uri": "ui://kanban/view"}));
    assert_eq!(other["error"]["code"], -32602, "{other}");

    // show: the app's own surfaces, checked by the app, for such hosts only.
    let show = list["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "show").unwrap();
    assert_eq!(show["inputSchema"]["required"], json!(["app"]));
    let form = json!([{"version": "v1.0", "createSurface": {"surfaceId": "ask", "dataModel": {"ok": false},
        "components": [{"id": "root", "component": "CheckBox", "label": "OK?", "value": {"path": "/ok"}}]}}]);
    let shown = gw.ok("show", json!({"app": "kanban", "messages": form}));
    assert_eq!(shown["surfaces"][0]["createSurface"]["surfaceId"], "ask");
    let set = json!([{"version": "v1.0", "updateDataModel": {"surfaceId": "ask", "path": "/ok", "value": true}}]);
    gw.ok("show", json!({"app": "kanban", "messages": set}));
    let read = gw.ok("show", json!({"app": "kanban", "surfaceId": "ask"}));
    assert_eq!(read["surfaces"][0]["createSurface"]["dataModel"], json!({"ok": true}));
    let mut bad = form.clone();
    bad[0]["createSurface"]["components"][0]["component"] = json!("Iframe");
    let refused = gw.refused("show", json!({"app": "kanban", "messages": bad}));
    assert_eq!(refused["code"], "unknown_component", "{refused}");

    // The view's describe call, as it makes it through the host.
    let described = gw.ok("describe", json!({"app": "kanban"}));
    assert_eq!(described["entities"]["cards"]["label"], "title");

    // A host that does not draw views gets the plain list.
    let mut plain = Gateway::legacy(&home, &[], &[]);
    let list = plain.request("tools/list", json!({}));
    assert!(linked(&list).is_empty());
    assert!(!list["result"]["tools"].as_array().unwrap().iter().any(|t| t["name"] == "show"));
    assert!(!list.to_string().contains("ui://"));
    let init = Gateway::start(&home, &[], &[]).request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "it", "version": "1"}}),
    );
    assert_eq!(init["result"]["capabilities"]["extensions"][UI], json!({}), "{init}");
}

#[test]
fn requests_reach_the_agent_once_the_person_consents_through_the_host() {
    let home = Home::new();
    let (_dir, server) = kanban(&home);
    let summary = page_asks(&server.url, "summarise_board", json!({"focus": "overdue"}));
    let priority = page_asks(&server.url, "suggest_priority", json!({"card": "abcdefghij12345"}));

    // A host that cannot ask: nothing is delivered, and the agent learns why.
    let mut plain = Gateway::legacy(&home, &[], &[]);
    let result = plain.call("requests", json!({"app": "kanban"}), false);
    assert_eq!(result["structuredContent"]["requests"], json!([]));
    assert_eq!(result["structuredContent"]["withheld"].as_array().unwrap().len(), 2);
    assert!(result["content"][0]["text"].as_str().unwrap().contains("`a2app kanban consent`"), "{result}");
    let refused = plain.refused("claim_request", json!({"app": "kanban", "id": summary}));
    assert_eq!(refused["code"], "not_consented");

    // A host that asks: the person declines once, and is not asked again.
    let mut asking = asking_host(&home, &[], &[]);
    let call = json!({"name": "requests", "arguments": {"app": "kanban"}});
    let (answer, asked) = asking.request_answering("tools/call", call.clone(), &json!({"action": "decline"}));
    assert_eq!(asked.len(), 2, "one question per capability: {answer}");
    // One question per capability (in the order the requests were asked,
    // which two asks within a millisecond do not fix).
    let question = asked
        .iter()
        .map(|a| a["params"]["message"].as_str().unwrap())
        .find(|m| m.contains("Suggest a priority"))
        .unwrap();
    assert!(
        question.starts_with(&format!(
            "Kanban Board ({}) asks whether it may ask your agent to: Suggest a priority for a card.",
            server.url
        )),
        "{question}"
    );
    assert!(question.contains("The agent would read: cards. It would write: nothing."), "{question}");
    assert!(asked.iter().any(|a| a["params"]["message"].as_str().unwrap().contains("to: Summarise this board.")));
    assert_eq!(asked[0]["params"]["requestedSchema"]["properties"]["approve"]["title"], "Allow");
    assert_eq!(answer["result"]["structuredContent"]["requests"], json!([]));
    let (_, asked) = asking.request_answering("tools/call", call.clone(), &json!({"action": "decline"}));
    assert!(asked.is_empty(), "a no is not asked again");
    drop(asking);

    // Allowed in a new host session: both are delivered, as data.
    let mut asking = asking_host(&home, &[], &[]);
    let yes = json!({"action": "accept", "content": {"approve": true}});
    let (answer, asked) = asking.request_answering("tools/call", call, &yes);
    assert_eq!(asked.len(), 2);
    let delivered = answer["result"]["structuredContent"]["requests"].as_array().unwrap().clone();
    let mut ids: Vec<&str> = delivered.iter().map(|r| r["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let mut want = [priority.as_str(), summary.as_str()];
    want.sort_unstable();
    assert_eq!(ids, want);
    let asked_summary = delivered.iter().find(|r| r["id"] == summary.as_str()).unwrap();
    assert_eq!(asked_summary["params"], json!({"focus": "overdue"}));

    let claimed = asking.ok("claim_request", json!({"app": "kanban", "id": summary}));
    assert_eq!(claimed["status"], "claimed");
    assert!(!claimed.to_string().contains("a2c_"), "the key stays with the gateway: {claimed}");
    let bad = asking.refused("answer_request", json!({"app": "kanban", "id": summary, "result": {"summary": 3}}));
    assert_eq!(bad["code"], "invalid_string");
    let done = asking
        .ok("answer_request", json!({"app": "kanban", "id": summary, "result": {"summary": "One card is overdue."}}));
    assert_eq!((done["status"].as_str(), &done["result"]), (Some("done"), &json!({"summary": "One card is overdue."})));
    let again = asking.refused("answer_request", json!({"app": "kanban", "id": summary, "failure": "twice"}));
    assert_eq!(again["code"], "not_claimed");
    // The shell sees the same consent: it is the person's, per app.
    let list = home.run(&["--json", "kanban", "requests"]).expect(0).json();
    assert_eq!(list["requests"][0]["id"], priority.as_str());
}

/// `check_claims` through the gateway: the message is checked against what
/// the gateway's own credential stored, and its text says what to do.
#[test]
fn a_message_is_checked_through_the_gateway() {
    let home = Home::new();
    let (_dir, _server) = kanban(&home);
    let mut gw = Gateway::legacy(&home, &[], &[]);
    gw.ok("create", json!({"app": "kanban", "entity": "lists", "record": {"name": "To Do"}}));
    gw.ok("create", json!({"app": "kanban", "entity": "cards", "record": {"title": "Fix login", "list": "To Do"}}));

    let withheld = gw.call(
        "check_claims",
        json!({"app": "kanban", "message": "I added 'Fix login' and deleted 'Old notes'."}),
        false,
    );
    assert_eq!(withheld["structuredContent"]["verdict"], "withheld", "{withheld}");
    let reasons: Vec<&str> = withheld["structuredContent"]["discrepancies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["no_write"]);
    let text = withheld["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("withheld: do not send the message.\n- "), "{text}");

    let passed = gw.ok("check_claims", json!({"app": "kanban", "message": "I added 'Fix login' to To Do."}));
    assert_eq!(passed["verdict"], "pass", "{passed}");
    assert_eq!(passed["confirmations"].as_array().map(Vec::len), Some(2), "{passed}");
    let missing = gw.refused("check_claims", json!({"app": "kanban"}));
    assert_eq!((missing["code"].as_str(), missing["field"].as_str()), (Some("invalid_param"), Some("message")));
}
