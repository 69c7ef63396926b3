//! How results and failures are shown: readable text for people, one JSON
//! object on stdout with `--json` for agents, and the exit code. Text that
//! goes to anything but a terminal (an agent's shell reads a pipe) is
//! fenced as untrusted data (`display::fence`): it carries an app's words.
//!
//! Exit codes: 0 ok, 1 nothing found, 2 refused or invalid, 3 unreachable,
//! 4 a message withheld by the claim check.

use a2app_client::api::CallError;
use a2app_client::coerce::{Candidate, Problem};
use a2app_client::display::{printable, terminal};
use a2app_client::gate::GateError;
use a2app_client::session::ConnectError;
use serde_json::{Value, json};
use std::io::{IsTerminal, Write};

pub const OK: u8 = 0;
pub const NOTHING_FOUND: u8 = 1;
pub const REFUSED: u8 = 2;
pub const UNREACHABLE: u8 = 3;
/// `claims`: the message claims what the app did not store.
pub const WITHHELD: u8 = 4;

#[derive(Clone, Copy)]
pub struct Out {
    pub json: bool,
}

impl Out {
    /// A success: the JSON document, or the text for people.
    pub fn done(&self, doc: Value, text: &str) {
        // A closed pipe (`a2app … | head`) is the reader's choice, not an error.
        if self.json {
            let _ = writeln!(std::io::stdout(), "{doc}");
        } else if !text.is_empty() {
            let _ = writeln!(std::io::stdout(), "{}", shown(text.trim_end(), std::io::stdout().is_terminal()));
        }
    }

    /// [`Out::done`] for a text that fenced its app words itself (words of
    /// the client's own beside them): printed as it is.
    pub fn done_fenced(&self, doc: Value, text: &str) {
        if self.json {
            let _ = writeln!(std::io::stdout(), "{doc}");
        } else if !text.is_empty() {
            let _ = writeln!(std::io::stdout(), "{}", text.trim_end());
        }
    }

    /// A note for people only (stderr), e.g. the first-contact announcement.
    pub fn note(&self, text: &str) {
        eprintln!("{}", terminal(text));
    }

    pub fn fail(&self, f: &Failure) -> u8 {
        if self.json {
            let _ = writeln!(std::io::stdout(), "{}", f.to_json());
        } else {
            let _ = writeln!(std::io::stderr(), "{}", shown(&f.to_text(), std::io::stderr().is_terminal()));
        }
        f.exit
    }
}

/// Text for a person at a terminal, escaped; for anything else (an agent
/// reading a pipe), fenced as the app's data.
fn shown(text: &str, terminal_out: bool) -> String {
    if terminal_out {
        terminal(text)
    } else {
        a2app_client::display::fence(text, "the app (through a2app)", rand::random)
    }
}

/// Why a command did not do what was asked, and what to do about it.
#[derive(Debug, Clone)]
pub struct Failure {
    pub exit: u8,
    pub code: String,
    pub field: Option<String>,
    pub message: String,
    pub fix: Option<String>,
    pub expected: Option<String>,
    pub got: Option<Value>,
    pub candidates: Vec<Candidate>,
    /// Every problem when there are several (the first is echoed above).
    pub violations: Vec<Value>,
    /// Code-specific context (e.g. `host`, `approvalKey`, `plan`).
    pub extra: serde_json::Map<String, Value>,
}

impl Failure {
    pub fn new(exit: u8, code: &str, message: impl Into<String>) -> Failure {
        Failure {
            exit,
            code: code.into(),
            field: None,
            message: message.into(),
            fix: None,
            expected: None,
            got: None,
            candidates: vec![],
            violations: vec![],
            extra: Default::default(),
        }
    }

    pub fn fix(mut self, fix: impl Into<String>) -> Failure {
        self.fix = Some(fix.into());
        self
    }

