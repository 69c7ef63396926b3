//! The starter app `agent-app new` writes: small, valid, and a model of the format.

pub const APP_TOML: &str = r#"# Identity and settings of this app. `id` is stable across ports and restarts.
id = "{id}"
name = {name}
description = "A starter app: tasks in projects."
auth_mode = "single-user"
timezone = "UTC"

[http]
# Host names answered besides loopback, for a deployed app.
allowed_hosts = []
# Browser origins allowed to write besides the app's own page.
allowed_origins = []
"#;

pub const SCHEMA_JSON: &str = r#"{
  "entities": {
    "projects": {
      "label": "name",
      "fields": {
        "name": { "type": "string", "required": true, "max": 100 }
      }
    },
    "tasks": {
      "label": "title",
      "fields": {
        "title": { "type": "string", "required": true, "max": 200 },
        "project": { "type": "ref", "entity": "projects", "required": true },
        "due": { "type": "datetime" },
        "status": { "type": "enum", "values": ["todo", "doing", "done"], "default": "todo" },
        "done": { "type": "boolean" }
      },
      "indexes": [["project"], ["status"]]
    }
  }
}
"#;

pub const OPERATIONS_JSON: &str = "[]\n";

/// The starter's files, with `id` and `name` filled in.
pub fn files(id: &str, name: &str) -> [(&'static str, String); 3] {
    [
        // The name as a TOML string, escaped: it is the user's text.
        ("app.toml", APP_TOML.replace("{id}", id).replace("{name}", &toml::Value::from(name).to_string())),
        ("schema.json", SCHEMA_JSON.to_owned()),
        ("operations.json", OPERATIONS_JSON.to_owned()),
    ]
}

/// An app id derived from a directory name: lower case, `-` for anything odd.
pub fn id_from(dir_name: &str) -> String {
    let id: String = dir_name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .trim_matches('-')
        .chars()
        .take(64)
        .collect();
    if id.is_empty() { "app".into() } else { id }
}
