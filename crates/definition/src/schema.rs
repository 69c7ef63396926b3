//! Loading and validating `schema.json` into the protocol's schema types.
//!
//! Validation reports every problem at once, each with its JSONPath, and never
//! stops at the first. A schema that loads here is one the store can migrate to
//! and the guard can enforce: names are valid, refs point at entities that
//! exist, enums have values, labels and indexes name real fields.

use crate::document::Node;
use crate::problem::{Problem, Problems, index, join};
use indexmap::IndexMap;
use protocol::schema::{Entity, Field, FieldType, Rules, Schema, StringFormat};
use serde_json::{Map, Value};
use std::collections::HashSet;

pub const FILE: &str = "schema.json";

/// Names that would collide with a system key of a record.
const RESERVED_FIELD_NAMES: &[&str] = &["id", "created", "updated", "collectionid", "collectionname", "expand"];

/// Table names SQLite keeps for itself, and those of the runtime's indexes
/// (which share the tables' namespace).
const RESERVED_ENTITY_PREFIXES: &[&str] = &["sqlite_", "a2app_"];

/// The parts of describe that `describe/{path}` reaches by name: an entity
/// named like one would be answered with that part instead of itself.
const RESERVED_ENTITY_NAMES: &[&str] = &["app", "entities", "operations", "conventions", "requests"];

/// `^[a-z][a-z0-9_]*$`, at most 63 characters.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z'))
        && name.len() <= 63
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

/// PocketBase's deterministic collection id: `pbc_` + CRC-32 of type and name.
pub fn collection_id(entity: &str) -> String {
    format!("pbc_{}", crc32fast::hash(format!("base{entity}").as_bytes()))
}

/// The entity `id_or_name` names, as PocketBase's routes take either: its
/// name, or its collection id (which the SDK builds file URLs from).
pub fn entity_named<'s>(schema: &'s Schema, id_or_name: &str) -> Option<&'s str> {
    if let Some((name, _)) = schema.entities.get_key_value(id_or_name) {
        return Some(name.as_str());
    }
    if !id_or_name.starts_with("pbc_") {
        return None;
    }
    schema.entities.keys().map(String::as_str).find(|name| collection_id(name) == id_or_name)
}

/// A fingerprint that changes exactly when the schema changes (`schemaVersion`).
pub fn fingerprint(schema: &Schema) -> String {
    // The canonical serialization of the typed schema: formatting and key order
    // of the file do not matter, any change of meaning does.
    let canonical = serde_json::to_string(schema).unwrap_or_default();
    format!("sv_{:08x}", crc32fast::hash(canonical.as_bytes()))
}

/// Parses and validates schema text. `multi_user` allows `rules`.
pub fn parse(text: &str, multi_user: bool) -> Result<Schema, Problems> {
    parse_checked(text, multi_user, None)
}

/// [`parse`], with every rule judged by `fits` too, in the same answer as
/// the schema's other problems.
pub fn parse_checked(text: &str, multi_user: bool, fits: Option<crate::Fits>) -> Result<Schema, Problems> {
    let mut problems = Problems::new(FILE);
    let root = match Node::parse(text) {
        Ok(root) => root,
        Err(e) => {
            problems.push("$", e);
            return Err(problems);
        }
    };
    let schema = validate(&root, multi_user, &mut problems);
    if let Some(fits) = fits {
        problems.list.extend(check_rules(&schema, fits));
    }
    if problems.is_empty() { Ok(schema) } else { Err(problems) }
}