    pub fn with(mut self, key: &str, value: Value) -> Failure {
        self.extra.insert(key.into(), value);
        self
    }

    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        for (key, value) in [
            ("field", self.field.clone().map(Value::from)),
            ("fix", self.fix.clone().map(Value::from)),
            ("expected", self.expected.clone().map(Value::from)),
            ("got", self.got.clone()),
        ] {
            if let Some(v) = value {
                error[key] = v;
            }
        }
        if !self.candidates.is_empty() {
            error["candidates"] = json!(self.candidates);
        }
        if !self.violations.is_empty() {
            error["violations"] = Value::from(self.violations.clone());
        }
        for (k, v) in &self.extra {
            error[k] = v.clone();
        }
        json!({"ok": false, "exit": self.exit, "error": error})
    }

    /// The failure for people, one part a line; every part is `printable`
    /// (most come from the app), so only these line breaks are lines.
    pub fn to_text(&self) -> String {
        let (code, message) = (printable(&self.code), printable(&self.message));
        let mut text = match &self.field {
            Some(f) => format!("error: {code} ({}): {message}", printable(f)),
            None => format!("error: {code}: {message}"),
        };
        if let Some(e) = &self.expected {
            text.push_str(&format!("\n  expected: {}", printable(e)));
        }
        if !self.candidates.is_empty() {
            text.push_str("\n  candidates:");
            for c in &self.candidates {
                text.push_str(&format!("\n    {}  {}", printable(&c.id), printable(&c.label)));
            }
        }
        for v in self.violations.iter().skip(1) {
            let text_of = |key: &str| v.get(key).and_then(Value::as_str).map(printable);
            let field = text_of("field").map(|f| format!(" ({f})")).unwrap_or_default();
            let fix = text_of("fix").map(|f| format!("; {f}")).unwrap_or_default();
            text.push_str(&format!(
                "\n  also: {}{field}: {}{fix}",
                text_of("code").unwrap_or_default(),
                text_of("message").unwrap_or_default()
            ));
        }
        if let Some(f) = &self.fix {
            text.push_str(&format!("\n  fix: {}", printable(f)));
        }
        text
    }

    /// Problems found before sending (or by a label lookup): nothing was written.
    /// A draft whose lookups failed: the labels' problems, or the call's own failure.
    pub fn unresolved(e: a2app_client::coerce::Unresolved) -> Failure {
        match e {
            a2app_client::coerce::Unresolved::Refused(problems) => Failure::problems(problems),
            a2app_client::coerce::Unresolved::Call(e) => Failure::from(e),
        }
    }

    pub fn problems(problems: Vec<Problem>) -> Failure {
        let mut all: Vec<Value> = problems.iter().map(|p| json!(p)).collect();
        let Some(first) = problems.into_iter().next() else {
            return Failure::new(REFUSED, "invalid_param", "invalid input");
        };
        let mut f = Failure::new(REFUSED, first.code.as_str(), first.message);
        f.field = first.field;
        f.fix = first.fix;
        f.expected = first.expected;
        f.got = first.got;
        f.candidates = first.candidates;
        if all.len() == 1 {
            all.clear();
        }
        f.violations = all;
        f
    }

    pub fn config(e: impl std::fmt::Display) -> Failure {
        Failure::new(REFUSED, "config", e.to_string())
            .fix("check the a2app config directory (A2APP_CONFIG_DIR or ~/.config/a2app) is writable")
    }
}

