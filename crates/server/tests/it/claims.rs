//! The claim gate over HTTP: the labeled corpus (`crates/claims/tests/corpus.json`,
//! its format in `a2app_claims::corpus`) made of real writes through a real
//! server, then `POST /api/_a2app/claims`; and the endpoint's own contract
//! (bad input, the turn's cursor, what the person sees).
//!
//! Each case gets a fresh copy of its example app. The seed records are
//! written by the agent token under another agent name, so they are no part
//! of the turn; each step is written by the agent token as `corpus`, one
//! second after the step before it, and must be answered as the case says
//! (stored, a replay, or refused with exactly these codes). A job the case
//! needs finished is waited for; one it needs running is slowed so it stays
//! running. The run prints precision and recall (a positive is a message
//! that must be withheld) and fails on any case answered otherwise.

use crate::TestApp;
use a2app_claims::corpus::{self, Case, Expect, Step, StepAction};
use protocol::claim::{Reason, Verdict};
use protocol::operation::JobState;
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

const CORPUS: &str = include_str!("../../../claims/tests/corpus.json");
/// The agent every case's steps are written as.
const AGENT: &str = "corpus";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The app's operations.json with every `export` job paced for the case: as
/// fast as it goes when the case needs it finished, else slow enough to
/// still be running when the message is checked.
fn operations(dir: &Path, finish: bool) -> Option<String> {
    let text = std::fs::read_to_string(dir.join("operations.json")).ok()?;
    let mut ops: Vec<Value> = serde_json::from_str(&text).expect("operations.json");
    for op in &mut ops {
        if op["executor"]["kind"] == "job" {
            op["executor"]["pace"] = json!(if finish { "0ms" } else { "60s" });
        }
    }
    Some(Value::Array(ops).to_string())
}

/// Replaces every `@alias` string, anywhere in `value`, by the id it names.
fn resolve(value: &Value, ids: &HashMap<String, String>) -> Result<Value, String> {
    Ok(match value {
        Value::String(s) if s.starts_with('@') => {
            Value::String(ids.get(&s[1..]).cloned().ok_or_else(|| format!("unknown alias {s}"))?)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| resolve(v, ids)).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| Ok((k.clone(), resolve(v, ids)?))).collect::<Result<_, String>>()?)
        }
        other => other.clone(),
    })
}

