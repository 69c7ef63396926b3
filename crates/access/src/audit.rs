//! `logs/agent-actions.jsonl`: one line per agent write, for people to read.
//!
//! The authoritative audit entry is written by the store in the write's own
//! transaction; this file is its human-facing copy, appended after the
//! commit. It records who, what and which fields, never field values.

use protocol::receipt::Receipt;
use serde_json::Value;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::Mutex;

pub struct AgentLog {
    path: PathBuf,
    file: Mutex<Option<File>>,
}

impl AgentLog {
    pub fn new(path: PathBuf) -> AgentLog {
        AgentLog { path, file: Mutex::new(None) }
    }

    /// Appends one line for a write; a failure is logged, never fatal to the write.
    pub fn append(&self, receipt: &Receipt) {
        /// One line of the file, serialized straight from the receipt.
        #[derive(serde::Serialize)]
        struct Line<'a> {
            at: &'a str,
            agent: &'a Option<String>,
            caller: &'a str,
            action: &'a str,
            entity: &'a str,
            id: &'a str,
            fields: Vec<&'a String>,
            receipt: &'a str,
        }
        let line = Line {
            at: &receipt.at,
            agent: &receipt.agent,
            caller: &receipt.caller,
            action: &receipt.action,
            entity: &receipt.entity,
            id: &receipt.id,
            fields: receipt.fields.keys().collect(),
            receipt: &receipt.text,
        };
        // One buffer, one write(2): `writeln!` on a Value issued a syscall
        // per token (serde_json's Display writes piecewise).
        let Ok(mut buf) = serde_json::to_vec(&line) else { return };
        buf.push(b'\n');
        let mut guard = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if guard.is_none() {
            match OpenOptions::new().create(true).append(true).open(&self.path) {
                Ok(f) => *guard = Some(f),
                Err(e) => {
                    tracing::error!(path = %self.path.display(), error = %e, "cannot open the agent log");
                    return;
                }
            }
        }
        if let Some(file) = guard.as_mut()
            && let Err(e) = file.write_all(&buf)
        {
            tracing::error!(error = %e, "cannot append to the agent log");
        }
    }

    /// The first `limit` lines written after `since` (wire datetime), with
    /// the rest of the last one's millisecond, or without `since` the newest
    /// `limit`; in the order they were written.
    pub fn read(&self, since: Option<&str>, limit: usize) -> std::io::Result<Vec<Value>> {
        let Some(since) = since else { return self.tail(limit) };
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        // Past `limit`, the lines of the last one's millisecond still come,
        // so a reader passing the last `at` it saw as `since` skips none.
        let mut lines: Vec<Value> = Vec::new();
        let mut last_at: Option<String> = None;
        for line in BufReader::new(file).lines() {
            let Ok(v) = serde_json::from_str::<Value>(&line?) else { continue };
            let Some(at) = v.get("at").and_then(Value::as_str).filter(|at| *at > since).map(str::to_owned) else {
                continue;
            };
            match &last_at {
                Some(full) if *full != at => continue,
                _ => {}
            }
            lines.push(v);
            if lines.len() >= limit && last_at.is_none() {
                last_at = Some(at);
            }
        }
        Ok(lines)
    }

    /// The newest `limit` lines, oldest first.
    pub fn tail(&self, limit: usize) -> std::io::Result<Vec<Value>> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut lines: std::collections::VecDeque<Value> = std::collections::VecDeque::with_capacity(limit);
        for line in BufReader::new(file).lines() {
            let Ok(v) = serde_json::from_str::<Value>(&line?) else { continue };
            if lines.len() == limit {
                lines.pop_front();
            }
            lines.push_back(v);
        }
        Ok(lines.into())
    }
}
