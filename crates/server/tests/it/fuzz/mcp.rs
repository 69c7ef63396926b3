//! MCP tool calls of the compact surface with arguments of every shape, over
//! the stateless 2026-07-28 era.

use super::{Fuzzer, assert_exercised, rounds, seed};
use crate::TestApp;
use crate::realtime::Stream;
use protocol::ErrorCode;
use rand::RngExt;
use serde_json::{Map, Value, json};
use std::time::Duration;

const MODERN: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";

impl Fuzzer<'_> {
    /// A tool call of the compact MCP surface: a tool (sometimes one that
    /// does not exist) and arguments, mostly of the right shape.
    pub(super) fn tool_call(&mut self) -> (String, Value) {
        self.clean = self.chance(0.4);
        self.acting = None;
        let tool = self.pick(&[
            "describe",
            "query",
            "query",
            "get",
            "create",
            "create",
            "create",
            "update",
            "update",
            "delete",
            "run_operation",
            "job_status",
            "nope",
        ]);
        let entity = self.entity_name();
        let mut args = Map::new();
        match tool {
            "describe" => {
                let path = self.pick(&["", "cards", "cards.fields", "operations", "nope", "cards/../lists"]);
                args.insert("path".into(), Value::from(path));
            }
            "query" => {
                args.insert("entity".into(), Value::from(entity.clone()));
                for (k, v) in self.query(&entity) {
                    let value = match k.as_str() {
                        "page" | "perPage" => v.parse::<i64>().map(Value::from).unwrap_or(Value::from(v)),
                        _ => Value::from(v),
                    };
                    args.insert(k, value);
                }
            }
            "get" | "delete" => {
                args.insert("entity".into(), Value::from(entity.clone()));
                args.insert("id".into(), Value::from(self.id(&entity)));
            }
            "create" | "update" => {
                args.insert("entity".into(), Value::from(entity.clone()));
                args.insert("record".into(), self.record(&entity));
                if tool == "update" {
                    args.insert("id".into(), Value::from(self.id(&entity)));
                }
                if self.chance(0.3) {
                    let key = format!("mcp-{}", self.rng.random_range(0..400u32));
                    args.insert("idempotencyKey".into(), Value::from(key));
                }
            }
            "run_operation" => {
                let mut names = self.operations.clone();
                names.push(self.junk(5));
                args.insert("name".into(), Value::from(self.pick(&names)));
                let params = json!({"card": self.id("cards"), "list": self.id("lists"), "include_done": true});
                args.insert("params".into(), if self.chance(0.8) { params } else { self.any_value(2) });
                if self.chance(0.3) {
                    args.insert("approvalKey".into(), Value::from(self.junk(12)));
                }
            }
            "job_status" => {
                args.insert("jobId".into(), Value::from(self.junk(15)));
            }
            _ => {}
        }
        if !self.clean && self.chance(0.2) {
            let keys: Vec<String> = args.keys().cloned().collect();
            if let Some(key) = keys.first().filter(|_| self.chance(0.5)) {
                let value = self.any_value(2);
                args.insert(key.clone(), value);
            } else {
                let (key, value) = (self.junk(6), self.any_value(1));
                args.insert(key, value);
            }
        }
        let args = if !self.clean && self.chance(0.05) { self.any_value(1) } else { Value::Object(args) };
        (tool.to_owned(), args)
    }

    /// Sends a tool call as the owner: over the modern (stateless) era, or in
    /// a legacy (2025-11-25) `session`.
    pub(super) async fn call_tool(
        &self,
        tool: &str,
        arguments: &Value,
        session: Option<&str>,
    ) -> Result<(u16, Value), String> {
        let mut params = json!({"name": tool, "arguments": arguments});
        let mut request = self.mcp_post();
        match session {
            Some(id) => request = request.header("mcp-session-id", id).header("mcp-protocol-version", LEGACY),
            None => {
                params["_meta"] = json!({
                    "io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": {},
                });
                request = request
                    .header("mcp-protocol-version", MODERN)
                    .header("mcp-method", "tools/call")
                    .header("mcp-name", tool);
            }
        }
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params});
        let response = tokio::time::timeout(Duration::from_secs(20), request.body(body.to_string()).send())
            .await
            .map_err(|_| "no answer within 20 s".to_owned())?
            .map_err(|e| format!("transport error: {e:?}"))?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| format!("body error: {e}"))?;
        Ok((status, message(&text)))
    }

    /// A POST to `/mcp` as the owner, accepting both answer forms.
    fn mcp_post(&self) -> reqwest::RequestBuilder {
        self.t
            .http
            .post(format!("{}/mcp", self.t.url))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("authorization", format!("Bearer {}", self.t.token))
    }

    /// Opens a legacy session (initialize, then initialized); its id.
    pub(super) async fn legacy_session(&self) -> String {
        let post = |body: Value| self.mcp_post().body(body.to_string());
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}});
        let response = post(init).send().await.expect("initialize");
        assert_eq!(response.status(), 200);
        let session = response.headers()["mcp-session-id"].to_str().expect("session id").to_owned();
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let response = post(done).header("mcp-session-id", &session).header("mcp-protocol-version", LEGACY);
        assert_eq!(response.send().await.expect("initialized").status(), 202);
        session
    }

    /// Checks one tool call's answer; updates the bookkeeping.
    pub(super) fn check_tool(&mut self, tool: &str, args: &Value, status: u16, body: &Value) -> Result<(), String> {
        if status != 200 {
            return Err(format!("answered {status}: {body}"));
        }
        if let Some(error) = body.get("error") {
            // Arguments that do not fit the tool's schema, or no such tool.
            let code = error["code"].as_i64();
            if code != Some(-32602) || !error["message"].is_string() {
                return Err(format!("a JSON-RPC error other than invalid params: {error}"));
            }
            self.seen.codes.insert("jsonrpc:invalid_params");
            return Ok(());
        }
        let result = &body["result"];
        let content = &result["structuredContent"];
        match result["isError"].as_bool() {
            Some(true) => {
                let code = content["code"].as_str().ok_or_else(|| format!("a tool error without a code: {body}"))?;
                let known = ErrorCode::from_name(code).ok_or_else(|| format!("code {code:?} is not in the table"))?;
                if content["status"] != known.status() {
                    return Err(format!("{code} with status {}, its status is {}", content["status"], known.status()));
                }
                self.seen.codes.insert(known.as_str());
            }
            Some(false) => match tool {
                "create" => {
                    let entity = content["collectionName"].as_str();
                    let (Some(entity), Some(id)) = (entity, content["id"].as_str()) else {
                        return Err(format!("a created record without collectionName and id: {body}"));
                    };
                    self.acknowledge_create(entity, id);
                }
                "delete" => {
                    let (entity, id) = (args["entity"].as_str().unwrap_or(""), args["id"].as_str().unwrap_or(""));
                    self.acknowledge_delete(entity, id)?;
                }
                "update" => self.seen.updated += 1,
                "query" => self.seen.listed += 1,
                "run_operation" if self.destructive.iter().any(|d| args["name"] == d.as_str()) => {
                    return Err(format!("a destructive operation ran unapproved: {body}"));
                }
                _ => {}
            },
            None => return Err(format!("neither a result nor an error: {body}")),
        }
        Ok(())
    }

    pub(super) async fn run_tools(&mut self, calls: usize, seed: u64, session: Option<&str>) -> Result<(), String> {
        for i in 0..calls {
            let (tool, args) = self.tool_call();
            let checked = match self.call_tool(&tool, &args, session).await {
                Ok((status, body)) => self.check_tool(&tool, &args, status, &body),
                Err(problem) => Err(problem),
            };
            if let Err(problem) = checked {
                let era = if session.is_some() { LEGACY } else { MODERN };
                return Err(format!("seed {seed}, tool call {i} ({era}): {problem}\n{tool} {args}"));
            }
        }
        Ok(())
    }
}

