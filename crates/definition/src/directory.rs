//! An app directory: `app.toml`, `schema.json`, `operations.json`,
//! `requests.json`, `ui/`, and where the runtime keeps its state (`data/`,
//! `logs/`, `.agent-token`).
//!
//! Loading validates every file and reports every problem at once. What can
//! only be judged against the store's SQL (rules and crud filters that must
//! compile) is checked on top of this by the runtime's `app::load`, which is
//! what `agent-app check` runs.

use crate::problem::Problem;
use crate::{config, operations, requests};
use protocol::schema::Schema;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A validated app definition.
#[derive(Debug, Clone)]
pub struct AppDefinition {
    pub dir: PathBuf,
    pub config: config::AppConfig,
    /// Shared with the store's writer, which needs it for every write.
    pub schema: Arc<Schema>,
    pub operations: Vec<operations::Operation>,
    /// What the app may ask an agent for (`requests.json`).
    pub requests: Vec<requests::Capability>,
}

impl AppDefinition {
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }

    pub fn ui_dir(&self) -> PathBuf {
        self.dir.join("ui")
    }

    pub fn token_path(&self) -> PathBuf {
        self.dir.join(".agent-token")
    }
}

/// Reads and validates an app directory. On failure, every problem found.
/// `fits`, when given, judges the filters the files hold (rules, crud
/// filters) against the schema once both parsed.
pub fn load(dir: &Path, fits: Option<crate::Fits>) -> Result<AppDefinition, Vec<Problem>> {
    let mut problems = Vec::new();
    let read = |name: &'static str, problems: &mut Vec<Problem>, required: bool| -> Option<String> {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => Some(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => None,
            Err(e) => {
                let message = if e.kind() == std::io::ErrorKind::NotFound {
                    "missing: every app needs this file".to_owned()
                } else {
                    format!("cannot be read: {e}")
                };
                problems.push(Problem { file: name, path: "$".into(), message });
                None
            }
        }
    };
    let config = read(config::FILE, &mut problems, true).and_then(|text| match config::parse(&text) {
        Ok(c) => Some(c),
        Err(p) => {
            problems.extend(p.list);
            None
        }
    });
    let multi_user = config.as_ref().is_some_and(|c| c.auth_mode == config::AuthMode::MultiUser);
    let schema = read(crate::schema::FILE, &mut problems, true)
        .and_then(|text| kept(crate::schema::parse_checked(&text, multi_user, fits), &mut problems));
    // The optional files: absent is empty; present, parsed against the schema.
    let operations = match read(operations::FILE, &mut problems, false) {
        None => Some(Vec::new()),
        Some(text) => kept(operations::parse(&text, schema.as_ref()), &mut problems),
    };
    let requests = match read(requests::FILE, &mut problems, false) {
        None => Some(Vec::new()),
        Some(text) => kept(requests::parse(&text, schema.as_ref()), &mut problems),
    };
    if let (Some(fits), Some(schema), Some(operations)) = (fits, schema.as_ref(), operations.as_ref()) {
        problems.extend(operations::check_filters(operations, schema, fits));
    }
    match (config, schema, operations, requests) {
        (Some(config), Some(schema), Some(operations), Some(requests)) if problems.is_empty() => {
            Ok(AppDefinition { dir: dir.to_path_buf(), config, schema: Arc::new(schema), operations, requests })
        }
        _ => Err(problems),
    }
}

/// A parsed file's value, or its problems added to `problems`.
fn kept<T>(parsed: Result<T, crate::problem::Problems>, problems: &mut Vec<Problem>) -> Option<T> {
    match parsed {
        Ok(value) => Some(value),
        Err(p) => {
            problems.extend(p.list);
            None
        }
    }
}
