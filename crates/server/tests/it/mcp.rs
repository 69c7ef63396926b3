//! The MCP endpoint over real HTTP: both eras, the tools generated from
//! describe, the resources, and the Host/Origin/token rules of the contract.

use crate::TestApp;
use serde_json::{Value, json};

const MODERN: &str = "2026-07-28";

/// Sends one modern (2026-07-28) JSON-RPC request; `extra` headers are added
/// as given. Returns the HTTP status and the JSON body.
pub(crate) async fn rpc(t: &TestApp, extra: &[(&str, &str)], method: &str, params: Value) -> (u16, Value) {
    rpc_declaring(t, json!({}), extra, method, params).await
}

/// `rpc` from a client declaring `capabilities` in the request's `_meta`.
async fn rpc_declaring(
    t: &TestApp,
    capabilities: Value,
    extra: &[(&str, &str)],
    method: &str,
    mut params: Value,
) -> (u16, Value) {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let mut req = t
        .http
        .post(format!("{}/mcp", t.url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", method);
    if let Some(name) = params.get("name").or_else(|| params.get("uri")).and_then(Value::as_str) {
        req = req.header("mcp-name", name);
    }
    for (k, v) in extra {
        req = req.header(*k, *v);
    }
    t.send(req, Some(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))).await
}

/// Calls a tool with the agent token (as MCP hosts send it) and returns the result.
pub(crate) async fn tool(t: &TestApp, name: &str, arguments: Value) -> Value {
    let bearer = format!("Bearer {}", t.token);
    let (status, body) =
        rpc(t, &[("authorization", &bearer)], "tools/call", json!({"name": name, "arguments": arguments})).await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

pub(crate) fn names(list: &Value) -> Vec<&str> {
    list["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[tokio::test]
async fn the_compact_surface_is_listed_in_order_with_honest_annotations() {
    let t = TestApp::kanban().await;
    let (status, list) = rpc(&t, &[], "tools/list", json!({})).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(
        names(&list),
        ["describe", "query", "get", "create", "update", "delete", "run_operation", "job_status", "check_claims"]
    );
    let tools = list["result"]["tools"].as_array().unwrap();
    let hints: Vec<(bool, Option<bool>, Option<bool>)> = tools
        .iter()
        .map(|t| {
            let a = &t["annotations"];
            (a["readOnlyHint"].as_bool().unwrap(), a["destructiveHint"].as_bool(), a["idempotentHint"].as_bool())
        })
        .collect();
    assert_eq!(
        hints,
        [
            (true, None, None),
            (true, None, None),
            (true, None, None),
            (false, Some(false), Some(false)),
            (false, Some(true), Some(true)),
            (false, Some(true), Some(true)),
            // kanban's clear_done is destructive, so run_operation may be.
            (false, Some(true), Some(false)),
            (true, None, None),
            // check_claims writes nothing the app holds.
            (true, None, None),
        ]
    );
    let query = &tools[1]["inputSchema"];
    // MCP's default dialect (2020-12): naming it would cost every tool 57 bytes.
    assert_eq!(query.get("$schema"), None);
    assert_eq!(query["required"], json!(["entity"]));
    assert_eq!(query["additionalProperties"], false);
    assert_eq!(query["properties"]["perPage"]["maximum"], 1000);
    assert_eq!(list["result"]["ttlMs"], 0);
}

#[tokio::test]
async fn the_tool_list_does_not_grow_with_the_schema() {
    let kanban = TestApp::kanban().await;
    let notes = TestApp::fixture("notes").await;
    let (_, a) = rpc(&kanban, &[], "tools/list", json!({})).await;
    let (_, b) = rpc(&notes, &[], "tools/list", json!({})).await;
    // The budget: under 1,500 tokens at 4 bytes a token (5,973 bytes today;
    // `cargo run -p a2app-server --example mcp_tools_size` also counts real tokens).
    assert!(a.to_string().len() < 6_000, "{} bytes", a.to_string().len());
    // notes has no operations, so no operation tools; the rest is the same.
    let (a, b) = (a["result"]["tools"].as_array().unwrap(), b["result"]["tools"].as_array().unwrap());
    assert_eq!(b.len(), 7);
    assert_eq!(a[..6], b[..6]);
    assert_eq!(a.last(), b.last());
}

#[tokio::test]
async fn a_write_through_mcp_is_stored_receipted_and_seen_over_http() {
    let t = TestApp::kanban().await;
    let list = tool(&t, "create", json!({"entity": "lists", "record": {"name": "To Do"}})).await;
    assert_eq!(list["isError"], false, "{list}");
    assert_eq!(list["content"][0]["text"], "Added \"To Do\" to lists");
    let id = list["structuredContent"]["id"].as_str().unwrap().to_owned();
    assert_eq!(list["structuredContent"]["_receipt"]["action"], "create");

    let card = tool(
        &t,
        "create",
        json!({"entity": "cards", "record": {"title": "Eat chicken", "list": id, "due_day": "2026-07-31"}}),
    )
    .await;
    assert_eq!(card["isError"], false, "{card}");
    let card_id = card["structuredContent"]["id"].as_str().unwrap();
    let (status, over_http) = t.call("GET", &format!("/api/collections/cards/records/{card_id}"), None).await;
    assert_eq!((status, over_http["title"].as_str()), (200, Some("Eat chicken")));

    let page = tool(&t, "query", json!({"entity": "cards", "filter": "title ~ 'chicken'", "expand": "list"})).await;
    assert_eq!(page["structuredContent"]["totalItems"], 1, "{page}");
    assert_eq!(page["structuredContent"]["items"][0]["expand"]["list"]["name"], "To Do");
    let text: Value = serde_json::from_str(page["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, page["structuredContent"]);

    let got = tool(&t, "get", json!({"entity": "cards", "id": card_id, "fields": "id,title"})).await;
    assert_eq!(got["structuredContent"], json!({"id": card_id, "title": "Eat chicken"}));

    let updated = tool(&t, "update", json!({"entity": "cards", "id": card_id, "record": {"done": true}})).await;
    assert_eq!(updated["structuredContent"]["done"], true, "{updated}");
    let stale =
        tool(&t, "delete", json!({"entity": "cards", "id": card_id, "ifMatch": "2000-01-01 00:00:00.000Z"})).await;
    assert_eq!(
        (stale["isError"].as_bool(), stale["structuredContent"]["code"].as_str()),
        (Some(true), Some("version_conflict")),
        "{stale}"
    );
    let deleted = tool(
        &t,
        "delete",
        json!({"entity": "cards", "id": card_id, "ifMatch": updated["structuredContent"]["updated"]}),
    )
    .await;
    assert_eq!(deleted["structuredContent"]["_receipt"]["action"], "delete", "{deleted}");
    let (status, _) = t.call("GET", &format!("/api/collections/cards/records/{card_id}"), None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn app_errors_are_is_error_results_with_every_violation() {
    let t = TestApp::kanban().await;
    let bad =
        tool(&t, "create", json!({"entity": "cards", "record": {"title": "x", "due_date": "tomorrow", "bogus": 1}}))
            .await;
    assert_eq!(bad["isError"], true);
    let envelope = &bad["structuredContent"];
    assert_eq!((envelope["code"].as_str(), envelope["field"].as_str()), (Some("invalid_date"), Some("due_date")));
    let mut got = crate::violations(envelope);
    got.sort();
    assert_eq!(
        got,
        [
            ("invalid_date".to_owned(), "due_date".to_owned()),
            ("required_field".to_owned(), "list".to_owned()),
            ("unknown_field".to_owned(), "bogus".to_owned()),
        ]
    );
    assert!(bad["content"][0]["text"].as_str().unwrap().starts_with("invalid_date: 3 problems"), "{bad}");

    for (name, args, code) in [
        ("query", json!({"entity": "nope"}), "unknown_entity"),
        ("query", json!({"entity": "cards", "filter": "title ="}), "invalid_filter"),
        ("query", json!({"entity": "cards", "page": "two"}), "invalid_param"),
        ("get", json!({"entity": "cards"}), "invalid_param"),
        ("get", json!({"entity": "cards", "id": "aaaaaaaaaaaaaaa"}), "not_found"),
        ("create", json!({"entity": "cards", "record": [1]}), "invalid_param"),
        ("describe", json!({"path": "nope"}), "unknown_entity"),
    ] {
        let r = tool(&t, name, args.clone()).await;
        assert_eq!(
            (r["isError"].as_bool(), r["structuredContent"]["code"].as_str()),
            (Some(true), Some(code)),
            "{name} {args}: {r}"
        );
    }
}

#[tokio::test]
async fn arguments_a_tool_does_not_declare_are_refused_and_nothing_is_written() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "Before"})).await;
    let id = list["id"].as_str().unwrap().to_owned();
    // A misspelled precondition read as absent would make the update unconditional.
    let r =
        tool(&t, "update", json!({"entity": "lists", "id": id, "record": {"name": "After"}, "if_match": "x"})).await;
    assert_eq!(r["isError"], true, "{r}");
    let envelope = &r["structuredContent"];
    assert_eq!((envelope["code"].as_str(), envelope["field"].as_str()), (Some("invalid_param"), Some("if_match")));
    assert_eq!(
        envelope["message"],
        "this tool has no argument if_match; it takes: entity, id, record, ifMatch, idempotencyKey"
    );
    let (_, stored) = t.call("GET", &format!("/api/collections/lists/records/{id}"), None).await;
    assert_eq!(stored["name"], "Before");
    let r = tool(&t, "query", json!({"entity": "cards", "limit": 5, "skipTotal": true})).await;
    assert_eq!(
        crate::violations(&r["structuredContent"]),
        [("invalid_param".to_owned(), "limit".to_owned()), ("invalid_param".to_owned(), "skipTotal".to_owned()),]
    );
    // Declared arguments pass.
    let r = tool(&t, "query", json!({"entity": "cards", "perPage": 5})).await;
    assert_eq!(r["isError"], false, "{r}");
}

#[tokio::test]
async fn idempotency_key_makes_a_create_repeatable() {
    let t = TestApp::kanban().await;
    let args = json!({"entity": "lists", "record": {"name": "Once"}, "idempotencyKey": "k-1"});
    let first = tool(&t, "create", args.clone()).await;
    assert_eq!(first["isError"], false);
    let again = tool(&t, "create", args).await;
    assert_eq!(again["structuredContent"]["code"], "duplicate_request");
    assert_eq!(again["structuredContent"]["id"], first["structuredContent"]["id"]);
}

#[tokio::test]
async fn unknown_tools_and_resources_are_invalid_params() {
    let t = TestApp::kanban().await;
    let (_, r) = rpc(&t, &[], "tools/call", json!({"name": "nope", "arguments": {}})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let (_, r) = rpc(&t, &[], "resources/read", json!({"uri": "a2app://describe/nope"})).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert_eq!(r["error"]["data"]["uri"], "a2app://describe/nope");
}

#[tokio::test]
async fn resources_are_describe_and_one_schema_per_entity() {
    let t = TestApp::kanban().await;
    let (_, list) = rpc(&t, &[], "resources/list", json!({})).await;
    let uris: Vec<&str> =
        list["result"]["resources"].as_array().unwrap().iter().map(|r| r["uri"].as_str().unwrap()).collect();
    assert_eq!(
        uris,
        [
            "a2app://describe",
            "a2app://describe/lists",
            "a2app://describe/members",
            "a2app://describe/cards",
            "a2app://a2ui/catalog",
            "ui://kanban/view"
        ]
    );
    let (_, read) = rpc(&t, &[], "resources/read", json!({"uri": "a2app://describe/cards"})).await;
    let content = &read["result"]["contents"][0];
    assert_eq!(content["mimeType"], "application/json");
    let part: Value = serde_json::from_str(content["text"].as_str().unwrap()).unwrap();
    assert_eq!(part["label"], "title");
    let (_, read) = rpc(&t, &[], "resources/read", json!({"uri": "a2app://describe"})).await;
    let doc: Value = serde_json::from_str(read["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(doc["app"]["id"], "kanban");
}

#[tokio::test]
async fn host_origin_and_token_rules_are_the_contracts() {
    let t = TestApp::kanban().await;
    let port = t.url.rsplit(':').next().unwrap().to_owned();
    let own = format!("http://localhost:{port}");
    let bearer = format!("Bearer {}", t.token);
    let list = json!({});
    // Host and Origin: 403 before the protocol layer, with the contract's codes.
    let (s, b) = rpc(&t, &[("host", "evil.example")], "tools/list", list.clone()).await;
    assert_eq!((s, b["code"].as_str()), (403, Some("forbidden_host")));
    let (s, b) = rpc(&t, &[("origin", "http://evil.example")], "tools/list", list.clone()).await;
    assert_eq!((s, b["code"].as_str()), (403, Some("forbidden_origin")));
    let (s, _) = rpc(&t, &[("origin", &own)], "tools/list", list.clone()).await;
    assert_eq!(s, 200);
    // Every loopback name the contract accepts reaches MCP too, not only the
    // three rmcp knows by default.
    for host in [format!("app.localhost:{port}"), format!("127.0.0.2:{port}"), format!("[::1]:{port}")] {
        let (s, b) = rpc(&t, &[("host", &host)], "tools/list", list.clone()).await;
        assert_eq!(s, 200, "{host}: {b}");
        assert!(b["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{host}: {b}");
    }
    // A wrong X-LUI-Token, or a wrong bearer, is refused outright: a
    // credential that is there is never read as absent.
    for wrong in [("x-lui-token", "wrong"), ("authorization", "Bearer wrong")] {
        let (s, b) = rpc(&t, &[wrong], "tools/list", list.clone()).await;
        assert_eq!((s, b["code"].as_str()), (401, Some("unauthorized")), "{b}");
    }
    // Reads need nothing on loopback; writes need the token.
    let create = json!({"name": "create", "arguments": {"entity": "lists", "record": {"name": "A"}}});
    let (_, r) = rpc(&t, &[], "tools/call", create.clone()).await;
    assert_eq!(r["result"]["structuredContent"]["code"], "unauthorized", "{r}");
    for headers in [vec![("authorization", bearer.as_str())], vec![("x-lui-token", t.token.as_str())]] {
        let (_, r) = rpc(&t, &headers, "tools/call", create.clone()).await;
        assert_eq!(r["result"]["isError"], false, "{r}");
    }
    // The app's own page may write without the token, as over HTTP.
    let (_, r) = rpc(&t, &[("origin", &own)], "tools/call", create).await;
    assert_eq!(r["result"]["structuredContent"]["_receipt"]["caller"], "own_ui", "{r}");
}

#[tokio::test]
async fn bodies_are_bounded() {
    let t = TestApp::kanban().await;
    let big = "x".repeat(a2app_server::http::MAX_BODY + 1);
    let (s, _) = rpc(&t, &[], "tools/call", json!({"name": "describe", "arguments": {"path": big}})).await;
    assert_eq!(s, 413);
}

#[tokio::test]
async fn the_legacy_era_has_initialize_and_sessions() {
    let t = TestApp::kanban().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let resp = legacy_post(&t, init, None).await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().contains_key("mcp-session-id"));
    let body = resp.text().await.unwrap();
    assert!(body.contains("\"protocolVersion\":\"2025-11-25\"") && body.contains("a2app/kanban"), "{body}");
    let session = legacy_session(&t, json!({})).await;
    let list = legacy_call(&t, &session, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"][0]["name"], "describe", "{list}");
}

#[tokio::test]
async fn prompts_are_the_presentation_examples() {
    let t = TestApp::kanban().await;
    let (_, list) = rpc(&t, &[], "prompts/list", json!({})).await;
    let names: Vec<&str> =
        list["result"]["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["due-this-week", "add-card"]);
    let (_, got) = rpc(&t, &[], "prompts/get", json!({"name": "due-this-week"})).await;
    let message = &got["result"]["messages"][0];
    assert_eq!(message["role"], "user");
    assert!(message["content"]["text"].as_str().unwrap().starts_with("Which cards"), "{got}");
    let (_, missing) = rpc(&t, &[], "prompts/get", json!({"name": "nope"})).await;
    assert_eq!(missing["error"]["code"], -32602);
    // Nothing sent is taken for nothing: no prompt takes arguments, no list a cursor.
    let (_, argued) =
        rpc(&t, &[], "prompts/get", json!({"name": "due-this-week", "arguments": {"week": "next"}})).await;
    assert_eq!(argued["error"]["code"], -32602, "{argued}");
    let (_, empty) = rpc(&t, &[], "prompts/get", json!({"name": "due-this-week", "arguments": {}})).await;
    assert!(empty["result"]["messages"].is_array(), "{empty}");
    for method in ["tools/list", "prompts/list", "resources/list"] {
        let (_, paged) = rpc(&t, &[], method, json!({"cursor": "page-2"})).await;
        assert_eq!(paged["error"]["code"], -32602, "{method}: {paged}");
    }
}

#[tokio::test]
async fn operations_run_through_mcp_with_the_approval_round_trip() {
    let t = TestApp::kanban().await;
    let list = tool(&t, "create", json!({"entity": "lists", "record": {"name": "To Do"}})).await;
    let list_id = list["structuredContent"]["id"].as_str().unwrap().to_owned();
    let card = tool(&t, "create", json!({"entity": "cards", "record": {"title": "Eat", "list": list_id}})).await;
    let card_id = card["structuredContent"]["id"].as_str().unwrap().to_owned();

    let done = tool(&t, "run_operation", json!({"name": "complete_card", "params": {"card": card_id}})).await;
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(done["structuredContent"]["receipts"][0]["action"], "update");
    assert_eq!(done["content"][0]["text"], done["structuredContent"]["receipts"][0]["text"]);

    // Destructive: approval_required with a key, then the same call with it.
    let clear = json!({"name": "clear_done", "params": {}});
    let first = tool(&t, "run_operation", clear.clone()).await;
    assert_eq!(first["isError"], true);
    assert_eq!(first["structuredContent"]["code"], "approval_required", "{first}");
    let key = first["structuredContent"]["approvalKey"].as_str().unwrap();
    let mut approved = clear.clone();
    approved["approvalKey"] = json!(key);
    let second = tool(&t, "run_operation", approved).await;
    assert_eq!(second["isError"], false, "{second}");
    assert_eq!(second["structuredContent"]["result"]["deleted"], 1);
    let (status, _) = t.call("GET", &format!("/api/collections/cards/records/{card_id}"), None).await;
    assert_eq!(status, 404);

    // A job answers its id; job_status reads it.
    let started = tool(&t, "run_operation", json!({"name": "export_board"})).await;
    let job_id = started["structuredContent"]["jobId"].as_str().unwrap().to_owned();
    assert!(started["content"][0]["text"].as_str().unwrap().contains("job_status"));
    let status = tool(&t, "job_status", json!({"jobId": job_id})).await;
    assert_eq!(status["structuredContent"]["id"], job_id.as_str(), "{status}");

    let unknown = tool(&t, "run_operation", json!({"name": "nope"})).await;
    assert_eq!(unknown["structuredContent"]["code"], "unknown_operation");
    // Operations are writes: without the token they are refused.
    let (_, r) =
        rpc(&t, &[], "tools/call", json!({"name": "run_operation", "arguments": {"name": "export_board"}})).await;
    assert_eq!(r["result"]["structuredContent"]["code"], "unauthorized", "{r}");
}

#[tokio::test]
async fn full_mode_adds_one_typed_tool_per_operation() {
    let t = TestApp::with_config(|toml| format!("{toml}\n[mcp]\ntools = \"full\"\n")).await;
    let (_, list) = rpc(&t, &[], "tools/list", json!({})).await;
    assert_eq!(
        names(&list)[6..],
        [
            "run_operation",
            "job_status",
            "move_card",
            "complete_card",
            "cards_in_list",
            "clear_done",
            "export_board",
            "check_claims"
        ]
    );
    let tools = list["result"]["tools"].as_array().unwrap();
    let cards_in_list = &tools[10];
    assert_eq!(cards_in_list["annotations"]["readOnlyHint"], true);
    assert_eq!(cards_in_list["inputSchema"]["required"], json!(["list"]));
    assert_eq!(cards_in_list["inputSchema"]["properties"]["include_done"]["type"], "boolean");
    assert_eq!(tools[11]["annotations"]["destructiveHint"], true);

    let made = tool(&t, "create", json!({"entity": "lists", "record": {"name": "L"}})).await;
    let id = made["structuredContent"]["id"].as_str().unwrap();
    let page = tool(&t, "cards_in_list", json!({"list": id})).await;
    assert_eq!(page["isError"], false, "{page}");
    let first = tool(&t, "clear_done", json!({})).await;
    assert_eq!(first["structuredContent"]["code"], "approval_required");

    // A host drawing views gets each operation's tool linked to the view too.
    let declared = json!({"extensions": {UI: {}}});
    let (_, list) = rpc_declaring(&t, declared, &[], "tools/list", json!({})).await;
    let drawn: Vec<String> = linked(&list).into_iter().map(|(name, _)| name).collect();
    assert_eq!(drawn.len(), names(&list).len() - 2, "every tool but describe and check_claims");
    assert_eq!(drawn[7..], ["move_card", "complete_card", "cards_in_list", "clear_done", "export_board", "show"]);
}

/// Params that do not fit a method served here are invalid params (200 and
/// -32602 in the 2026-07-28 era), not an unknown method; unknown methods stay 404.
#[tokio::test]
async fn params_that_do_not_fit_a_method_are_invalid_params() {
    let t = TestApp::kanban().await;
    let bearer = format!("Bearer {}", t.token);
    let auth = [("authorization", bearer.as_str())];
    for (arguments, why) in [
        (json!(false), "invalid type: boolean `false`, expected a map"),
        (json!([1]), "invalid type: sequence, expected a map"),
    ] {
        let (status, body) = rpc(&t, &auth, "tools/call", json!({"name": "query", "arguments": arguments})).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["error"]["code"], -32602, "{body}");
        assert_eq!(body["error"]["message"], format!("the params of tools/call do not fit it: {why}"));
    }
    let (status, body) = rpc(&t, &auth, "resources/read", json!({"uri": 7})).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (200, Some(-32602)), "{body}");
    let (status, body) = rpc(&t, &auth, "tools/nope", json!({})).await;
    assert_eq!((status, body["error"]["code"].as_i64()), (404, Some(-32601)), "{body}");
}

const UI: &str = "io.modelcontextprotocol/ui";
const VIEW_MIME: &str = "text/html;profile=mcp-app";

/// The tools naming a view, as `name → resourceUri`.
fn linked(list: &Value) -> Vec<(String, String)> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| {
            let uri = t["_meta"]["ui"]["resourceUri"].as_str()?;
            assert_eq!(t["_meta"]["ui/resourceUri"], uri, "the older flat key names the same view");
            Some((t["name"].as_str().unwrap().to_owned(), uri.to_owned()))
        })
        .collect()
}

#[tokio::test]
async fn the_view_is_linked_only_for_hosts_that_declared_mcp_apps() {
    let t = TestApp::kanban().await;
    let view = "ui://kanban/view".to_owned();
    let expected: Vec<(String, String)> =
        ["query", "get", "create", "update", "delete", "run_operation", "job_status", "show"]
            .iter()
            .map(|n| (n.to_string(), view.clone()))
            .collect();

    // A host without the extension gets the compact list, byte for byte.
    let (_, plain) = rpc(&t, &[], "tools/list", json!({})).await;
    assert!(linked(&plain).is_empty());
    assert!(!plain.to_string().contains("ui://"));

    // 2026-07-28: the capability travels in each request's _meta.
    let declared = json!({"extensions": {UI: {"mimeTypes": [VIEW_MIME]}}});
    let (_, list) = rpc_declaring(&t, declared, &[], "tools/list", json!({})).await;
    assert_eq!(linked(&list), expected);
    let describe = &list["result"]["tools"][0];
    assert_eq!(describe["name"], "describe");
    assert!(describe.get("_meta").is_none(), "describe draws nothing: {describe}");
    // The list is otherwise the plain one plus show: the same tools, the same schemas.
    let strip = |mut v: Value| {
        let tools = v["result"]["tools"].as_array_mut().unwrap();
        assert_eq!(tools.pop().unwrap()["name"], "show");
        for tool in tools {
            tool.as_object_mut().unwrap().remove("_meta");
        }
        v
    };
    assert_eq!(strip(list), plain);

    // A host that draws A2UI only is not sent an HTML view.
    let a2ui = json!({"extensions": {UI: {"mimeTypes": ["application/a2ui+json"]}}});
    let (_, list) = rpc_declaring(&t, a2ui, &[], "tools/list", json!({})).await;
    assert!(linked(&list).is_empty());

    // 2025-11-25: the capability is declared once, in initialize.
    let session = legacy_session(&t, json!({"extensions": {UI: {}}})).await;
    let list = legacy_call(&t, &session, "tools/list", json!({})).await;
    assert_eq!(linked(&list), expected);
    let session = legacy_session(&t, json!({})).await;
    assert!(linked(&legacy_call(&t, &session, "tools/list", json!({})).await).is_empty());
}

#[tokio::test]
async fn the_view_is_an_mcp_apps_resource_carrying_the_apps_model() {
    let t = TestApp::kanban().await;
    let (_, list) = rpc(&t, &[], "resources/list", json!({})).await;
    let entry =
        list["result"]["resources"].as_array().unwrap().iter().find(|r| r["uri"] == "ui://kanban/view").unwrap();
    assert_eq!(entry["mimeType"], VIEW_MIME);
    assert_eq!(entry["_meta"]["ui"], json!({"prefersBorder": true}));

    let (status, read) = rpc(&t, &[], "resources/read", json!({"uri": "ui://kanban/view"})).await;
    assert_eq!(status, 200);
    let contents = read["result"]["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1);
    let page = &contents[0];
    assert_eq!(page["uri"], "ui://kanban/view");
    assert_eq!(page["mimeType"], VIEW_MIME);
    // No csp: the page connects nowhere, so the host's default policy holds.
    assert_eq!(page["_meta"]["ui"], json!({"prefersBorder": true}));
    let html = page["text"].as_str().unwrap();
    assert!(html.starts_with("<!doctype html>"), "{}", &html[..40]);
    assert!(!html.contains("/*A2APP_MODEL*/"), "the model is filled in");
    assert!(!html.contains("http://") && !html.contains("https://"), "the page names no address to load");

    // The page carries describe itself, as GET /api/_a2app/describe answers it.
    let start = html.find("const MODEL = ").unwrap() + "const MODEL = ".len();
    let end = start + html[start..].find(";\n").unwrap();
    let model: Value = serde_json::from_str(&html[start..end]).unwrap();
    let (_, describe) = rpc(&t, &[], "resources/read", json!({"uri": "a2app://describe"})).await;
    let describe: Value = serde_json::from_str(describe["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(model, json!({ "describe": describe }));
    assert_eq!(
        model["describe"]["entities"]["cards"]["fields"]["list"],
        json!({"type": "ref", "entity": "lists", "required": true})
    );

    // The server says it has views.
    let (_, discover) = rpc(&t, &[], "server/discover", json!({})).await;
    assert_eq!(discover["result"]["capabilities"]["extensions"][UI], json!({}), "{discover}");
}

/// Opens a legacy (2025-11-25) session declaring `capabilities`.
async fn legacy_session(t: &TestApp, capabilities: Value) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "test", "version": "1"}}});
    let resp = legacy_post(t, init, None).await;
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(legacy_post(t, done, Some(&session)).await.status(), 202);
    session
}

async fn legacy_post(t: &TestApp, body: Value, session: Option<&str>) -> reqwest::Response {
    let mut req = t
        .http
        .post(format!("{}/mcp", t.url))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(s) = session {
        req = req.header("mcp-session-id", s).header("mcp-protocol-version", "2025-11-25");
    }
    req.send().await.unwrap()
}

/// One request in a legacy session; the answer comes as one SSE event.
async fn legacy_call(t: &TestApp, session: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let text = legacy_post(t, body, Some(session)).await.text().await.unwrap();
    let data = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).rfind(|d| !d.is_empty()).unwrap();
    serde_json::from_str(data).unwrap()
}

/// A host that draws the view, in the 2026-07-28 era.
async fn ui_tool(t: &TestApp, name: &str, arguments: Value, token: bool) -> Value {
    let bearer = format!("Bearer {}", t.token);
    let extra: &[(&str, &str)] = if token { &[("authorization", &bearer)] } else { &[] };
    let declared = json!({"extensions": {UI: {}}});
    let params = json!({"name": name, "arguments": arguments});
    let (status, body) = rpc_declaring(t, declared, extra, "tools/call", params).await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

fn form(surface: &str) -> Value {
    json!([{"version": "v1.0", "createSurface": {
    "surfaceId": surface, "catalogId": "urn:a2app:a2ui:catalog:v1",
    "dataModel": {"title": ""},
    "components": [
        {"id": "root", "component": "Column", "children": ["title", "save"]},
        {"id": "title", "component": "TextField", "label": "Title", "value": {"path": "/title"}},
        {"id": "save", "component": "Button", "child": "label",
         "action": {"event": {"name": "create", "context": {"entity": "cards", "record": {"title": {"path": "/title"}}}}}},
        {"id": "label", "component": "Text", "text": "Save"}
    ]}}])
}

#[tokio::test]
async fn show_keeps_an_a2ui_surface_checked_against_the_catalog() {
    let t = TestApp::kanban().await;
    // Only hosts that draw the view list show.
    let (_, plain) = rpc(&t, &[], "tools/list", json!({})).await;
    assert!(!names(&plain).contains(&"show"));
    // ... and a host that does not draw it cannot call it: nothing is shown there.
    let bearer = format!("Bearer {}", t.token);
    let params = json!({"name": "show", "arguments": {"messages": form("new-card")}});
    let (_, refused) = rpc(&t, &[("authorization", &bearer)], "tools/call", params).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    let shown = ui_tool(&t, "show", json!({"messages": form("new-card")}), true).await;
    assert_eq!(shown["isError"], false, "{shown}");
    assert_eq!(
        shown["content"][0]["text"],
        "new-card (4 components) is shown to the person. Read what the person entered with show {surfaceId}."
    );
    let surface = &shown["structuredContent"]["surfaces"][0]["createSurface"];
    assert_eq!(surface["surfaceId"], "new-card");
    assert_eq!(surface["components"].as_array().unwrap().len(), 4);

    // What the person typed, as a renderer writes it back, is read back.
    let typed = json!([{"version": "v1.0", "updateDataModel": {"surfaceId": "new-card", "path": "/title", "value": "Buy milk"}}]);
    assert_eq!(ui_tool(&t, "show", json!({"messages": typed}), true).await["isError"], false);
    let read = ui_tool(&t, "show", json!({"surfaceId": "new-card"}), true).await;
    assert_eq!(read["structuredContent"]["surfaces"][0]["createSurface"]["dataModel"], json!({"title": "Buy milk"}));
    let listed = ui_tool(&t, "show", json!({}), true).await;
    let both = ui_tool(&t, "show", json!({"messages": typed, "surfaceId": "new-card"}), true).await;
    assert_eq!(
        (both["structuredContent"]["code"].as_str(), both["structuredContent"]["field"].as_str()),
        (Some("invalid_param"), Some("surfaceId"))
    );
    // What the person typed is not for every visitor: reading takes the token too.
    let peek = ui_tool(&t, "show", json!({"surfaceId": "new-card"}), false).await;
    assert_eq!(peek["structuredContent"]["code"], "unauthorized");
    assert_eq!(listed["structuredContent"]["surfaces"][0]["surfaceId"], "new-card");

    // A surface outside the catalog is refused whole, every problem at once.
    let mut bad = form("bad");
    bad[0]["createSurface"]["components"][1]["component"] = json!("Script");
    bad[0]["createSurface"]["components"][2]["action"]["event"]["name"] = json!("drop_everything");
    let refused = ui_tool(&t, "show", json!({"messages": bad}), true).await;
    assert_eq!(refused["isError"], true);
    let body = &refused["structuredContent"];
    assert_eq!(body["code"], "unknown_component");
    assert_eq!(body["status"], 400);
    let codes: Vec<&str> = body["violations"].as_array().unwrap().iter().map(|v| v["code"].as_str().unwrap()).collect();
    assert_eq!(codes, ["unknown_component", "unknown_action"]);
    let missing = ui_tool(&t, "show", json!({"surfaceId": "bad"}), true).await;
    assert_eq!(missing["structuredContent"]["code"], "unknown_surface");
    assert_eq!(missing["structuredContent"]["status"], 404);

    // Rendering is a write: the agent token is needed.
    let anonymous = ui_tool(&t, "show", json!({"messages": form("x")}), false).await;
    assert_eq!(anonymous["structuredContent"]["code"], "unauthorized");

    // The catalog is a resource.
    let (_, catalog) = rpc(&t, &[], "resources/read", json!({"uri": "a2app://a2ui/catalog"})).await;
    let doc: Value = serde_json::from_str(catalog["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(doc["catalogId"], "urn:a2app:a2ui:catalog:v1");
    assert_eq!(doc["components"].as_object().unwrap().len(), 11);
}

#[tokio::test]
async fn surfaces_are_kept_in_the_database_as_loro_documents() {
    let t = TestApp::kanban().await;
    ui_tool(&t, "show", json!({"messages": form("kept")}), true).await;
    let typed =
        json!([{"version": "v1.0", "updateDataModel": {"surfaceId": "kept", "path": "/title", "value": "Typed"}}]);
    ui_tool(&t, "show", json!({"messages": typed}), true).await;
    // A second opening of the app's directory reads them from the database file.
    let def = a2app_core::app::load(t.dir.path()).unwrap();
    let (reopened, _) = a2app_core::App::open(def, a2app_core::OpenOptions::default()).unwrap();
    let reopened = std::sync::Arc::new(reopened);
    let kept = a2app_core::surfaces::get(&reopened, "kept").await.unwrap();
    assert_eq!(kept["createSurface"]["dataModel"]["title"], "Typed");
    assert_eq!(kept["createSurface"]["components"][0]["id"], "root");
    let gone = json!([{"version": "v1.0", "deleteSurface": {"surfaceId": "kept"}}]);
    let deleted = a2app_core::surfaces::render(&reopened, &gone).await.unwrap();
    assert_eq!(deleted, [json!({"version": "v1.0", "deleteSurface": {"surfaceId": "kept"}})]);
    assert!(a2app_core::surfaces::list(&reopened).await.unwrap().is_empty());
}

/// Hardening issue, finding 1: the `query` tool with an expansion that
/// multiplies (`perPage: 1` took 21 s) is refused as the records API refuses
/// it; a write asking for it is stored and answered unexpanded, saying why.
#[tokio::test]
async fn an_expand_past_the_budget_is_refused_by_the_query_tool() {
    let t = TestApp::kanban().await;
    let list = t.create("lists", json!({"name": "All"})).await;
    for i in 0..40 {
        t.create("cards", json!({"title": format!("card {i}"), "list": list["id"]})).await;
    }
    let path = "list.cards_via_list.list.cards_via_list.list.cards_via_list";
    let r = tool(&t, "query", json!({"entity": "cards", "perPage": 1, "expand": path})).await;
    assert_eq!(
        (r["isError"].as_bool(), r["structuredContent"]["code"].as_str()),
        (Some(true), Some("expand_too_large"))
    );
    let body = json!({"title": "one more", "list": list["id"]});
    let (status, written) = t.call("POST", &format!("/api/collections/cards/records?expand={path}"), Some(body)).await;
    assert_eq!(status, 200, "{written}");
    assert_eq!(written["_expand"]["code"], "expand_too_large");
    assert_eq!(written["_receipt"]["text"], "Added \"one more\" to All");
    assert!(written.get("expand").is_none(), "{written}");
    let (_, page) = t.call("GET", "/api/collections/cards/records?filter=title='one more'", None).await;
    assert_eq!(page["totalItems"], 1);
}

/// A legacy request with `headers` (beyond the protocol's own) in `session`.
async fn legacy_with(
    t: &TestApp,
    method: &str,
    body: Option<Value>,
    session: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut req = t
        .http
        .request(method.parse().unwrap(), format!("{}/mcp", t.url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    if let Some(body) = body {
        req = req.header("content-type", "application/json").body(body.to_string());
    }
    req.send().await.unwrap()
}

/// Hardening issue, finding 4: `DELETE /mcp` with only the id of a session
/// opened with the agent token ended it. A session is its opener's alone:
/// anyone else is told there is no such session, and it lives on.
#[tokio::test]
async fn only_the_credential_that_opened_a_session_ends_it() {
    let t = TestApp::kanban().await;
    let bearer = format!("Bearer {}", t.token);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let resp = t
        .http
        .post(format!("{}/mcp", t.url))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", &bearer)
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let session = resp.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let owner = [("authorization", bearer.as_str())];
    assert_eq!(legacy_with(&t, "POST", Some(done), &session, &owner).await.status(), 202);

    // Someone with the id alone: as if there were no such session.
    for method in ["DELETE", "POST"] {
        let body = (method == "POST").then(|| json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}));
        let resp = legacy_with(&t, method, body, &session, &[]).await;
        assert_eq!(resp.status(), 404, "{method}");
        let answer: Value = resp.json().await.unwrap();
        assert_eq!(
            (answer["jsonrpc"].as_str(), answer["error"]["code"].as_i64()),
            (Some("2.0"), Some(-32001)),
            "{answer}"
        );
    }
    // The session lives on for its opener, who ends it.
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    assert_eq!(legacy_with(&t, "POST", Some(list.clone()), &session, &owner).await.status(), 200);
    assert!(legacy_with(&t, "DELETE", None, &session, &owner).await.status().is_success());
    let gone = legacy_with(&t, "POST", Some(list), &session, &owner).await;
    assert_eq!(gone.status(), 404);
    let answer: Value = gone.json().await.unwrap();
    assert_eq!(answer["error"]["code"], -32001, "an unknown session is a JSON-RPC error too: {answer}");
}

/// Hardening issue, findings 5 and 6: a wrong `Authorization: Bearer` was
/// read as no credential (`whoami` said anonymous; MCP opened a session); a
/// body that is no JSON got a plain-text 415.
#[tokio::test]
async fn a_wrong_bearer_is_refused_and_a_broken_body_is_a_parse_error() {
    let t = TestApp::kanban().await;
    let wrong = [("authorization", "Bearer wrong-token")];
    let req = t.http.get(format!("{}/api/_a2app/whoami", t.url)).header("authorization", "Bearer wrong-token");
    let resp = req.send().await.unwrap();
    assert_eq!(resp.status(), 401);
    assert_eq!(resp.headers()["www-authenticate"], "Bearer realm=\"a2app\"");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "unauthorized");
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let (status, body) = rpc(&t, &wrong, "tools/list", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (401, Some("unauthorized")), "{body}");
    let resp = t
        .http
        .post(format!("{}/mcp", t.url))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", "Bearer wrong-token")
        .body(init.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    assert!(resp.headers().contains_key("www-authenticate"));
    assert!(!resp.headers().contains_key("mcp-session-id"), "no session opened");
    // A proxy's own scheme is not the app's credential: read as none.
    let req = t.http.get(format!("{}/api/_a2app/whoami", t.url)).header("authorization", "Basic dXNlcjpwYXNz");
    let (status, who) = t.send(req, None).await;
    assert_eq!((status, who["kind"].as_str()), (200, Some("anonymous")), "{who}");

    let resp = t
        .http
        .post(format!("{}/mcp", t.url))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);
    let answer: Value = resp.json().await.unwrap();
    assert_eq!((answer["jsonrpc"].as_str(), answer["error"]["code"].as_i64()), (Some("2.0"), Some(-32700)), "{answer}");
    // A body of another type is refused in JSON-RPC's words too.
    let resp = t
        .http
        .post(format!("{}/mcp", t.url))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "text/plain")
        .body("{}")
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let answer: Value = resp.json().await.unwrap();
    assert_eq!((status, answer["error"]["code"].as_i64()), (415, Some(-32600)), "{answer}");
}