fn validate(root: &Node, multi_user: bool, problems: &mut Problems) -> Schema {
    let mut schema = Schema::default();
    let Node::Object(members) = root else {
        problems.push("$", format!("expected an object with \"entities\", got {}", root.kind()));
        return schema;
    };
    let mut entities_node = None;
    for (key, node) in members {
        match key.as_str() {
            "entities" => entities_node = Some(node),
            "$schema" | "description" => {}
            other => {
                problems.push(join("$", other), format!("unknown key \"{other}\" (allowed: entities, description)"))
            }
        }
    }
    let Some(entities_node) = entities_node else {
        problems.push("$", "missing \"entities\"");
        return schema;
    };
    let Node::Object(entity_members) = entities_node else {
        problems.push("$.entities", format!("expected an object of entities, got {}", entities_node.kind()));
        return schema;
    };
    let mut names: HashSet<&str> = entity_members.iter().map(|(k, _)| k.as_str()).collect();
    if multi_user {
        // Multi-user apps always have their users; refs to them are valid.
        names.insert(crate::users::ENTITY);
    }
    for (name, node) in entity_members {
        let path = join("$.entities", name);
        if !is_valid_name(name) {
            problems.push(&path, format!("bad entity name \"{name}\": names match ^[a-z][a-z0-9_]*$"));
        } else if name.contains("_via_") {
            problems.push(&path, format!("bad entity name \"{name}\": \"_via_\" is reserved for back-relations"));
        } else if RESERVED_ENTITY_NAMES.contains(&name.as_str()) {
            problems
                .push(&path, format!("bad entity name \"{name}\": describe/{name} names a part of describe itself"));
        } else if let Some(prefix) = RESERVED_ENTITY_PREFIXES.iter().find(|p| name.starts_with(*p)) {
            problems.push(&path, format!("bad entity name \"{name}\": \"{prefix}\" starts the database's own names"));
        }
        if schema.entities.contains_key(name) {
            problems.push(&path, format!("duplicate entity \"{name}\""));
            continue;
        }
        if let Some(entity) = entity(node, &path, &names, multi_user, problems) {
            schema.entities.insert(name.clone(), entity);
        }
    }
    if multi_user {
        let declared = schema.entities.shift_remove(crate::users::ENTITY);
        if let Some(d) = &declared {
            for reserved in crate::users::system_fields()
                .keys()
                .map(String::as_str)
                .chain(crate::users::SECRET_KEYS.iter().copied())
            {
                if d.fields.contains_key(reserved) {
                    problems.push(
                        join(&join("$.entities.users", "fields"), reserved),
                        format!("\"{reserved}\" is managed by the users entity of a multi-user app"),
                    );
                }
            }
        }
        schema.entities.insert_before(0, crate::users::ENTITY.to_owned(), crate::users::entity(declared));
    }
    check_index_names(&schema, problems);
    schema
}

/// The prefix of the indexes migrations manage (and the only ones they drop).
pub const INDEX_PREFIX: &str = "a2app_idx_";

/// The database name of the managed index of `table` over `columns`. Names
/// may contain `__` too, so two indexes can come out the same:
/// [`check_index_names`] refuses such a schema, as the second `CREATE INDEX`
/// would fail.
pub fn index_name(table: &str, columns: &[String]) -> String {
    format!("{INDEX_PREFIX}{table}__{}", columns.join("__"))
}

/// Every index has a name in the database built from its entity's and its
/// fields' names ([`index_name`]), and names may hold `__`, so
/// two indexes can come out with one name: the migration could not create
/// the second. A repeat of an index is reported too; a declared index on
/// `created` alone is the one every entity has, and is not.
fn check_index_names(schema: &Schema, problems: &mut Problems) {
    let created = vec!["created".to_owned()];
    // Database name -> (entity, fields, position among the declared indexes).
    let mut taken: std::collections::HashMap<String, (&str, &[String], Option<usize>)> = Default::default();
    for (entity, def) in &schema.entities {
        let path = join("$.entities", entity);
        let all = std::iter::once((None, &created)).chain(def.indexes.iter().enumerate().map(|(i, c)| (Some(i), c)));
        for (position, cols) in all {
            let name = index_name(entity, cols);
            let here = match position {
                Some(i) => index(&join(&path, "indexes"), i),
                None => path.clone(),
            };
            match taken.get(&name) {
                None => {
                    taken.insert(name, (entity, cols, position));
                }
                Some((e, c, earlier)) if *e == entity && *c == cols.as_slice() => {
                    if let Some(j) = earlier {
                        problems.push(here, format!("the same index as indexes[{j}]"));
                    }
                }
                Some((e, c, _)) => problems.push(
                    here,
                    format!(
                        "this index would be named {name} in the database, as is the index of \"{e}\" on {}; \
                         rename one of the entities or fields",
                        c.join(", ")
                    ),
                ),
            }
        }
    }
}

