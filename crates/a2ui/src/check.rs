//! Reading and checking a batch of A2UI v1.0 messages against the catalog,
//! then applying it to the surfaces it names, all or nothing.
//!
//! Every problem of a batch is reported at once, each with a machine code and
//! the JSON Pointer of the offending value within the batch (`field`), so an
//! agent fixes them all in one retry. Bindings are read in both spellings in
//! circulation (`{"path": …}` and `{"@path": …}`) and kept as `path`.

use crate::catalog::{self, Kind};
use indexmap::IndexMap;
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value, json};

/// Most components one surface holds.
pub const MAX_COMPONENTS: usize = 300;
/// Most messages in one batch.
pub const MAX_MESSAGES: usize = 100;
/// Largest data model of one surface, as JSON text.
pub const MAX_DATA_BYTES: usize = 64 * 1024;
/// Deepest nesting of a data model, or of a value in a message: far above
/// any form, and far below what a recursive reader or Loro (128) can take.
pub const MAX_DEPTH: usize = 32;
/// Most tokens of an `updateDataModel` path.
pub const MAX_POINTER_TOKENS: usize = 16;

/// One surface: its components by id (in the order they came) and its data model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Surface {
    pub components: IndexMap<String, Value>,
    pub data_model: Value,
}

impl Surface {
    /// The surface as one `createSurface` message, as a renderer takes it.
    pub fn to_message(&self, surface_id: &str) -> Value {
        json!({"version": catalog::VERSION, "createSurface": {
            "surfaceId": surface_id,
            "catalogId": catalog::CATALOG_ID,
            "components": self.components.values().collect::<Vec<_>>(),
            "dataModel": self.data_model,
        }})
    }
}

/// One message, read and checked on its own. `at` is its body's JSON Pointer
/// in the batch (`/0/createSurface`), where problems found later are placed.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Create { at: String, surface_id: String, components: Vec<Value>, data_model: Value },
    UpdateComponents { at: String, surface_id: String, components: Vec<Value> },
    UpdateData { at: String, surface_id: String, path: String, value: Value },
    Delete { at: String, surface_id: String },
}

impl Message {
    pub fn surface_id(&self) -> &str {
        match self {
            Message::Create { surface_id, .. }
            | Message::UpdateComponents { surface_id, .. }
            | Message::UpdateData { surface_id, .. }
            | Message::Delete { surface_id, .. } => surface_id,
        }
    }

    pub fn at(&self) -> &str {
        match self {
            Message::Create { at, .. }
            | Message::UpdateComponents { at, .. }
            | Message::UpdateData { at, .. }
            | Message::Delete { at, .. } => at,
        }
    }
}

/// What a button may name: the tools a press may call.
pub struct Rules<'a> {
    pub actions: &'a [&'a str],
}

/// Reads a batch (an array of messages, or one message) and checks each
/// message and component against the catalog.
pub fn parse(batch: &Value, rules: &Rules) -> Result<Vec<Message>, Vec<Violation>> {
    let items: Vec<&Value> = match batch {
        Value::Array(items) => items.iter().collect(),
        Value::Object(_) => vec![batch],
        other => return Err(vec![bad("", "a list of A2UI messages", other)]),
    };
    if items.is_empty() {
        return Err(vec![bad("", "at least one A2UI message", batch)]);
    }
    if items.len() > MAX_MESSAGES {
        return Err(vec![Violation::new(
            ErrorCode::OutOfRange,
            format!("at most {MAX_MESSAGES} messages in one batch"),
        )]);
    }
    let prefix = |i: usize| if matches!(batch, Value::Array(_)) { format!("/{i}") } else { String::new() };
    let mut out = Vec::new();
    let mut problems = inexact_numbers(batch);
    for (i, item) in items.into_iter().enumerate() {
        match message(item, &prefix(i), rules) {
            Ok(m) => out.push(m),
            Err(mut p) => problems.append(&mut p),
        }
    }
    if problems.is_empty() { Ok(out) } else { Err(problems) }
}