async fn send(
    t: &TestApp,
    agent: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> (u16, Value) {
    let mut req = t
        .http
        .request(method.parse().expect("method"), format!("{}{path}", t.url))
        .header("X-LUI-Token", &t.token)
        .header("X-LUI-Agent", agent);
    if let Some(key) = key {
        req = req.header("Idempotency-Key", key);
    }
    t.send(req, body).await
}

/// The codes of an error answer: its violations', else its own.
fn codes(body: &Value) -> BTreeSet<String> {
    let listed: BTreeSet<String> = body["violations"]
        .as_array()
        .map(|vs| vs.iter().filter_map(|v| v["code"].as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    if listed.is_empty() { body["code"].as_str().map(str::to_owned).into_iter().collect() } else { listed }
}

/// Makes one step's request and holds it to the answer the case expects.
async fn step(t: &TestApp, n: usize, s: &Step, ids: &mut HashMap<String, String>) -> Result<(), String> {
    t.clock
        .set(crate::NOW.parse::<jiff::Timestamp>().expect("instant") + jiff::SignedDuration::from_secs(n as i64 + 1));
    let body = resolve(&Value::Object(s.body.clone()), ids)?;
    let record = || -> Result<String, String> {
        let r = s.record.as_deref().ok_or("update and delete name a record")?;
        Ok(match r.strip_prefix('@') {
            Some(alias) => ids.get(alias).cloned().ok_or_else(|| format!("unknown alias {r}"))?,
            None => r.to_owned(),
        })
    };
    let records = format!("/api/collections/{}/records", s.entity);
    let (method, path, body) = match s.action {
        StepAction::Create => ("POST", records, Some(body)),
        StepAction::Update => ("PATCH", format!("{records}/{}", record()?), Some(body)),
        StepAction::Delete => ("DELETE", format!("{records}/{}", record()?), None),
        StepAction::Run => ("POST", format!("/api/ops/{}", s.operation.as_deref().unwrap_or_default()), Some(body)),
    };
    let (status, answer) = send(t, AGENT, method, &path, body, s.idempotency_key.as_deref()).await;
    let got = codes(&answer);
    match &s.expect {
        Expect::Stored if (200..300).contains(&status) => {}
        Expect::Replay if got.contains("duplicate_request") => return Ok(()),
        Expect::Refused(want) if status >= 400 && got == want.iter().map(|c| c.as_str().to_owned()).collect() => {
            return Ok(());
        }
        want => return Err(format!("step {}: expected {want:?}, the app answered {status} {answer}", n + 1)),
    }
    if let (StepAction::Create, Some(alias)) = (s.action, &s.alias) {
        ids.insert(alias.clone(), answer["id"].as_str().unwrap_or_default().to_owned());
    }
    if let (Some(job), Some(state)) = (answer["jobId"].as_str(), s.job) {
        wait_for(t, job, state).await.map_err(|e| format!("step {}: {e}", n + 1))?;
    }
    Ok(())
}

async fn wait_for(t: &TestApp, job: &str, state: JobState) -> Result<(), String> {
    for _ in 0..500 {
        let (_, now) = send(t, AGENT, "GET", &format!("/api/_jobs/{job}"), None, None).await;
        if now["state"] == state.as_str() {
            return Ok(());
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    Err(format!("job {job} never reached {}", state.as_str()))
}

/// One case through a fresh server: its verdict, its claims as the corpus
/// writes them ("update backed", "delete wrong_target"), and whether the
/// message was found unreadable.
async fn outcome(case: &Case, app: &corpus::App) -> Result<(Verdict, Vec<String>, bool), String> {
    let dir = workspace().join(&app.dir);
    let finish = case.setup.iter().any(|s| s.job.is_some_and(|j| j != JobState::Running && j != JobState::Queued));
    let ops = operations(&dir, finish);
    let t = TestApp::example(&dir, ops.as_deref()).await;
    let mut ids = HashMap::new();
    t.clock.set(crate::NOW.parse::<jiff::Timestamp>().expect("instant") - jiff::SignedDuration::from_mins(5));
    for seed in &app.seed {
        let body = resolve(&Value::Object(seed.body.clone()), &ids)?;
        let path = format!("/api/collections/{}/records", seed.entity);
        let (status, made) = send(&t, "seed", "POST", &path, Some(body), None).await;
        if status != 200 {
            return Err(format!("seed {}: {status} {made}", seed.alias));
        }
        ids.insert(seed.alias.clone(), made["id"].as_str().unwrap_or_default().to_owned());
    }
    for (n, s) in case.setup.iter().enumerate() {
        step(&t, n, s, &mut ids).await?;
    }
    let (status, check) =
        send(&t, AGENT, "POST", "/api/_a2app/claims", Some(json!({"message": case.message})), None).await;
    if status != 200 {
        return Err(format!("the check answered {status} {check}"));
    }
    let check: protocol::claim::Check = serde_json::from_value(check).map_err(|e| e.to_string())?;
    let claims = check
        .claims
        .iter()
        .map(|c| format!("{} {}", c.kind.as_str(), c.reason.map(Reason::as_str).unwrap_or("backed")))
        .collect();
    let unreadable = check.discrepancies.iter().any(|d| d.reason == Reason::UnreadableLanguage);
    Ok((check.verdict, claims, unreadable))
}

/// Runs the cases of one app and returns (failures, true/false positives/negatives).
async fn run(app_name: &str) -> (Vec<String>, [usize; 4], usize) {
    let corpus = corpus::parse(CORPUS).expect("corpus.json parses");
    let app = corpus.apps.get(app_name).expect("the app is in the corpus");
    let (mut failures, mut counts, mut cases) = (Vec::new(), [0usize; 4], 0);
    for case in corpus.cases.iter().filter(|c| c.app == app_name) {
        cases += 1;
        let (verdict, claims, unreadable) = match outcome(case, app).await {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{}: {e}", case.name));
                continue;
            }
        };
        let slot = match (case.is_false_claim(), verdict == Verdict::Withheld) {
            (true, true) => 0,
            (false, true) => 1,
            (true, false) => 2,
            (false, false) => 3,
        };
        counts[slot] += 1;
        if verdict != case.verdict || claims != case.claims || unreadable != case.unreadable {
            failures.push(format!(
                "{}: want {:?} {:?}, got {:?} {:?}\n    message: {}",
                case.name,
                case.verdict,
                case.claims,
                verdict,
                claims,
                case.message.replace('\n', "\\n")
            ));
        }
    }
    (failures, counts, cases)
}

fn report(app: &str, (failures, [tp, fp, fn_, tn], cases): (Vec<String>, [usize; 4], usize)) {
    let precision = tp as f64 / (tp + fp).max(1) as f64;
    let recall = tp as f64 / (tp + fn_).max(1) as f64;
    let honest = fp + tn;
    println!(
        "{app} over HTTP: {cases} cases; precision {precision:.3}, recall {recall:.3} \
         (withheld rightly {tp}, wrongly {fp}; passed rightly {tn}, wrongly {fn_}); honest withheld {:.1}%",
        100.0 * fp as f64 / honest.max(1) as f64
    );
    assert!(cases >= 60, "{app}: {cases} cases");
    assert!(failures.is_empty(), "{} of {cases} {app} cases fail:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(fn_, 0, "no false claim passes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kanban_corpus_holds_over_http() {
    report("kanban", run("kanban").await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_expenses_corpus_holds_over_http() {
    report("expenses", run("expenses").await);
}

/// A check by the agent token as `AGENT`.
async fn check(t: &TestApp, body: Value) -> (u16, Value) {
    send(t, AGENT, "POST", "/api/_a2app/claims", Some(body), None).await
}

#[tokio::test]
async fn bad_input_is_refused_with_a_code_and_nothing_is_kept() {
    let t = TestApp::kanban().await;
    let long = "a".repeat(64 * 1024 + 1);
    for (body, code, field) in [
        (json!({}), "required_field", "message"),
        (json!({"message": 7}), "invalid_string", "message"),
        (json!({"message": long}), "too_long", "message"),
        (json!({"message": "Done.", "since": "last week"}), "invalid_param", "since"),
        (json!({"message": "Done.", "since": 3}), "invalid_param", "since"),
        (json!({"message": "Done.", "to": "ana"}), "unknown_field", "to"),
    ] {
        let (status, answer) = check(&t, body).await;
        assert_eq!(status, 400, "{answer}");
        assert_eq!(crate::violations(&answer), crate::pairs(&[(code, field)]), "{answer}");
    }
    let exact = "a".repeat(64 * 1024);
    assert_eq!(check(&t, json!({"message": exact})).await.0, 200);
    // Without the token, nobody's turn is checked.
    let (status, _) = t.send(t.http.post(format!("{}/api/_a2app/claims", t.url)), Some(json!({"message": "x"}))).await;
    assert_eq!(status, 401);
    let (_, kept) = t.call("GET", "/api/_a2app/claims", None).await;
    assert_eq!(kept["items"].as_array().map(Vec::len), Some(1), "only the check that was made: {kept}");
}

/// A list made by the person's page, so it is no agent's write.
async fn to_do(t: &TestApp) -> String {
    let req = t.http.post(format!("{}/api/collections/lists/records", t.url)).header("origin", &t.url);
    let (status, list) = t.send(req, Some(json!({"name": "To Do", "position": 1}))).await;
    assert_eq!(status, 200, "{list}");
    list["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_passed_turn_closes_and_a_withheld_one_stays_open() {
    let t = TestApp::kanban().await;
    let todo = to_do(&t).await;
    let path = "/api/collections/cards/records";
    let (status, _) = send(&t, AGENT, "POST", path, Some(json!({"title": "Fix login", "list": todo})), None).await;
    assert_eq!(status, 200);
    // Claimed, refused: withheld, and the turn stays where it began.
    let card = json!({"title": "Ship it", "list": todo, "priority": "critical"});
    let (status, _) = send(&t, AGENT, "POST", path, Some(card), None).await;
    assert_eq!(status, 400);
    let (_, first) = check(&t, json!({"message": "I added 'Fix login' and 'Ship it'."})).await;
    assert_eq!(first["verdict"], "withheld", "{first}");
    let reasons: Vec<&str> =
        first["discrepancies"].as_array().unwrap().iter().map(|d| d["reason"].as_str().unwrap()).collect();
    assert_eq!(reasons, ["refused_write"]);
    assert_eq!(first["cursor"], "a0r0");
    // Corrected and written: both creates are in the still-open turn.
    let card = json!({"title": "Ship it", "list": todo, "priority": "high"});
    assert_eq!(send(&t, AGENT, "POST", path, Some(card), None).await.0, 200);
    let (_, second) = check(&t, json!({"message": "I added 'Fix login' and 'Ship it'."})).await;
    assert_eq!(second["verdict"], "pass", "{second}");
    assert_eq!(second["confirmations"].as_array().map(Vec::len), Some(2), "{second}");
    let cursor = second["cursor"].as_str().unwrap().to_owned();
    assert_ne!(cursor, "a0r0");
    // The next turn starts after them: claiming them again claims nothing written.
    let (_, third) = check(&t, json!({"message": "I added 'Fix login'."})).await;
    assert_eq!(third["verdict"], "withheld", "{third}");
    assert_eq!(third["discrepancies"][0]["reason"], "no_write");
    assert_eq!(third["cursor"], cursor.as_str());
    // `since` reopens any point: a time, or a cursor.
    let (_, again) = check(&t, json!({"message": "I added 'Fix login'.", "since": "2026-07-30 00:00:00.000Z"})).await;
    assert_eq!(again["verdict"], "pass", "{again}");
    // Another agent's turn is its own: it wrote nothing.
    let (_, other) =
        send(&t, "someone-else", "POST", "/api/_a2app/claims", Some(json!({"message": "I added 'Fix login'."})), None)
            .await;
    assert_eq!(other["verdict"], "withheld", "{other}");
    // The person sees every check, newest first, and the refused write.
    let (_, kept) = t.call("GET", "/api/_a2app/claims?limit=10", None).await;
    let verdicts: Vec<&str> =
        kept["items"].as_array().unwrap().iter().map(|c| c["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["withheld", "pass", "withheld", "pass", "withheld"]);
    assert_eq!(kept["items"][0]["agent"], "someone-else");
    let (_, refused) = t.call("GET", "/api/_a2app/refusals", None).await;
    let items = refused["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{refused}");
    assert_eq!(items[0]["action"], "create");
    assert_eq!(items[0]["entity"], "cards");
    assert_eq!(items[0]["agent"], AGENT);
    assert_eq!(items[0]["body"]["priority"], "critical");
    assert_eq!(items[0]["violations"][0]["code"], "invalid_enum");
    assert_eq!(items[0]["violations"][0]["field"], "priority");
}

#[tokio::test]
async fn the_mcp_tool_checks_the_same_turn() {
    let t = TestApp::kanban().await;
    let todo = to_do(&t).await;
    // Written and checked by the same credential, through MCP.
    let card = json!({"entity": "cards", "record": {"title": "Fix login", "list": todo}});
    assert_eq!(crate::mcp::tool(&t, "create", card).await["isError"], false);
    let result =
        crate::mcp::tool(&t, "check_claims", json!({"message": "I added 'Fix login' and deleted 'Old'."})).await;
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["structuredContent"]["verdict"], "withheld");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("withheld: do not send the message.\n- "), "{text}");
    let passed = crate::mcp::tool(&t, "check_claims", json!({"message": "I added 'Fix login'."})).await;
    assert_eq!(passed["structuredContent"]["verdict"], "pass", "{passed}");
    assert_eq!(passed["structuredContent"]["confirmations"].as_array().map(Vec::len), Some(1));
}