/// Every rule must name real fields: each is judged by `fits` (the store's
/// compiler) against the finished schema.
fn check_rules(schema: &Schema, fits: crate::Fits) -> Vec<Problem> {
    let mut problems = Problems::new(FILE);
    for (name, entity) in &schema.entities {
        let Some(rules) = &entity.rules else { continue };
        let all = [
            ("list", &rules.list),
            ("view", &rules.view),
            ("create", &rules.create),
            ("update", &rules.update),
            ("delete", &rules.delete),
        ];
        for (action, rule) in all {
            let Some(text) = rule.as_deref().filter(|t| !t.trim().is_empty()) else { continue };
            let Ok(expr) = a2app_filter::parse(text) else { continue };
            if let Err(e) = fits(schema, name, &expr, &Map::new()) {
                problems.push(
                    join(&join(&join("$.entities", name), "rules"), action),
                    format!("rule does not fit the schema: {e}"),
                );
            }
        }
    }
    problems.list
}

fn entity(
    node: &Node,
    path: &str,
    entities: &HashSet<&str>,
    multi_user: bool,
    problems: &mut Problems,
) -> Option<Entity> {
    let Node::Object(members) = node else {
        problems.push(path, format!("expected an entity object, got {}", node.kind()));
        return None;
    };
    let mut label = None;
    let mut fields = IndexMap::new();
    let mut indexes_node = None;
    let mut rules = None;
    let mut saw_fields = false;
    for (key, value) in members {
        let kpath = join(path, key);
        match key.as_str() {
            "label" => match value.as_str() {
                Some(s) => label = Some(s.to_owned()),
                None => problems.push(&kpath, format!("expected a field name, got {}", value.kind())),
            },
            "description" => {}
            "fields" => {
                saw_fields = true;
                fields = entity_fields(value, &kpath, entities, problems);
            }
            "indexes" => indexes_node = Some((value, kpath)),
            "rules" if multi_user => rules = entity_rules(value, &kpath, problems),
            "rules" => problems.push(&kpath, "rules apply only to auth_mode = \"multi-user\" apps"),
            other => problems
                .push(&kpath, format!("unknown key \"{other}\" (allowed: label, description, fields, indexes, rules)")),
        }
    }
    if !saw_fields {
        problems.push(path, "missing \"fields\"");
    }
    let known = |f: &str| fields.contains_key(f) || protocol::schema::SYSTEM_FIELDS.contains(&f);
    if let Some(l) = &label
        && !known(l)
    {
        problems.push(join(path, "label"), format!("label \"{l}\" is not a field of this entity"));
    }
    let mut indexes = Vec::new();
    if let Some((node, ipath)) = indexes_node {
        match node {
            Node::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let ip = index(&ipath, i);
                    let Node::Array(cols) = item else {
                        problems.push(&ip, format!("expected a list of field names, got {}", item.kind()));
                        continue;
                    };
                    if cols.is_empty() {
                        problems.push(&ip, "an index needs at least one field");
                    }
                    let mut names = Vec::new();
                    for (j, col) in cols.iter().enumerate() {
                        match col.as_str() {
                            Some(c) if known(c) => names.push(c.to_owned()),
                            Some(c) => problems.push(index(&ip, j), format!("\"{c}\" is not a field of this entity")),
                            None => problems.push(index(&ip, j), format!("expected a field name, got {}", col.kind())),
                        }
                    }
                    indexes.push(names);
                }
            }
            other => problems.push(&ipath, format!("expected a list of indexes, got {}", other.kind())),
        }
    }
    Some(Entity { label, fields, indexes, rules })
}