impl From<CallError> for Failure {
    fn from(e: CallError) -> Failure {
        match e {
            CallError::Unreachable { ref detail, .. } if detail.contains("certificate") => {
                Failure::new(UNREACHABLE, "unreachable", e.to_string()).fix(
                    "the app's TLS certificate is not trusted by this system; nothing was sent. Its owner must serve a valid certificate",
                )
            }
            CallError::Unreachable { .. } => Failure::new(UNREACHABLE, "unreachable", e.to_string())
                .fix("check the URL and that the app is running (a local app: agent-app serve DIR)"),
            // A write that carried a key says how to repeat it (`write::lost`);
            // anything else is looked at before it is sent again.
            CallError::OutcomeUnknown { .. } => Failure::new(UNREACHABLE, "outcome_unknown", e.to_string())
                .fix("it may or may not have been carried out: look at the app before repeating it"),
            CallError::BadArgument { field, message } => {
                let mut f = Failure::new(REFUSED, "invalid_param", message)
                    .fix("give it as a plain name, id or printable text; nothing was sent");
                f.field = field;
                f
            }
            CallError::Unexpected { status, .. } => {
                let exit = if matches!(status, 502..=504) { UNREACHABLE } else { REFUSED };
                Failure::new(exit, "unexpected_answer", e.to_string())
                    .fix("something in front of the app answered; check the URL")
            }
            CallError::UnknownRefusal { status, code, message, .. } => {
                let exit = if status == 404 { NOTHING_FOUND } else { REFUSED };
                Failure::new(exit, &code, message).fix(
                    "this a2app does not know the app's code: the app is newer; read its message, or update a2app",
                )
            }
            CallError::App(body) => {
                let code = body.code.as_str();
                // The app's backend out of reach or silent is the app's to
                // answer for, as an unreachable app is: not a refusal of the input.
                let exit = match code {
                    "not_found" => NOTHING_FOUND,
                    "backend_unavailable" | "backend_timeout" => UNREACHABLE,
                    _ => REFUSED,
                };
                let mut f = Failure::new(exit, code, body.message.clone());
                f.field = body.field.clone();
                f.expected = body.expected.clone();
                f.got = body.got.clone();
                f.fix = Some(fix_for(code, &body));
                if body.violations.len() > 1 {
                    f.violations = body.violations.iter().map(|v| json!(v)).collect();
                }
                for (k, v) in &body.extra {
                    f.extra.insert(k.clone(), v.clone());
                }
                f
            }
        }
    }
}

fn fix_for(code: &str, body: &protocol::ErrorBody) -> String {
    let field = body.field.as_deref().unwrap_or("the field");
    match code {
        "unauthorized" => "give the agent token: A2APP_TOKEN=… for one run, or store it for this URL with `a2app URL login` (reads it on stdin); a local app's token is in its .agent-token".into(),
        "forbidden_host" => "the app's owner must add this host name to [http] allowed_hosts in app.toml".into(),
        "forbidden_origin" => "send no Origin header (a2app does not), or ask the owner to add it to [http] allowed_origins".into(),
        "not_found" => "check the id: list the records to see which exist".into(),
        "unknown_entity" | "unknown_field" => "see what exists: a2app URL describe".into(),
        "unknown_operation" => "see the operations: a2app URL ops".into(),
        "rate_limited" => format!(
            "retry after {} s",
            body.extra.get("retryAfter").and_then(serde_json::Value::as_u64).unwrap_or(1)
        ),
        "version_conflict" => "read the record again and reapply the change".into(),
        "in_use" => "other records still refer to it; change or delete them first".into(),
        "not_stored" => "the app could not store that value exactly, so it wrote nothing; adjust the value".into(),
        "approval_required" => "repeat with --yes to approve".into(),
        "insufficient_scope" => format!(
            "the grant in use does not carry {}; see it: a2app URL grant",
            body.extra.get("scope").and_then(serde_json::Value::as_str).unwrap_or("that scope")
        ),
        "internal" => "the app failed without saying why (by design); try again, or tell its owner".into(),
        "backend_unavailable" => "nothing was sent to the app's backend; try again later, or tell the app's owner".into(),
        "backend_timeout" => {
            "the call reached the app's backend, so it may have run: check its effect before running it again".into()
        }
        "backend_error" => "the app's backend refused or failed the call; its message says which".into(),
        _ => match &body.expected {
            Some(e) => format!("give {field} {e}"),
            None => format!("fix {field} and repeat"),
        },
    }
}