/// The JSON-RPC message of an answer: the body itself, or the `data:` of an
/// SSE answer's message (the legacy era may stream its one answer).
fn message(text: &str) -> Value {
    let data = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).find(|d| d.starts_with('{'));
    serde_json::from_str(data.unwrap_or(text)).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// The MCP tools of the kanban app, called with arguments of every shape, in
/// both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_tool_calls_never_break_the_mcp_endpoint() {
    let t = TestApp::with_config(|toml| toml.replace("writes_per_minute = 3000", "writes_per_minute = 0")).await;
    let list = t.create("lists", json!({"name": "To Do"})).await;
    let seed = seed();
    let mut stream = Stream::open(&t, &["cards/*", "lists/*", "members/*"]).await;
    let mut f = Fuzzer::new(&t, seed);
    let existing = [("lists", list["id"].as_str().unwrap().to_owned())];
    f.live.entry("lists".into()).or_default().insert(existing[0].1.clone());
    if let Err(problem) = f.run_tools(rounds(500), seed, None).await {
        panic!("{problem}");
    }
    let session = f.legacy_session().await;
    if let Err(problem) = f.run_tools(rounds(500), seed, Some(&session)).await {
        panic!("{problem}");
    }
    let stored = f.stored().await;
    assert_eq!(stored, f.live, "the records are those acknowledged as created and not as deleted (seed {seed})");
    f.check_events(&mut stream, &existing, Duration::from_secs(1)).await;
    assert_exercised(&f.seen);
}