fn entity_rules(node: &Node, path: &str, problems: &mut Problems) -> Option<Rules> {
    let Node::Object(members) = node else {
        problems.push(path, format!("expected an object of rules, got {}", node.kind()));
        return None;
    };
    let mut rules = Rules::default();
    for (key, value) in members {
        let rpath = join(path, key);
        let rule = match value {
            Node::Scalar(Value::Null) => None,
            Node::Scalar(Value::String(s)) => {
                if !s.is_empty()
                    && let Err(e) = a2app_filter::parse(s)
                {
                    problems.push(&rpath, format!("rule does not parse: {e}"));
                }
                Some(s.clone())
            }
            other => {
                problems.push(&rpath, format!("expected null or a rule string, got {}", other.kind()));
                continue;
            }
        };
        match key.as_str() {
            "list" => rules.list = rule,
            "view" => rules.view = rule,
            "create" => rules.create = rule,
            "update" => rules.update = rule,
            "delete" => rules.delete = rule,
            other => {
                problems.push(&rpath, format!("unknown rule \"{other}\" (allowed: list, view, create, update, delete)"))
            }
        }
    }
    Some(rules)
}

fn entity_fields(
    node: &Node,
    path: &str,
    entities: &HashSet<&str>,
    problems: &mut Problems,
) -> IndexMap<String, Field> {
    let mut fields = IndexMap::new();
    let Node::Object(members) = node else {
        problems.push(path, format!("expected an object of fields, got {}", node.kind()));
        return fields;
    };
    for (name, node) in members {
        let fpath = join(path, name);
        if !is_valid_name(name) {
            problems.push(&fpath, format!("bad field name \"{name}\": names match ^[a-z][a-z0-9_]*$"));
        } else if RESERVED_FIELD_NAMES.contains(&name.as_str()) {
            problems.push(&fpath, format!("\"{name}\" is a system field and cannot be declared"));
        }
        if fields.contains_key(name) {
            problems.push(&fpath, format!("duplicate field \"{name}\""));
            continue;
        }
        if let Some(f) = field(node, &fpath, entities, problems) {
            fields.insert(name.clone(), f);
        }
    }
    fields
}

/// The keys each type accepts besides the common ones.
fn type_keys(type_name: &str) -> &'static [&'static str] {
    match type_name {
        "string" => &["min", "max", "pattern", "format"],
        "number" => &["min", "max", "integer"],
        "enum" | "list<enum>" => &["values"],
        "ref" | "list<ref>" => &["entity"],
        "binary" => &["maxSize", "mimeTypes"],
        _ => &[],
    }
}

const COMMON_KEYS: &[&str] = &["type", "required", "readOnly", "default", "description"];