impl From<ConnectError> for Failure {
    fn from(e: ConnectError) -> Failure {
        match e {
            ConnectError::Address(a) => Failure::new(REFUSED, "invalid_address", a.to_string())
                .fix("give the app's URL (https://…) or the name a local app registered under"),
            ConnectError::UnknownName { name, known } => {
                let list = if known.is_empty() { "none yet".to_owned() } else { known.join(", ") };
                Failure::new(NOTHING_FOUND, "unknown_app", format!("no local app is registered as \"{name}\""))
                    .fix(format!(
                        "start it with `agent-app serve DIR` (it registers itself) or give its URL; registered: {list}"
                    ))
                    .with("registered", json!(known))
            }
            ConnectError::Config(c) => Failure::config(c),
            ConnectError::Unreachable(c) => c.into(),
            ConnectError::PinChanged(c) => {
                let fix = format!(
                    "if the app at {} really was replaced on purpose, run `a2app {} forget` and try again",
                    c.origin, c.origin
                );
                Failure::new(REFUSED, "app_changed", c.to_string())
                    .fix(fix)
                    .with("pinned", json!(c.pinned))
                    .with("now", json!(c.now))
            }
            ConnectError::Gate { url, error } => gate_failure(&url, error),
            ConnectError::GrantKey { ref origin, ref grant, .. } => {
                let fix = format!(
                    "a person revokes the grant at the app; `a2app {origin} grant revoke` forgets it here; then ask again with `a2app {origin} grant ask …`"
                );
                Failure::new(REFUSED, "grant_key", e.to_string()).fix(fix).with("grant", json!(grant))
            }
            ConnectError::NotRunning { ref name, .. } => {
                let fix = format!(
                    "start it again with `agent-app serve DIR` (it registers its new URL), then repeat; {name}'s registration is out of date"
                );
                Failure::new(UNREACHABLE, "not_running", e.to_string()).fix(fix)
            }
        }
    }
}

fn gate_failure(url: &str, error: GateError) -> Failure {
    match error {
        GateError::ForbiddenHost { host } => {
            let host = host.unwrap_or_else(|| "this host".into());
            Failure::new(
                REFUSED,
                "forbidden_host",
                format!("{url} is an A2App, real and running, but it does not answer to the host name \"{host}\" (403 forbidden_host); nothing you can send will change that"),
            )
            .fix(format!("the app's owner must add \"{host}\" to [http] allowed_hosts in its app.toml"))
            .with("host", json!(host))
        }
        GateError::ProxyAuth => Failure::new(
            REFUSED,
            "proxy_auth",
            format!("{url} asked for credentials on the identity document (401); that document is public by design, so a proxy or tunnel in front of the app is asking, not the app"),
        )
        .fix("authenticate with that proxy or tunnel, or reach the app directly"),
        GateError::NotAnApp(why) => Failure::new(REFUSED, "not_an_app", format!("{url} is not an A2App: {why}"))
            .fix("check the URL: an A2App answers GET /api/_a2app with \"a2app\": true"),
        GateError::UnsupportedProtocol { got } => Failure::new(
            REFUSED,
            "unsupported_protocol",
            format!("{url} speaks A2App protocol \"{got}\"; this client speaks exactly {}", a2app_client::SUPPORTED_PROTOCOLS.join(", ")),
        )
        .fix("use an a2app client that speaks that protocol version")
        .with("protocol", json!(got)),
    }
}

/// Pads a table of rows into aligned columns.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> =
        (0..cols).map(|c| rows.iter().filter_map(|r| r.get(c)).map(|s| s.chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A value shortened for a table cell.
pub fn cell(value: &Value) -> String {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    };
    // Values come from the app (and from whoever wrote them): one line, and
    // no control character reaches the terminal.
    let one_line = printable(&text.replace(['\n', '\r'], " "));
    if one_line.chars().count() > 32 {
        format!("{}…", one_line.chars().take(31).collect::<String>())
    } else {
        one_line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An app's message cannot hide or rewrite the lines around it.
    #[test]
    fn an_apps_words_reach_the_terminal_escaped() {
        let mut f = Failure::new(REFUSED, "not_found", "gone\u{1b}[1A\u{1b}[2K\nfix: run rm -rf");
        f.field = Some("t\u{1b}[8m".into());
        assert_eq!(f.to_text(), "error: not_found (t\\u{1b}[8m): gone\\u{1b}[1A\\u{1b}[2K\\u{a}fix: run rm -rf");
        assert_eq!(cell(&Value::from("a\u{1b}[31mb\nc")), "a\\u{1b}[31mb c");
    }
}
