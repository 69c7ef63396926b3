//! Benchmark (not a test): the size of `tools/list` as an MCP host receives it,
//! for `examples/kanban` and for the same app with 20 more entities.
//!
//!     cargo run -p a2app-server --example mcp_tools_size
//!
//! Sizes are the bytes of the JSON-RPC response body over real HTTP. Tokens
//! are bytes / 4 (the usual rule of thumb for GPT-style BPE on English and
//! JSON), and, when `tests/mcp/setup.sh` has installed it, a real count with
//! OpenAI's o200k_base and cl100k_base encodings (npm `gpt-tokenizer`, run by
//! `tests/mcp/count_tokens.mjs`). The compact surface must stay under 1,500
//! tokens by every count and grow by less than 5% between the two apps; the
//! exit code says whether it did.

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark program: a panic is a failed run

use a2app_core::{App, OpenOptions};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const BUDGET_TOKENS: usize = 1500;
const MAX_GROWTH_PERCENT: f64 = 5.0;

#[tokio::main]
async fn main() {
    let kanban = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kanban");
    let out = tempfile::tempdir().unwrap();
    let mut rows = Vec::new();
    for (name, extra) in [("examples/kanban", 0), ("kanban + 20 entities", 20)] {
        let body = measure(&kanban, extra).await;
        let file = out.path().join(format!("{extra}.json"));
        std::fs::write(&file, &body).unwrap();
        rows.push((name, body.len(), tokenize(&file)));
    }
    println!("{:<24} {:>7} {:>12} {:>8} {:>8}", "tools/list of", "bytes", "bytes/4", "o200k", "cl100k");
    let mut worst = 0;
    for (name, bytes, real) in &rows {
        let (o, c) = real.map(|(o, c)| (o.to_string(), c.to_string())).unwrap_or(("-".into(), "-".into()));
        println!("{name:<24} {bytes:>7} {:>12} {o:>8} {c:>8}", bytes / 4);
        worst = worst.max(bytes / 4).max(real.map(|(o, c)| o.max(c)).unwrap_or(0));
    }
    if rows.iter().any(|r| r.2.is_none()) {
        println!("(o200k/cl100k need tests/mcp/setup.sh: the gpt-tokenizer npm package)");
    }
    let growth = (rows[1].1 as f64 - rows[0].1 as f64) / rows[0].1 as f64 * 100.0;
    println!(
        "growth: {growth:.2}% (limit {MAX_GROWTH_PERCENT}%); largest count: {worst} tokens (budget {BUDGET_TOKENS})"
    );
    let ok = worst < BUDGET_TOKENS && growth < MAX_GROWTH_PERCENT;
    println!("{}", if ok { "within budget" } else { "OVER BUDGET" });
    if !ok {
        std::process::exit(1);
    }
}

/// Serves a copy of the app with `extra` more entities and returns the body of
/// its `tools/list` answer.
async fn measure(app_dir: &Path, extra: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    for file in ["app.toml", "operations.json"] {
        if app_dir.join(file).exists() {
            std::fs::copy(app_dir.join(file), dir.path().join(file)).unwrap();
        }
    }
    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(app_dir.join("schema.json")).unwrap()).unwrap();
    for i in 0..extra {
        schema["entities"][format!("extra_entity_{i:02}")] = json!({
            "label": "name",
            "fields": {
                "name": {"type": "string", "required": true, "max": 200},
                "amount": {"type": "number", "min": 0},
                "state": {"type": "enum", "values": ["open", "closed"]},
                "owner": {"type": "ref", "entity": "members"},
                "due": {"type": "datetime"}
            }
        });
    }
    std::fs::write(dir.path().join("schema.json"), schema.to_string()).unwrap();
    let def = a2app_core::app::load(dir.path()).expect("the app loads");
    assert_eq!(def.schema.entities.len(), 3 + extra);
    let (app, _) = App::open(def, OpenOptions::default()).expect("the app opens");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(a2app_server::run(Arc::new(app), listener, async move {
        let _ = stopped.await;
    }));
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    // This workspace's reqwest brings no TLS provider of its own (see
    // docs/decisions/0003); one must be installed before a client is built.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let body = reqwest::Client::new()
        .post(&url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .body(request.to_string())
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(body.contains("\"tools\""), "{body}");
    let _ = stop.send(());
    let _ = server.await;
    body
}

/// o200k_base and cl100k_base counts, when node and gpt-tokenizer are there.
fn tokenize(file: &Path) -> Option<(usize, usize)> {
    let mcp = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/mcp");
    if !mcp.join("node_modules/gpt-tokenizer").is_dir() {
        return None;
    }
    let out = std::process::Command::new("node").arg(mcp.join("count_tokens.mjs")).arg(file).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut counts = text.split_whitespace().map(|n| n.parse::<usize>().ok());
    Some((counts.next()??, counts.next()??))
}