fn field(node: &Node, path: &str, entities: &HashSet<&str>, problems: &mut Problems) -> Option<Field> {
    let Node::Object(members) = node else {
        problems.push(path, format!("expected a field object, got {}", node.kind()));
        return None;
    };
    let get = |key: &str| members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);
    let Some(type_node) = get("type") else {
        problems.push(path, format!("missing \"type\" (one of: {})", FieldType::NAMES.join(", ")));
        return None;
    };
    let Some(type_name) = type_node.as_str().filter(|t| FieldType::NAMES.contains(t)) else {
        let got = type_node.to_value();
        problems.push(join(path, "type"), format!("unknown type {got} (one of: {})", FieldType::NAMES.join(", ")));
        return None;
    };
    let allowed = type_keys(type_name);
    for (key, _) in members {
        if !COMMON_KEYS.contains(&key.as_str()) && !allowed.contains(&key.as_str()) {
            let mut all: Vec<&str> = COMMON_KEYS.to_vec();
            all.extend_from_slice(allowed);
            problems.push(
                join(path, key),
                format!("unknown key \"{key}\" for a {type_name} field (allowed: {})", all.join(", ")),
            );
        }
    }
    let before = problems.list.len();
    let uint = |key: &str, problems: &mut Problems| -> Option<u64> {
        let node = get(key)?;
        match node.to_value().as_u64() {
            Some(n) => Some(n),
            None => {
                problems.push(join(path, key), format!("expected a non-negative integer, got {}", node.to_value()));
                None
            }
        }
    };
    let num = |key: &str, problems: &mut Problems| -> Option<f64> {
        let node = get(key)?;
        match node.to_value().as_f64() {
            Some(n) => Some(n),
            None => {
                problems.push(join(path, key), format!("expected a number, got {}", node.to_value()));
                None
            }
        }
    };
    let flag = |key: &str, problems: &mut Problems| -> bool {
        match get(key).map(Node::to_value) {
            None => false,
            Some(Value::Bool(b)) => b,
            Some(other) => {
                problems.push(join(path, key), format!("expected true or false, got {other}"));
                false
            }
        }
    };
    let values = |problems: &mut Problems| -> Vec<String> {
        let vpath = join(path, "values");
        match get("values") {
            None => {
                problems.push(path, format!("{type_name} needs \"values\", a non-empty list of strings"));
                Vec::new()
            }
            Some(Node::Array(items)) if items.is_empty() => {
                problems.push(&vpath, format!("{type_name} needs at least one value"));
                Vec::new()
            }
            Some(Node::Array(items)) => {
                let mut out: Vec<String> = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some("") => problems.push(index(&vpath, i), "an enum value cannot be empty"),
                        Some(s) if out.iter().any(|o| o == s) => {
                            problems.push(index(&vpath, i), format!("duplicate value \"{s}\""))
                        }
                        Some(s) => out.push(s.to_owned()),
                        None => problems.push(index(&vpath, i), format!("expected a string, got {}", item.kind())),
                    }
                }
                out
            }
            Some(other) => {
                problems.push(&vpath, format!("expected a list of strings, got {}", other.kind()));
                Vec::new()
            }
        }
    };
    let target = |problems: &mut Problems| -> String {
        match get("entity").map(|n| (n, n.as_str())) {
            None => {
                problems.push(path, format!("{type_name} needs \"entity\", the entity it points at"));
                String::new()
            }
            Some((_, Some(e))) if entities.contains(e) => e.to_owned(),
            Some((_, Some(e))) => {
                problems.push(join(path, "entity"), format!("ref to unknown entity \"{e}\""));
                String::new()
            }
            Some((n, None)) => {
                problems.push(join(path, "entity"), format!("expected an entity name, got {}", n.kind()));
                String::new()
            }
        }
    };
    let kind = match type_name {
        "string" => {
            let min = uint("min", problems);
            let max = uint("max", problems);
            if let (Some(lo), Some(hi)) = (min, max)
                && lo > hi
            {
                problems.push(join(path, "min"), format!("min {lo} is greater than max {hi}"));
            }
            let pattern = get("pattern").and_then(|n| match n.as_str() {
                Some(p) => {
                    if let Err(e) = regex::Regex::new(p) {
                        problems.push(join(path, "pattern"), format!("pattern does not compile: {e}"));
                    }
                    Some(p.to_owned())
                }
                None => {
                    problems.push(join(path, "pattern"), format!("expected a regular expression, got {}", n.kind()));
                    None
                }
            });
            let format = get("format").and_then(|n| match n.as_str() {
                Some("YYYY-MM-DD") => Some(StringFormat::DayKey),
                Some("email") => Some(StringFormat::Email),
                Some("url") => Some(StringFormat::Url),
                _ => {
                    problems.push(
                        join(path, "format"),
                        format!("unknown format {} (one of: YYYY-MM-DD, email, url)", n.to_value()),
                    );
                    None
                }
            });
            FieldType::String { min, max, pattern, format }
        }
        "number" => {
            let min = num("min", problems);
            let max = num("max", problems);
            if let (Some(lo), Some(hi)) = (min, max)
                && lo > hi
            {
                problems.push(join(path, "min"), format!("min {lo} is greater than max {hi}"));
            }
            FieldType::Number { min, max, integer: flag("integer", problems) }
        }
        "boolean" => FieldType::Boolean,
        "datetime" => FieldType::Datetime,
        "enum" => FieldType::Enum { values: values(problems) },
        "list<enum>" => FieldType::ListEnum { values: values(problems) },
        "ref" => FieldType::Ref { entity: target(problems) },
        "list<ref>" => FieldType::ListRef { entity: target(problems) },
        "json" => FieldType::Json,
        _ => {
            let max_size = uint("maxSize", problems);
            let mime_types = match get("mimeTypes") {
                None => Vec::new(),
                Some(Node::Array(items)) => items
                    .iter()
                    .enumerate()
                    .filter_map(|(i, n)| match n.as_str() {
                        Some(s) if s.contains('/') => Some(s.to_owned()),
                        _ => {
                            problems.push(
                                index(&join(path, "mimeTypes"), i),
                                format!("expected a MIME type like \"image/png\", got {}", n.to_value()),
                            );
                            None
                        }
                    })
                    .collect(),
                Some(other) => {
                    problems
                        .push(join(path, "mimeTypes"), format!("expected a list of MIME types, got {}", other.kind()));
                    Vec::new()
                }
            };
            FieldType::Binary { max_size, mime_types }
        }
    };
    let required = flag("required", problems);
    let read_only = flag("readOnly", problems);
    let default = get("default").map(Node::to_value);
    if let Some(d) = &default
        && let Err(why) = crate::guard::check_default(&kind, d)
    {
        problems.push(join(path, "default"), format!("default {d} does not fit the field (expected {why})"));
    }
    if problems.list.len() != before {
        return None;
    }
    Some(Field { kind, required, read_only, default })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems_of(text: &str) -> Vec<String> {
        match parse(text, false) {
            Ok(_) => Vec::new(),
            Err(p) => p.list.iter().map(|p| format!("{}: {}", p.path, p.message)).collect(),
        }
    }

    #[test]
    fn the_kanban_example_is_clean() {
        let text = include_str!("../../../examples/kanban/schema.json");
        let schema = parse(text, false).unwrap_or_else(|p| panic!("{:?}", p.list));
        assert_eq!(schema.entities.keys().collect::<Vec<_>>(), ["lists", "members", "cards"]);
        let mut names: Vec<&str> =
            schema.entities.values().flat_map(|e| e.fields.values().map(|f| f.kind.name())).collect();
        names.sort();
        names.dedup();
        let mut all = FieldType::NAMES.to_vec();
        all.sort();
        assert_eq!(names, all, "the example uses every type of the vocabulary");
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let text = r#"{
          "entities": {
            "lists": { "fields": { "name": { "type": "strin" } } },
            "cards": { "label": "nope", "fields": {
                "list": { "type": "ref", "entity": "boards" },
                "Bad-Name": { "type": "string" },
                "prio": { "type": "enum", "values": [] },
                "kind": { "type": "enum" },
                "title": { "type": "string", "maxx": 3 }
            }, "indexes": [["ghost"]] },
            "lists": { "fields": {} },
            "9x": { "fields": {} }
          },
          "extra": 1
        }"#;
        assert_eq!(
            problems_of(text),
            [
                "$.extra: unknown key \"extra\" (allowed: entities, description)",
                "$.entities.lists.fields.name.type: unknown type \"strin\" (one of: string, number, boolean, datetime, enum, ref, list<enum>, list<ref>, json, binary)",
                "$.entities.cards.fields.list.entity: ref to unknown entity \"boards\"",
                "$.entities.cards.fields[\"Bad-Name\"]: bad field name \"Bad-Name\": names match ^[a-z][a-z0-9_]*$",
                "$.entities.cards.fields.prio.values: enum needs at least one value",
                "$.entities.cards.fields.kind: enum needs \"values\", a non-empty list of strings",
                "$.entities.cards.fields.title.maxx: unknown key \"maxx\" for a string field (allowed: type, required, readOnly, default, description, min, max, pattern, format)",
                "$.entities.cards.label: label \"nope\" is not a field of this entity",
                "$.entities.cards.indexes[0][0]: \"ghost\" is not a field of this entity",
                "$.entities.lists: duplicate entity \"lists\"",
                "$.entities.9x: bad entity name \"9x\": names match ^[a-z][a-z0-9_]*$",
            ]
        );
    }

    #[test]
    fn system_names_and_bad_defaults_are_refused() {
        let text = r#"{"entities": {"a": {"fields": {
            "id": {"type": "string"},
            "n": {"type": "number", "integer": true, "default": 1.5},
            "e": {"type": "enum", "values": ["x"], "default": "y"}
        }}}}"#;
        assert_eq!(
            problems_of(text),
            [
                "$.entities.a.fields.id: \"id\" is a system field and cannot be declared",
                "$.entities.a.fields.n.default: default 1.5 does not fit the field (expected a whole number)",
                "$.entities.a.fields.e.default: default \"y\" does not fit the field (expected one of: x)",
            ]
        );
    }

    #[test]
    fn names_the_database_keeps_or_could_not_tell_apart_are_refused() {
        let text = r#"{"entities": {
            "sqlite_stats": {"fields": {}},
            "a2app_idx_a__created": {"fields": {}},
            "operations": {"fields": {}},
            "a": {"fields": {"b": {"type": "string"}, "c": {"type": "string"}, "b__c": {"type": "string"}},
                  "indexes": [["created"], ["b", "c"], ["b"], ["b", "c"], ["b__c"]]},
            "a__b": {"fields": {"c": {"type": "string"}}, "indexes": [["c"]]}
        }}"#;
        assert_eq!(
            problems_of(text),
            [
                "$.entities.sqlite_stats: bad entity name \"sqlite_stats\": \"sqlite_\" starts the database's own names",
                "$.entities.a2app_idx_a__created: bad entity name \"a2app_idx_a__created\": \"a2app_\" starts the database's own names",
                "$.entities.operations: bad entity name \"operations\": describe/operations names a part of describe itself",
                "$.entities.a.indexes[3]: the same index as indexes[1]",
                "$.entities.a.indexes[4]: this index would be named a2app_idx_a__b__c in the database, as is the index of \"a\" on b, c; rename one of the entities or fields",
                "$.entities.a__b.indexes[0]: this index would be named a2app_idx_a__b__c in the database, as is the index of \"a\" on b, c; rename one of the entities or fields",
            ]
        );
    }

    #[test]
    fn fingerprint_follows_meaning_not_formatting() {
        let a = parse(r#"{"entities":{"a":{"fields":{"t":{"type":"string"}}}}}"#, false).unwrap();
        let b = parse("{ \"entities\" : { \"a\" : { \"fields\" : { \"t\" : { \"type\" : \"string\" } } } } }", false)
            .unwrap();
        let c = parse(r#"{"entities":{"a":{"fields":{"t":{"type":"string","max":3}}}}}"#, false).unwrap();
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn collection_ids_match_pocketbase() {
        // PocketBase names the sample `cards` collection pbc_3481593366.
        assert_eq!(collection_id("cards"), "pbc_3481593366");
    }
}
