//! A surface's state in a Loro document, stored as its snapshot bytes.
//!
//! Layout of the document: a root map `components` (component id → the
//! component as a plain value), a root list `order` (the ids in the order
//! they came) and a root map `data` (each top-level key of the data model →
//! its value). Writing a surface changes only the entries that differ, so
//! the document's history holds each change once and a person's typing in one
//! field and an agent's update of another merge as two keys of `data`.

use crate::check::Surface;
use indexmap::IndexMap;
use loro::{ExportMode, LoroDoc, LoroValue};
use serde_json::{Map, Value};

/// Why a document could not be read or written. The detail is for the log.
#[derive(Debug)]
pub struct DocError(pub String);

impl std::fmt::Display for DocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "surface document: {}", self.0)
    }
}

impl std::error::Error for DocError {}

fn fail(e: impl std::fmt::Display) -> DocError {
    DocError(e.to_string())
}

pub struct Doc(LoroDoc);

/// The app's one writer edits every surface, always as this peer: a fresh
/// random peer per load would add an entry to the version vector each time.
const WRITER: u64 = 1;

impl Default for Doc {
    fn default() -> Self {
        let doc = LoroDoc::new();
        let _ = doc.set_peer_id(WRITER);
        Doc(doc)
    }
}

impl Doc {
    pub fn from_snapshot(bytes: &[u8]) -> Result<Doc, DocError> {
        let doc = LoroDoc::from_snapshot(bytes).map_err(fail)?;
        doc.set_peer_id(WRITER).map_err(fail)?;
        Ok(Doc(doc))
    }

    /// The state without its history (a shallow snapshot at the current
    /// version): what is kept is the surface, and a row does not grow with
    /// every change ever made to it.
    pub fn snapshot(&self) -> Result<Vec<u8>, DocError> {
        let now = self.0.oplog_frontiers();
        if now.is_empty() {
            return self.0.export(ExportMode::Snapshot).map_err(fail);
        }
        self.0.export(ExportMode::shallow_snapshot(&now)).map_err(fail)
    }

    /// The surface the document holds now.
    pub fn read(&self) -> Result<Surface, DocError> {
        let components = json(&self.0.get_map("components").get_value())?;
        let order = json(&self.0.get_list("order").get_value())?;
        let data = json(&self.0.get_map("data").get_value())?;
        let mut out = Surface { components: IndexMap::new(), data_model: Value::Object(Map::new()) };
        for id in order.as_array().into_iter().flatten().filter_map(Value::as_str) {
            if let Some(c) = components.get(id) {
                out.components.insert(id.to_owned(), c.clone());
            }
        }
        if let Value::Object(data) = data {
            out.data_model = Value::Object(data);
        }
        Ok(out)
    }

    /// Makes the document hold `surface`, in one commit of only what differs.
    pub fn write(&self, surface: &Surface) -> Result<(), DocError> {
        let old = self.read()?;
        let components = self.0.get_map("components");
        for (id, c) in &surface.components {
            if old.components.get(id) != Some(c) {
                components.insert(id, loro(c)?).map_err(fail)?;
            }
        }
        for id in old.components.keys().filter(|id| !surface.components.contains_key(*id)) {
            components.delete(id).map_err(fail)?;
        }
        let ids: Vec<&String> = surface.components.keys().collect();
        if old.components.keys().collect::<Vec<_>>() != ids {
            let order = self.0.get_list("order");
            order.clear().map_err(fail)?;
            for id in ids {
                order.push(id.as_str()).map_err(fail)?;
            }
        }
        let data = self.0.get_map("data");
        let empty = Map::new();
        let (now, before) =
            (surface.data_model.as_object().unwrap_or(&empty), old.data_model.as_object().unwrap_or(&empty));
        for (k, v) in now {
            if before.get(k) != Some(v) {
                data.insert(k, loro(v)?).map_err(fail)?;
            }
        }
        for k in before.keys().filter(|k| !now.contains_key(*k)) {
            data.delete(k).map_err(fail)?;
        }
        self.0.commit();
        Ok(())
    }

    /// How many operations the document has recorded (its history's length).
    pub fn operations(&self) -> usize {
        self.0.len_ops()
    }
}

/// JSON as a Loro value, converted directly: a string is always a string
/// (Loro's serde reading takes some strings for container ids). Depth is
/// bounded by the checks before (`check::MAX_DEPTH`).
fn loro(v: &Value) -> Result<LoroValue, DocError> {
    Ok(LoroValue::from(v.clone()))
}

fn json(v: &LoroValue) -> Result<Value, DocError> {
    serde_json::to_value(v).map_err(fail)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn surface(title: &str) -> Surface {
        let mut s = Surface::default();
        s.components.insert("root".into(), json!({"id": "root", "component": "Column", "children": ["t"]}));
        s.components.insert("t".into(), json!({"id": "t", "component": "Text", "text": {"path": "/title"}}));
        s.data_model = json!({"title": title, "form": {"points": 3, "done": false, "labels": ["bug"]}});
        s
    }

    #[test]
    fn a_surface_survives_the_snapshot_bytes_exactly() {
        let doc = Doc::default();
        let s = surface("Ada");
        doc.write(&s).unwrap();
        let again = Doc::from_snapshot(&doc.snapshot().unwrap()).unwrap();
        assert_eq!(again.read().unwrap(), s);
        assert_eq!(again.read().unwrap().data_model["form"]["points"], json!(3));
    }

    #[test]
    fn only_what_differs_is_written() {
        let doc = Doc::default();
        doc.write(&surface("Ada")).unwrap();
        let after_first = doc.operations();
        doc.write(&surface("Ada")).unwrap();
        assert_eq!(doc.operations(), after_first, "the same surface again records nothing");
        let mut s = surface("Grace");
        s.components.shift_remove("t");
        s.components.insert("u".into(), json!({"id": "u", "component": "Divider"}));
        doc.write(&s).unwrap();
        assert_eq!(doc.read().unwrap(), s);
        assert!(doc.operations() > after_first);
    }

    #[test]
    fn strings_stay_strings_and_the_kept_bytes_do_not_grow_with_history() {
        let doc = Doc::default();
        let mut s = surface("\u{1f99c}:cid:root-x:Map");
        doc.write(&s).unwrap();
        assert_eq!(Doc::from_snapshot(&doc.snapshot().unwrap()).unwrap().read().unwrap(), s);
        let mut doc = doc;
        let mut sizes = Vec::new();
        for i in 0..200 {
            s.data_model["title"] = json!(format!("{i}{}", "x".repeat(4000)));
            doc.write(&s).unwrap();
            let bytes = doc.snapshot().unwrap();
            sizes.push(bytes.len());
            doc = Doc::from_snapshot(&bytes).unwrap();
        }
        assert_eq!(doc.read().unwrap(), s);
        assert!(sizes[199] < sizes[0] * 2, "{} bytes after 200 changes, {} after one", sizes[199], sizes[0]);
    }

    #[test]
    fn garbage_bytes_are_an_error_not_a_panic() {
        assert!(Doc::from_snapshot(b"not a loro snapshot").is_err());
        assert!(Doc::from_snapshot(&[]).is_err());
    }
}