fn message(item: &Value, at: &str, rules: &Rules) -> Result<Message, Vec<Violation>> {
    let Value::Object(obj) = item else { return Err(vec![bad(at, "an A2UI message object", item)]) };
    let mut problems = Vec::new();
    match obj.get("version") {
        Some(Value::String(v)) if v == catalog::VERSION => {}
        other => problems.push(bad(&format!("{at}/version"), "\"v1.0\"", other.unwrap_or(&Value::Null))),
    }
    let kinds: Vec<&String> = obj.keys().filter(|k| k.as_str() != "version").collect();
    let [kind] = kinds.as_slice() else {
        problems.push(
            Violation::new(ErrorCode::InvalidProperty, "a message holds version and exactly one of createSurface, updateComponents, updateDataModel, deleteSurface")
                .field(at.to_owned()),
        );
        return Err(problems);
    };
    let at = format!("{at}/{kind}");
    let body = &obj[kind.as_str()];
    let Value::Object(body) = body else {
        problems.push(bad(&at, "an object", body));
        return Err(problems);
    };
    let allowed: &[&str] = match kind.as_str() {
        "createSurface" => &["surfaceId", "catalogId", "components", "dataModel", "sendDataModel"],
        "updateComponents" => &["surfaceId", "components"],
        "updateDataModel" => &["surfaceId", "path", "value"],
        "deleteSurface" => &["surfaceId"],
        "callRendererFunction" | "agentFunctionResponse" | "callFunction" | "actionResponse" => {
            problems.push(
                Violation::new(ErrorCode::RefusedFunction, format!("{kind}: this app's surfaces call no functions"))
                    .field(at),
            );
            return Err(problems);
        }
        other => {
            problems
                .push(Violation::new(ErrorCode::UnknownProperty, format!("no A2UI message {other}")).field(at.clone()));
            return Err(problems);
        }
    };
    for key in body.keys().filter(|k| !allowed.contains(&k.as_str())) {
        problems.push(
            Violation::new(ErrorCode::UnknownProperty, format!("{kind} has no {key}")).field(format!("{at}/{key}")),
        );
    }
    let surface_id = match body.get("surfaceId") {
        Some(Value::String(s)) if valid_id(s) => s.clone(),
        other => {
            problems.push(bad(&format!("{at}/surfaceId"), "1 to 64 of A-Z a-z 0-9 _ -", other.unwrap_or(&Value::Null)));
            String::new()
        }
    };
    let mut components = |required: bool| -> Vec<Value> {
        match body.get("components") {
            None if !required => Vec::new(),
            Some(Value::Array(list)) if list.len() > MAX_COMPONENTS => {
                problems.push(
                    Violation::new(
                        ErrorCode::OutOfRange,
                        format!("a surface holds at most {MAX_COMPONENTS} components"),
                    )
                    .field(format!("{at}/components")),
                );
                Vec::new()
            }
            Some(Value::Array(list)) if !list.is_empty() || !required => list
                .iter()
                .enumerate()
                .filter_map(|(i, c)| match component(c, &format!("{at}/components/{i}"), rules) {
                    Ok(c) => Some(c),
                    Err(mut p) => {
                        problems.append(&mut p);
                        None
                    }
                })
                .collect(),
            other => {
                problems.push(bad(&format!("{at}/components"), "a list of components", other.unwrap_or(&Value::Null)));
                Vec::new()
            }
        }
    };
    let parsed = match kind.as_str() {
        "createSurface" => {
            let components = components(false);
            duplicates(&components, &at, &mut problems);
            if let Some(v) = body.get("sendDataModel").filter(|v| !v.is_boolean()) {
                problems.push(bad(&format!("{at}/sendDataModel"), "a boolean", v));
            }
            match body.get("catalogId") {
                None => {}
                Some(Value::String(id)) if id == catalog::CATALOG_ID => {}
                Some(other) => problems.push(
                    Violation::new(
                        ErrorCode::WrongCatalog,
                        format!("this app draws the catalog {}", catalog::CATALOG_ID),
                    )
                    .field(format!("{at}/catalogId"))
                    .expected(catalog::CATALOG_ID)
                    .got(other.clone()),
                ),
            }
            let data_model = match body.get("dataModel") {
                None => json!({}),
                Some(v @ Value::Object(_)) if deeper_than(v, MAX_DEPTH) => {
                    problems.push(too_deep(&format!("{at}/dataModel")));
                    Value::Null
                }
                Some(v @ Value::Object(_)) => v.clone(),
                Some(other) => {
                    problems.push(bad(&format!("{at}/dataModel"), "an object", other));
                    Value::Null
                }
            };
            Message::Create { at, surface_id, components, data_model }
        }
        "updateComponents" => {
            let components = components(true);
            duplicates(&components, &at, &mut problems);
            Message::UpdateComponents { at, surface_id, components }
        }
        "updateDataModel" => {
            let path = match body.get("path") {
                None => String::new(),
                Some(Value::String(p)) if p.is_empty() || p == "/" => String::new(),
                Some(Value::String(p)) if p.starts_with('/') && p.matches('/').count() <= MAX_POINTER_TOKENS => {
                    p.clone()
                }
                Some(Value::String(p)) if p.starts_with('/') => {
                    problems.push(
                        Violation::new(ErrorCode::OutOfRange, format!("a path has at most {MAX_POINTER_TOKENS} parts"))
                            .field(format!("{at}/path")),
                    );
                    "/refused".into()
                }
                Some(other) => {
                    problems.push(bad(&format!("{at}/path"), "a JSON Pointer such as /user/name", other));
                    "/refused".into()
                }
            };
            // A2UI requires value; null removes the key it names.
            let value = match body.get("value") {
                None => {
                    problems.push(
                        Violation::new(ErrorCode::RequiredField, "updateDataModel needs value (null removes)")
                            .field(format!("{at}/value")),
                    );
                    Value::Null
                }
                Some(v) if deeper_than(v, MAX_DEPTH) => {
                    problems.push(too_deep(&format!("{at}/value")));
                    Value::Null
                }
                Some(v) if path.is_empty() && !v.is_object() && !v.is_null() => {
                    problems.push(bad(&format!("{at}/value"), "an object: the whole data model", v));
                    Value::Null
                }
                Some(v) => v.clone(),
            };
            Message::UpdateData { at, surface_id, path, value }
        }
        _ => Message::Delete { at, surface_id },
    };
    if problems.is_empty() { Ok(parsed) } else { Err(problems) }
}

/// Every whole number above i64's range in `batch`: a surface's state keeps
/// it as the nearest float, so a surface read back would show another number
/// than the agent sent. Found without recursion; each named by its pointer.
fn inexact_numbers(batch: &Value) -> Vec<Violation> {
    let mut found = Vec::new();
    let mut stack = vec![(batch, String::new())];
    while let Some((v, at)) = stack.pop() {
        match v {
            Value::Number(n) if n.is_u64() && !n.is_i64() => found.push(
                Violation::new(ErrorCode::OutOfRange, format!("{n} is beyond what a surface keeps exactly (2^63 - 1)"))
                    .field(at),
            ),
            Value::Array(items) => stack.extend(items.iter().enumerate().map(|(i, x)| (x, format!("{at}/{i}")))),
            Value::Object(map) => {
                stack.extend(map.iter().map(|(k, x)| (x, format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")))))
            }
            _ => {}
        }
    }
    found.sort_by(|a, b| a.field.cmp(&b.field));
    found
}

/// Whether `v` nests deeper than `max`, found without recursion.
pub fn deeper_than(v: &Value, max: usize) -> bool {
    let mut stack = vec![(v, 0usize)];
    while let Some((v, depth)) = stack.pop() {
        if depth > max {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|x| (x, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|x| (x, depth + 1))),
            _ => {}
        }
    }
    false
}

fn too_deep(at: &str) -> Violation {
    Violation::new(ErrorCode::OutOfRange, format!("values nest at most {MAX_DEPTH} levels deep")).field(at.to_owned())
}

/// Two components of one message with one id: which one was meant is unknowable.
fn duplicates(components: &[Value], at: &str, problems: &mut Vec<Violation>) {
    let mut seen = std::collections::HashSet::new();
    for (i, c) in components.iter().enumerate() {
        let id = c.get("id").and_then(Value::as_str).unwrap_or_default();
        if !seen.insert(id) {
            problems.push(
                Violation::new(ErrorCode::InvalidProperty, format!("two components are named {id}"))
                    .field(format!("{at}/components/{i}/id"))
                    .got(Value::from(id)),
            );
        }
    }
}

fn valid_id(s: &str) -> bool {
    (1..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn bad(at: &str, expected: &str, got: &Value) -> Violation {
    Violation::new(ErrorCode::InvalidProperty, format!("expected {expected}"))
        .field(at.to_owned())
        .expected(expected)
        .got(got.clone())
}

/// Checks one component against the catalog; answers it with its bindings
/// spelled `path`.
fn component(value: &Value, at: &str, rules: &Rules) -> Result<Value, Vec<Violation>> {
    let Value::Object(obj) = value else { return Err(vec![bad(at, "a component object", value)]) };
    let mut problems = Vec::new();
    match obj.get("id") {
        Some(Value::String(id)) if valid_id(id) => {}
        other => problems.push(bad(&format!("{at}/id"), "1 to 64 of A-Z a-z 0-9 _ -", other.unwrap_or(&Value::Null))),
    }
    let name = obj.get("component").and_then(Value::as_str).unwrap_or_default();
    let Some(def) = catalog::component(name) else {
        let listed: Vec<&str> = catalog::COMPONENTS.iter().map(|c| c.name).collect();
        problems.push(
            Violation::new(ErrorCode::UnknownComponent, format!("{name:?} is not in this app's catalog"))
                .field(format!("{at}/component"))
                .expected(listed.join(", "))
                .got(obj.get("component").cloned().unwrap_or(Value::Null)),
        );
        return Err(problems);
    };
    let mut out = Map::new();
    for (key, v) in obj {
        let at = format!("{at}/{key}");
        let prop = def.props.iter().chain(catalog::COMMON).find(|p| p.name == key);
        let Some(prop) = prop else {
            problems
                .push(Violation::new(ErrorCode::UnknownProperty, format!("{name} has no property {key}")).field(at));
            continue;
        };
        if matches!(key.as_str(), "id" | "component") {
            out.insert(key.clone(), v.clone());
            continue;
        }
        match property(prop.kind, v, &at, rules) {
            Ok(v) => {
                out.insert(key.clone(), v);
            }
            Err(mut p) => problems.append(&mut p),
        }
    }
    for p in def.props.iter().filter(|p| p.required && !obj.contains_key(p.name)) {
        problems.push(
            Violation::new(ErrorCode::RequiredField, format!("{name} needs {}", p.name))
                .field(format!("{at}/{}", p.name)),
        );
    }
    if problems.is_empty() { Ok(Value::Object(out)) } else { Err(problems) }
}

/// A `{"path": …}` (or `{"@path": …}`) binding, or a refused function call.
fn binding(v: &Value, at: &str) -> Option<Result<Value, Violation>> {
    let Value::Object(obj) = v else { return None };
    if obj.contains_key("call") || obj.contains_key("@call") || obj.contains_key("functionCall") {
        return Some(Err(
            Violation::new(ErrorCode::RefusedFunction, "this app's surfaces call no functions").field(at.to_owned())
        ));
    }
    let path = obj.get("path").or_else(|| obj.get("@path"))?;
    Some(match (path, obj.len()) {
        (Value::String(p), 1) => Ok(json!({ "path": p })),
        _ => Err(bad(at, "a binding {\"path\": \"/json/pointer\"}", v)),
    })
}

fn property(kind: Kind, v: &Value, at: &str, rules: &Rules) -> Result<Value, Vec<Violation>> {
    let bindable = matches!(kind, Kind::Text | Kind::Flag | Kind::TextList);
    if bindable && let Some(b) = binding(v, at) {
        return b.map_err(|e| vec![e]);
    }
    let fine = match kind {
        Kind::Text => v.is_string(),
        Kind::Flag | Kind::Switch => v.is_boolean(),
        Kind::TextList => v.as_array().is_some_and(|l| l.iter().all(Value::is_string)),
        Kind::Number => v.is_number(),
        Kind::Child => v.as_str().is_some_and(valid_id),
        Kind::Children => match v {
            Value::Array(ids) => ids.iter().all(|id| id.as_str().is_some_and(valid_id)),
            Value::Object(t) => {
                t.len() == 2
                    && t.get("componentId").and_then(Value::as_str).is_some_and(valid_id)
                    && t.get("path").is_some_and(Value::is_string)
            }
            _ => false,
        },
        Kind::OneOf(words) => v.as_str().is_some_and(|s| words.contains(&s)),
        Kind::Action => return action(v, at, rules),
        Kind::Options => return options(v, at, rules),
        Kind::Accessibility => {
            let Value::Object(a) = v else { return Err(vec![bad(at, "{label, description}", v)]) };
            let mut out = Map::new();
            let mut problems = Vec::new();
            for (k, x) in a {
                if k != "label" && k != "description" {
                    problems.push(
                        Violation::new(ErrorCode::UnknownProperty, format!("accessibility has no {k}"))
                            .field(format!("{at}/{k}")),
                    );
                    continue;
                }
                match property(Kind::Text, x, &format!("{at}/{k}"), rules) {
                    Ok(x) => {
                        out.insert(k.clone(), x);
                    }
                    Err(mut p) => problems.append(&mut p),
                }
            }
            return if problems.is_empty() { Ok(Value::Object(out)) } else { Err(problems) };
        }
    };
    if fine {
        Ok(v.clone())
    } else {
        let expected = match kind {
            Kind::OneOf(words) => format!("one of {}", words.join(", ")),
            Kind::Children => "a list of component ids, or {componentId, path}".into(),
            Kind::Child => "a component id".into(),
            Kind::Text => "a string or a binding".into(),
            Kind::Flag => "a boolean or a binding".into(),
            Kind::TextList => "a list of strings or a binding".into(),
            Kind::Switch => "a boolean".into(),
            _ => "a number".into(),
        };
        Err(vec![bad(at, &expected, v)])
    }
}

fn action(v: &Value, at: &str, rules: &Rules) -> Result<Value, Vec<Violation>> {
    let Value::Object(obj) = v else {
        return Err(vec![bad(at, "{\"event\": {\"name\": …, \"context\": {…}}}", v)]);
    };
    if obj.contains_key("functionCall") {
        return Err(vec![
            Violation::new(ErrorCode::RefusedFunction, "a button runs one of this app's tools, never a function")
                .field(format!("{at}/functionCall")),
        ]);
    }
    let Some(Value::Object(event)) = obj.get("event").filter(|_| obj.len() == 1) else {
        return Err(vec![bad(at, "{\"event\": {\"name\": …, \"context\": {…}}}", v)]);
    };
    let mut problems = Vec::new();
    for key in event.keys().filter(|k| !matches!(k.as_str(), "name" | "context")) {
        problems.push(
            Violation::new(ErrorCode::UnknownProperty, format!("an event has no {key}"))
                .field(format!("{at}/event/{key}")),
        );
    }
    match event.get("name").and_then(Value::as_str) {
        Some(name) if rules.actions.contains(&name) => {}
        other => problems.push(
            Violation::new(ErrorCode::UnknownAction, "an event names one of this app's tools")
                .field(format!("{at}/event/name"))
                .expected(rules.actions.join(", "))
                .got(other.map(Value::from).unwrap_or(Value::Null)),
        ),
    }
    let context = match event.get("context") {
        None => json!({}),
        Some(c @ Value::Object(_)) if deeper_than(c, MAX_DEPTH) => {
            problems.push(too_deep(&format!("{at}/event/context")));
            Value::Null
        }
        Some(c @ Value::Object(_)) => match context_value(c, &format!("{at}/event/context")) {
            Ok(c) => c,
            Err(mut p) => {
                problems.append(&mut p);
                Value::Null
            }
        },
        Some(other) => {
            problems.push(bad(&format!("{at}/event/context"), "an object of arguments", other));
            Value::Null
        }
    };
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(json!({"event": {"name": event["name"], "context": context}}))
}

/// A context value: any JSON, where an object that is a binding is kept as
/// one and a function call anywhere is refused.
fn context_value(v: &Value, at: &str) -> Result<Value, Vec<Violation>> {
    if let Some(b) = binding(v, at) {
        return b.map_err(|e| vec![e]);
    }
    match v {
        Value::Object(obj) => {
            let mut out = Map::new();
            let mut problems = Vec::new();
            for (k, x) in obj {
                match context_value(x, &format!("{at}/{k}")) {
                    Ok(x) => {
                        out.insert(k.clone(), x);
                    }
                    Err(mut p) => problems.append(&mut p),
                }
            }
            if problems.is_empty() { Ok(Value::Object(out)) } else { Err(problems) }
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            let mut problems = Vec::new();
            for (i, x) in items.iter().enumerate() {
                match context_value(x, &format!("{at}/{i}")) {
                    Ok(x) => out.push(x),
                    Err(mut p) => problems.append(&mut p),
                }
            }
            if problems.is_empty() { Ok(Value::Array(out)) } else { Err(problems) }
        }
        other => Ok(other.clone()),
    }
}

fn options(v: &Value, at: &str, rules: &Rules) -> Result<Value, Vec<Violation>> {
    let Value::Array(items) = v else { return Err(vec![bad(at, "a list of {label, value}", v)]) };
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{at}/{i}");
        let Some(obj) = item.as_object().filter(|o| o.len() == 2 && o.get("value").is_some_and(Value::is_string))
        else {
            problems.push(bad(&at, "{label, value} with a string value", item));
            continue;
        };
        match obj.get("label").map(|l| property(Kind::Text, l, &format!("{at}/label"), rules)) {
            Some(Ok(label)) => out.push(json!({"label": label, "value": obj["value"]})),
            Some(Err(mut p)) => problems.append(&mut p),
            None => problems.push(bad(&at, "{label, value} with a string value", item)),
        }
    }
    if problems.is_empty() { Ok(Value::Array(out)) } else { Err(problems) }
}

/// Applies checked messages to `surfaces` (each named surface's state, `None`
/// when it does not exist), then checks every touched surface whole: a
/// `root`, every child it names, no cycle, the limits. Nothing changes unless
/// all of it holds. Answers the touched surfaces' ids in order.
pub fn apply(
    messages: Vec<Message>,
    surfaces: &mut IndexMap<String, Option<Surface>>,
) -> Result<Vec<String>, Vec<Violation>> {
    let mut next = surfaces.clone();
    let mut problems = Vec::new();
    let mut touched: Vec<String> = Vec::new();
    for m in messages {
        let id = m.surface_id().to_owned();
        let place = m.at().to_owned();
        let slot = next.entry(id.clone()).or_insert(None);
        let missing = || {
            Violation::new(ErrorCode::UnknownSurface, format!("no surface {id}; createSurface makes one"))
                .field(format!("{place}/surfaceId"))
                .got(Value::from(id.clone()))
        };
        match m {
            // Creating a surface that exists replaces it: a repeated render is harmless.
            Message::Create { components, data_model, .. } => {
                let mut s = Surface { data_model, ..Surface::default() };
                for c in components {
                    s.components.insert(component_id(&c), c);
                }
                *slot = Some(s);
            }
            Message::UpdateComponents { components, .. } => match slot {
                Some(s) => {
                    for c in components {
                        s.components.insert(component_id(&c), c);
                    }
                }
                None => problems.push(missing()),
            },
            Message::UpdateData { path, value, .. } => match slot {
                Some(s) => {
                    if let Err(why) = set_pointer(&mut s.data_model, &path, value) {
                        problems.push(Violation::new(ErrorCode::InvalidProperty, why).field(format!("{place}/path")));
                    }
                }
                None => problems.push(missing()),
            },
            Message::Delete { .. } => match slot {
                Some(_) => *slot = None,
                None => problems.push(missing()),
            },
        }
        if !touched.contains(&id) {
            touched.push(id);
        }
    }
    for id in &touched {
        if let Some(Some(s)) = next.get(id) {
            problems.extend(whole(id, s));
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    *surfaces = next;
    Ok(touched)
}

fn component_id(c: &Value) -> String {
    c.get("id").and_then(Value::as_str).unwrap_or_default().to_owned()
}

/// The checks on a whole surface. The limits come first: nothing walks a
/// surface over them.
fn whole(id: &str, s: &Surface) -> Vec<Violation> {
    let mut problems = Vec::new();
    let at = |what: &str| format!("surfaces/{id}/{what}");
    if s.components.len() > MAX_COMPONENTS {
        problems.push(
            Violation::new(ErrorCode::OutOfRange, format!("a surface holds at most {MAX_COMPONENTS} components"))
                .field(at("components")),
        );
    }
    if deeper_than(&s.data_model, MAX_DEPTH) {
        problems.push(too_deep(&at("dataModel")));
    } else if s.data_model.to_string().len() > MAX_DATA_BYTES {
        problems.push(
            Violation::new(ErrorCode::OutOfRange, format!("a data model holds at most {MAX_DATA_BYTES} bytes of JSON"))
                .field(at("dataModel")),
        );
    }
    if !problems.is_empty() || s.components.is_empty() {
        return problems;
    }
    if !s.components.contains_key("root") {
        problems.push(
            Violation::new(ErrorCode::DanglingReference, "a surface's components include one with id root")
                .field(at("root")),
        );
    }
    for (cid, c) in &s.components {
        for child in children(c) {
            if !s.components.contains_key(&child) {
                problems.push(
                    Violation::new(
                        ErrorCode::DanglingReference,
                        format!("{cid} names {child}, which is not a component of the surface"),
                    )
                    .field(at(&format!("components/{cid}")))
                    .got(Value::from(child)),
                );
            }
        }
    }
    if let Some(found) = cycle(s) {
        problems.push(
            Violation::new(ErrorCode::DanglingReference, format!("{found} contains itself"))
                .field(at(&format!("components/{found}"))),
        );
    }
    problems
}

/// A component that contains itself, if any: a depth-first walk with an
/// explicit stack (a renderer would draw a cycle forever).
fn cycle(s: &Surface) -> Option<String> {
    // 1: on the current path; 2: done.
    let mut state: std::collections::HashMap<String, u8> = std::collections::HashMap::new();
    for start in s.components.keys() {
        if state.contains_key(start) {
            continue;
        }
        state.insert(start.clone(), 1);
        let mut stack: Vec<(String, Vec<String>, usize)> = vec![(start.clone(), children(&s.components[start]), 0)];
        while let Some(top) = stack.last_mut() {
            if top.2 == top.1.len() {
                state.insert(top.0.clone(), 2);
                stack.pop();
                continue;
            }
            let next = top.1[top.2].clone();
            top.2 += 1;
            let Some(c) = s.components.get(&next) else { continue };
            match state.get(&next) {
                Some(1) => return Some(next),
                Some(_) => {}
                None => {
                    state.insert(next.clone(), 1);
                    stack.push((next, children(c), 0));
                }
            }
        }
    }
    None
}

/// The ids a component names as children.
fn children(c: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(id) = c.get("child").and_then(Value::as_str) {
        out.push(id.to_owned());
    }
    match c.get("children") {
        Some(Value::Array(ids)) => out.extend(ids.iter().filter_map(Value::as_str).map(str::to_owned)),
        Some(Value::Object(t)) => out.extend(t.get("componentId").and_then(Value::as_str).map(str::to_owned)),
        _ => {}
    }
    out
}

/// `updateDataModel`: sets the value at a JSON Pointer, making the objects
/// on the way; `null` removes the key; an empty path replaces the model.
pub fn set_pointer(model: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *model = if value.is_null() { json!({}) } else { value };
        return Ok(());
    }
    let tokens: Vec<String> = path[1..].split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
    let (last, walk) = tokens.split_last().ok_or("an empty pointer")?;
    let mut at = model;
    for t in walk {
        at = match at {
            Value::Object(map) => map.entry(t.clone()).or_insert_with(|| json!({})),
            Value::Array(items) => {
                t.parse::<usize>().ok().and_then(|i| items.get_mut(i)).ok_or(format!("{path}: no item {t}"))?
            }
            _ => return Err(format!("{path}: {t} is inside a value that is not an object or a list")),
        };
        if at.is_null() {
            *at = json!({});
        }
    }
    match at {
        Value::Object(map) => {
            if value.is_null() {
                map.shift_remove(last);
            } else {
                map.insert(last.clone(), value);
            }
        }
        Value::Array(items) => {
            let i = if last == "-" {
                items.len()
            } else {
                last.parse::<usize>().map_err(|_| format!("{path}: {last} is not an index"))?
            };
            match (i.cmp(&items.len()), value.is_null()) {
                (std::cmp::Ordering::Less, true) => {
                    items.remove(i);
                }
                (std::cmp::Ordering::Less, false) => items[i] = value,
                (std::cmp::Ordering::Equal, false) => items.push(value),
                _ => return Err(format!("{path}: no item {last}")),
            }
        }
        _ => return Err(format!("{path}: the parent is not an object or a list")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    const TOOLS: &[&str] = &["create", "update", "run_operation"];

    fn rules() -> Rules<'static> {
        Rules { actions: TOOLS }
    }

    fn form() -> Value {
        json!([{"version": "v1.0", "createSurface": {
        "surfaceId": "new-card", "catalogId": catalog::CATALOG_ID,
        "dataModel": {"title": "", "urgent": false},
        "components": [
            {"id": "root", "component": "Column", "children": ["title", "urgent", "save"]},
            {"id": "title", "component": "TextField", "label": "Title", "value": {"@path": "/title"}},
            {"id": "urgent", "component": "CheckBox", "label": "Urgent", "value": {"path": "/urgent"}},
            {"id": "save", "component": "Button", "child": "save-label", "variant": "primary",
             "action": {"event": {"name": "create", "context": {"entity": "cards", "record": {"title": {"path": "/title"}}}}}},
            {"id": "save-label", "component": "Text", "text": "Save"}
        ]}}])
    }

    fn codes(problems: &[Violation]) -> Vec<(&str, &str)> {
        problems.iter().map(|v| (v.code.as_str(), v.field.as_deref().unwrap_or(""))).collect()
    }

    #[test]
    fn a_form_is_read_checked_and_applied_with_bindings_spelled_path() {
        let messages = parse(&form(), &rules()).unwrap();
        let mut surfaces = IndexMap::new();
        assert_eq!(apply(messages, &mut surfaces).unwrap(), ["new-card"]);
        let s = surfaces["new-card"].as_ref().unwrap();
        assert_eq!(s.components.len(), 5);
        assert_eq!(s.components["title"]["value"], json!({"path": "/title"}));
        assert_eq!(s.data_model, json!({"title": "", "urgent": false}));
        let message = s.to_message("new-card");
        assert_eq!(message["createSurface"]["catalogId"], catalog::CATALOG_ID);
        assert_eq!(message["createSurface"]["components"][0]["id"], "root");
    }

    #[test]
    fn a_number_a_surface_cannot_keep_exactly_is_refused_where_it_is() {
        let mut batch = form();
        batch[0]["createSurface"]["dataModel"]["n"] = json!(u64::MAX);
        batch[0]["createSurface"]["dataModel"]["m/x"] = json!([1, u64::MAX]);
        batch[0]["createSurface"]["dataModel"]["ok"] = json!(i64::MAX);
        let problems = parse(&batch, &rules()).unwrap_err();
        assert_eq!(
            codes(&problems),
            [("out_of_range", "/0/createSurface/dataModel/m~1x/1"), ("out_of_range", "/0/createSurface/dataModel/n")]
        );
    }

    #[test]
    fn every_problem_of_a_batch_is_reported_at_once_with_its_code_and_place() {
        let batch = json!([
            {"version": "v1.0", "createSurface": {"surfaceId": "s", "catalogId": "https://a2ui.org/specification/v1_0/catalogs/basic/catalog.json",
              "components": [
                {"id": "root", "component": "Blink"},
                {"id": "t", "component": "Text", "text": "hi", "onclick": "steal()"},
                {"id": "f", "component": "Text", "text": {"call": "formatString", "args": {}}},
                {"id": "b", "component": "Button", "child": "t", "action": {"functionCall": {"call": "openUrl"}}},
                {"id": "c", "component": "Button", "child": "t", "action": {"event": {"name": "delete"}}},
                {"id": "d", "component": "CheckBox", "label": "x"},
                {"id": "e", "component": "Text", "text": "x", "variant": "h1"}
              ]}},
            {"version": "1.0", "deleteSurface": {"surfaceId": "s"}},
            {"version": "v1.0", "callRendererFunction": {"functionCallId": "1"}}
        ]);
        let problems = parse(&batch, &rules()).unwrap_err();
        assert_eq!(
            codes(&problems),
            [
                ("unknown_component", "/0/createSurface/components/0/component"),
                ("unknown_property", "/0/createSurface/components/1/onclick"),
                ("refused_function", "/0/createSurface/components/2/text"),
                ("refused_function", "/0/createSurface/components/3/action/functionCall"),
                ("unknown_action", "/0/createSurface/components/4/action/event/name"),
                ("required_field", "/0/createSurface/components/5/value"),
                ("invalid_property", "/0/createSurface/components/6/variant"),
                ("wrong_catalog", "/0/createSurface/catalogId"),
                ("invalid_property", "/1/version"),
                ("refused_function", "/2/callRendererFunction"),
            ]
        );
        assert_eq!(problems[4].expected.as_deref(), Some("create, update, run_operation"));
    }

    #[test]
    fn a_surface_must_hold_together_and_a_failed_batch_changes_nothing() {
        let mut surfaces = IndexMap::new();
        apply(parse(&form(), &rules()).unwrap(), &mut surfaces).unwrap();
        let before = surfaces.clone();
        let batch = json!([
            {"version": "v1.0", "updateComponents": {"surfaceId": "new-card", "components": [
                {"id": "root", "component": "Column", "children": ["title", "ghost"]},
                {"id": "loop", "component": "Card", "child": "loop"}
            ]}},
            {"version": "v1.0", "updateDataModel": {"surfaceId": "new-card", "path": "/title", "value": "changed"}},
            {"version": "v1.0", "updateDataModel": {"surfaceId": "elsewhere", "value": {}}}
        ]);
        let problems = apply(parse(&batch, &rules()).unwrap(), &mut surfaces).unwrap_err();
        assert_eq!(
            codes(&problems),
            [
                ("unknown_surface", "/2/updateDataModel/surfaceId"),
                ("dangling_reference", "surfaces/new-card/components/root"),
                ("dangling_reference", "surfaces/new-card/components/loop"),
            ]
        );
        assert_eq!(surfaces, before, "all or nothing");
        // A message sent alone is placed from its own root.
        let alone = json!({"version": "v1.0", "deleteSurface": {"surfaceId": "nowhere"}});
        let problems = apply(parse(&alone, &rules()).unwrap(), &mut surfaces).unwrap_err();
        assert_eq!(codes(&problems), [("unknown_surface", "/deleteSurface/surfaceId")]);
        let headless = json!({"version": "v1.0", "createSurface": {"surfaceId": "h", "components": [{"id": "a", "component": "Divider"}]}});
        let problems = apply(parse(&headless, &rules()).unwrap(), &mut surfaces).unwrap_err();
        assert_eq!(codes(&problems), [("dangling_reference", "surfaces/h/root")]);
    }

    #[test]
    fn the_data_model_takes_pointers_as_a2ui_has_them() {
        let mut m = json!({"user": {"name": "Ada"}, "items": ["a", "b"]});
        set_pointer(&mut m, "/user/email", json!("ada@example.com")).unwrap();
        set_pointer(&mut m, "/new/deep/key", json!(1)).unwrap();
        set_pointer(&mut m, "/items/-", json!("c")).unwrap();
        set_pointer(&mut m, "/items/0", Value::Null).unwrap();
        set_pointer(&mut m, "/user/name", Value::Null).unwrap();
        set_pointer(&mut m, "/a~1b", json!(true)).unwrap();
        assert_eq!(
            m,
            json!({"user": {"email": "ada@example.com"}, "items": ["b", "c"], "new": {"deep": {"key": 1}}, "a/b": true})
        );
        assert!(set_pointer(&mut m, "/items/9", json!(1)).is_err());
        assert!(set_pointer(&mut m, "/new/deep/key/x", json!(1)).is_err());
        set_pointer(&mut m, "", Value::Null).unwrap();
        assert_eq!(m, json!({}));
    }

    #[test]
    fn limits_hold() {
        let many: Vec<Value> =
            (0..=MAX_MESSAGES).map(|_| json!({"version": "v1.0", "deleteSurface": {"surfaceId": "x"}})).collect();
        assert_eq!(codes(&parse(&Value::Array(many), &rules()).unwrap_err()), [("out_of_range", "")]);
        let mut components = vec![json!({"id": "root", "component": "Column", "children": []})];
        components.extend((1..MAX_COMPONENTS).map(|i| json!({"id": format!("t{i}"), "component": "Divider"})));
        let full = json!({"version": "v1.0", "createSurface": {"surfaceId": "big", "components": components.clone()}});
        let mut surfaces = IndexMap::new();
        apply(parse(&full, &rules()).unwrap(), &mut surfaces).unwrap();
        let one_more = json!({"version": "v1.0", "updateComponents": {"surfaceId": "big", "components": [{"id": "extra", "component": "Divider"}]}});
        let problems = apply(parse(&one_more, &rules()).unwrap(), &mut surfaces).unwrap_err();
        assert_eq!(codes(&problems), [("out_of_range", "surfaces/big/components")]);
        components.push(json!({"id": "extra", "component": "Divider"}));
        let big = json!({"version": "v1.0", "createSurface": {"surfaceId": "big", "components": components}});
        assert_eq!(codes(&parse(&big, &rules()).unwrap_err()), [("out_of_range", "/createSurface/components")]);
        assert_eq!(codes(&parse(&json!("text"), &rules()).unwrap_err()), [("invalid_property", "")]);
        assert_eq!(codes(&parse(&json!([]), &rules()).unwrap_err()), [("invalid_property", "")]);
    }

    /// Hostile shapes a review found: each is a coded refusal, never a
    /// crash, and never a walk over an unbounded surface.
    #[test]
    fn hostile_shapes_are_refused_with_codes() {
        let update = |path: &str, value: Value| json!({"version": "v1.0", "updateDataModel": {"surfaceId": "s", "path": path, "value": value}});
        let long = "/a".repeat(100_000);
        assert_eq!(
            codes(&parse(&update(&long, json!(1)), &rules()).unwrap_err()),
            [("out_of_range", "/updateDataModel/path")]
        );
        let mut deep = json!(1);
        for _ in 0..(MAX_DEPTH + 1) {
            deep = json!({ "d": deep });
        }
        assert_eq!(
            codes(&parse(&update("/x", deep.clone()), &rules()).unwrap_err()),
            [("out_of_range", "/updateDataModel/value")]
        );
        let create = json!({"version": "v1.0", "createSurface": {"surfaceId": "s", "dataModel": deep}});
        assert_eq!(codes(&parse(&create, &rules()).unwrap_err()), [("out_of_range", "/createSurface/dataModel")]);
        // Deep by steps: each update within the limits, the model over them.
        let mut surfaces = IndexMap::new();
        apply(
            parse(&json!({"version": "v1.0", "createSurface": {"surfaceId": "s"}}), &rules()).unwrap(),
            &mut surfaces,
        )
        .unwrap();
        let mut nested = json!(1);
        for _ in 0..20 {
            nested = json!({ "d": nested });
        }
        let path = "/a".repeat(MAX_POINTER_TOKENS);
        let problems = apply(parse(&update(&path, nested), &rules()).unwrap(), &mut surfaces).unwrap_err();
        assert_eq!(codes(&problems), [("out_of_range", "surfaces/s/dataModel")]);
        // value is required, and the whole model is an object.
        let no_value = json!({"version": "v1.0", "updateDataModel": {"surfaceId": "s", "path": "/a"}});
        assert_eq!(codes(&parse(&no_value, &rules()).unwrap_err()), [("required_field", "/updateDataModel/value")]);
        assert_eq!(
            codes(&parse(&update("", json!(["x"])), &rules()).unwrap_err()),
            [("invalid_property", "/updateDataModel/value")]
        );
        let send = json!({"version": "v1.0", "createSurface": {"surfaceId": "s", "sendDataModel": "yes"}});
        assert_eq!(codes(&parse(&send, &rules()).unwrap_err()), [("invalid_property", "/createSurface/sendDataModel")]);
        // Two components with one id in a message.
        let twice = json!({"version": "v1.0", "updateComponents": {"surfaceId": "s", "components": [
            {"id": "root", "component": "Divider"}, {"id": "root", "component": "Text", "text": "x"}]}});
        assert_eq!(
            codes(&parse(&twice, &rules()).unwrap_err()),
            [("invalid_property", "/updateComponents/components/1/id")]
        );
        // A long chain of cards is walked without recursion; its cycle is found.
        let mut chain: Vec<Value> = (0..MAX_COMPONENTS - 1)
            .map(|i| json!({"id": if i == 0 { "root".to_owned() } else { format!("c{i}") }, "component": "Card", "child": format!("c{}", i + 1)}))
            .collect();
        chain.push(json!({"id": format!("c{}", MAX_COMPONENTS - 1), "component": "Card", "child": "root"}));
        let looped = json!({"version": "v1.0", "createSurface": {"surfaceId": "chain", "components": chain}});
        let problems = apply(parse(&looped, &rules()).unwrap(), &mut surfaces).unwrap_err();
        assert_eq!(codes(&problems), [("dangling_reference", "surfaces/chain/components/root")]);
    }
}
