//! `operations.json`: the verbs outsiders may invoke.
//!
//! This module loads and validates the file against the schema (names,
//! parameter types, executors, fixed filters, schedules) and turns each
//! executor into a typed [`Executor`]. Running operations is
//! `crate::operations`' job; whether `http` routes exist on the backend is
//! checked by [`check_routes`] once a transport has asked the backend.

use crate::document::Node;
use crate::problem::{Problem, Problems, index, join};
use protocol::schema::Schema;
use serde_json::{Map, Value};

pub const FILE: &str = "operations.json";

#[derive(Debug, Clone, PartialEq)]
pub struct Operation {
    pub name: String,
    pub description: String,
    pub params: Vec<Param>,
    /// The executor object as written (`{"kind": "crud" | "http" | "job" | "native", …}`).
    pub executor: Map<String, Value>,
    /// The same executor, validated and typed.
    pub run: Executor,
    pub destructive: bool,
    pub schedule: Option<String>,
}

/// What running an operation does.
#[derive(Debug, Clone, PartialEq)]
pub enum Executor {
    Crud(Crud),
    Http(Http),
    Job(JobSpec),
    /// A Rust handler registered by a library user under the operation's name.
    Native,
}

impl Executor {
    pub fn kind(&self) -> &'static str {
        match self {
            Executor::Crud(_) => "crud",
            Executor::Http(_) => "http",
            Executor::Job(_) => "job",
            Executor::Native => "native",
        }
    }
}

/// Declarative CRUD over one entity. Values are templates: a string that is
/// exactly `{:param}` stands for that parameter's value; anything else is literal.
#[derive(Debug, Clone, PartialEq)]
pub struct Crud {
    pub entity: String,
    pub action: CrudAction,
    /// Which record (update/delete): a template, usually `"{:id}"`.
    pub id: Option<Value>,
    /// Which records (update/delete/list), as written; `{:param}` marks a parameter,
    /// bound as a value when the filter is compiled, never spliced into SQL.
    pub filter: Option<String>,
    /// Field → template (create/update). Without `set`, a create writes the params as fields.
    pub set: Map<String, Value>,
    /// The list order (PocketBase sort syntax).
    pub sort: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrudAction {
    Create,
    Update,
    Delete,
    List,
}

/// A route of the app's own backend process (`[backend] url` in app.toml).
#[derive(Debug, Clone, PartialEq)]
pub struct Http {
    pub method: String,
    pub path: String,
    pub timeout: std::time::Duration,
}

/// A long-running operation: the caller gets a job id at once.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub run: JobRun,
    /// A pause between steps, so a background job does not crowd out the
    /// app's interactive writes on a small machine.
    pub pace: std::time::Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobRun {
    /// Every entity's records into `data/exports/<job id>.json`, one step per entity.
    Export,
    /// A job handler registered by a library user under the operation's name.
    Native,
}

/// How long an `http` executor waits for the backend unless it says otherwise.
pub const DEFAULT_HTTP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// The longest `timeout` an `http` executor may ask for.
pub const MAX_HTTP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    pub name: String,
    pub kind: ParamType,
    pub required: bool,
    pub default: Option<Value>,
    pub choices: Vec<Value>,
    pub description: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    String,
    Number,
    Boolean,
}

impl ParamType {
    pub fn as_str(self) -> &'static str {
        match self {
            ParamType::String => "string",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        }
    }

    /// Whether `value` is of this type (numbers must be finite JSON numbers).
    pub fn admits(self, value: &Value) -> bool {
        matches!(
            (self, value),
            (ParamType::String, Value::String(_))
                | (ParamType::Number, Value::Number(_))
                | (ParamType::Boolean, Value::Bool(_))
        )
    }
}

const EXECUTORS: &[&str] = &["crud", "http", "job", "native"];

/// Parses and validates `operations.json`. With a schema, `crud` executors are
/// checked against it (entity, fields, filter); without one (the schema did
/// not load) only what needs no schema is checked.
pub fn parse(text: &str, schema: Option<&Schema>) -> Result<Vec<Operation>, Problems> {
    let mut problems = Problems::new(FILE);
    let root = match Node::parse(text) {
        Ok(r) => r,
        Err(e) => {
            problems.push("$", e);
            return Err(problems);
        }
    };
    let items = match &root {
        Node::Array(items) => items.as_slice(),
        Node::Object(members) => match members.iter().find(|(k, _)| k == "operations") {
            Some((_, Node::Array(items))) => items.as_slice(),
            _ => {
                problems.push("$", "expected a list of operations (or {\"operations\": [...]})");
                return Err(problems);
            }
        },
        other => {
            problems.push("$", format!("expected a list of operations, got {}", other.kind()));
            return Err(problems);
        }
    };
    let mut ops: Vec<Operation> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let path = index("$", i);
        let Node::Object(members) = item else {
            problems.push(&path, format!("expected an operation object, got {}", item.kind()));
            continue;
        };
        let mut op = Operation {
            name: String::new(),
            description: String::new(),
            params: Vec::new(),
            executor: Map::new(),
            run: Executor::Native,
            destructive: false,
            schedule: None,
        };
        for (key, value) in members {
            let kpath = join(&path, key);
            match key.as_str() {
                "name" => match value.as_str() {
                    Some(n) if RESERVED_NAMES.contains(&n) => problems.push(
                        &kpath,
                        format!("\"{n}\" is the name of one of the app's own MCP tools; name the operation otherwise"),
                    ),
                    Some(n) if is_op_name(n) => op.name = n.to_owned(),
                    _ => problems.push(&kpath, "name must match ^[a-z][a-z0-9_.-]*$, at most 100 characters"),
                },
                "description" => match value.as_str() {
                    Some(d) => op.description = d.to_owned(),
                    None => problems.push(&kpath, "description must be a string"),
                },
                "params" => op.params = params(value, &kpath, &mut problems),
                "executor" => match value.to_value() {
                    Value::Object(map) => op.executor = map,
                    _ => problems.push(&kpath, "executor must be an object with a \"kind\""),
                },
                "destructive" => match value.to_value() {
                    Value::Bool(b) => op.destructive = b,
                    _ => problems.push(&kpath, "destructive must be true or false"),
                },
                "schedule" => match value.as_str() {
                    Some(s) => match crate::schedule::parse(s) {
                        Ok(_) => op.schedule = Some(s.to_owned()),
                        Err(why) => problems.push(&kpath, why),
                    },
                    None => problems
                        .push(&kpath, "schedule must be a string like \"every 15m\", \"hourly\" or \"daily 09:00\""),
                },
                other => problems.push(
                    &kpath,
                    format!(
                        "unknown key \"{other}\" (allowed: name, description, params, executor, destructive, schedule)"
                    ),
                ),
            }
        }
        if op.name.is_empty() && !members.iter().any(|(k, _)| k == "name") {
            problems.push(&path, "missing \"name\"");
        }
        if op.executor.is_empty() && !members.iter().any(|(k, _)| k == "executor") {
            problems.push(&path, "missing \"executor\"");
        } else if !op.executor.is_empty() {
            let epath = join(&path, "executor");
            if let Some(run) = executor(&op.executor, &op.params, schema, &epath, &mut problems) {
                op.run = run;
            }
        }
        if op.schedule.is_some() {
            for p in op.params.iter().filter(|p| p.required && p.default.is_none()) {
                problems.push(
                    join(&join(&path, "params"), &p.name),
                    "a scheduled operation runs without a caller to supply params: give this param a default or make it optional",
                );
            }
        }
        if !op.name.is_empty() && ops.iter().any(|o| o.name == op.name) {
            problems.push(join(&path, "name"), format!("duplicate operation \"{}\"", op.name));
        }
        ops.push(op);
    }
    if problems.is_empty() { Ok(ops) } else { Err(problems) }
}

pub(crate) fn params(node: &Node, path: &str, problems: &mut Problems) -> Vec<Param> {
    let Node::Object(members) = node else {
        problems.push(path, "params must be an object of name → {type, required, default, enum}");
        return Vec::new();
    };
    let mut out = Vec::new();
    for (name, spec) in members {
        let ppath = join(path, name);
        let Value::Object(spec) = spec.to_value() else {
            problems.push(&ppath, "a param must be an object with a \"type\"");
            continue;
        };
        let kind = match spec.get("type").and_then(Value::as_str) {
            Some("string") => ParamType::String,
            Some("number") => ParamType::Number,
            Some("boolean") => ParamType::Boolean,
            _ => {
                problems.push(join(&ppath, "type"), "param type must be one of: string, number, boolean");
                continue;
            }
        };
        let allowed = |v: &Value| kind.admits(v);
        for key in spec.keys() {
            if !["type", "required", "default", "enum", "description"].contains(&key.as_str()) {
                problems.push(
                    join(&ppath, key),
                    format!("unknown key \"{key}\" (allowed: type, required, default, enum, description)"),
                );
            }
        }
        let choices = match spec.get("enum") {
            None => Vec::new(),
            Some(Value::Array(v)) if !v.is_empty() => v.clone(),
            Some(_) => {
                problems.push(join(&ppath, "enum"), "enum must be a non-empty list");
                Vec::new()
            }
        };
        if choices.iter().any(|c| !allowed(c)) {
            problems.push(join(&ppath, "enum"), format!("every enum value must be a {}", kind.as_str()));
        }
        // Enum values and descriptions are shown to people (a consent screen,
        // a terminal): no control characters.
        if choices.iter().any(|c| c.as_str().is_some_and(|t| t.chars().any(char::is_control))) {
            problems.push(join(&ppath, "enum"), "enum values must not hold control characters");
        }
        let default = spec.get("default").cloned();
        if let Some(d) = &default
            && (!allowed(d) || (!choices.is_empty() && !choices.contains(d)))
        {
            problems.push(
                join(&ppath, "default"),
                format!("default must be a {} (and one of enum, if given)", kind.as_str()),
            );
        }
        let required = match spec.get("required") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                problems.push(join(&ppath, "required"), "required must be true or false");
                false
            }
        };
        let description = match spec.get("description") {
            None => String::new(),
            Some(Value::String(d)) if d.chars().count() <= 500 && !d.chars().any(char::is_control) => d.clone(),
            Some(_) => {
                problems.push(join(&ppath, "description"), "description must be one line of at most 500 characters");
                String::new()
            }
        };
        if !is_param_name(name) {
            problems.push(&ppath, "a param name must match ^[a-z][a-z0-9_]*$");
        }
        out.push(Param { name: name.clone(), kind, required, default, choices, description });
    }
    out
}

/// Names an operation may not take: the MCP tools every app has, beside
/// which `full` mode lists one tool per operation under its own name (a
/// clash would list two tools of one name and reach only the fixed one).
pub const RESERVED_NAMES: &[&str] =
    &["describe", "query", "get", "create", "update", "delete", "run_operation", "job_status", "show", "check_claims"];

/// `^[a-z][a-z0-9_.-]*$`, at most 100 characters (what a scope `op:<name>` holds).
pub(crate) fn is_op_name(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 100
        && matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_' | '.' | '-'))
}

fn is_param_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some('a'..='z')) && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
}

/// The parameter a template string stands for: `"{:card}"` → `card`.
pub fn placeholder(text: &str) -> Option<&str> {
    text.strip_prefix("{:").and_then(|r| r.strip_suffix('}')).filter(|n| is_param_name(n))
}

/// Rewrites the `{:param}` placeholders of a fixed filter (outside string
/// literals) into `@request.query.<param>`, which the filter compiler binds
/// as a value. Returns the rewritten text and the params named, in order.
pub fn bind_filter(text: &str) -> Result<(String, Vec<String>), String> {
    let mut out = String::with_capacity(text.len() + 16);
    let mut names = Vec::new();
    let mut quote: Option<char> = None;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match quote {
            Some(q) => {
                out.push(c);
                if c == '\\' {
                    if let Some((_, next)) = chars.next() {
                        out.push(next);
                    }
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '{' && text[i..].starts_with("{:") => {
                let rest = &text[i + 2..];
                let Some(end) = rest.find('}') else {
                    return Err(format!(
                        "unclosed placeholder at char {}: write {{:param}}",
                        text[..i].chars().count()
                    ));
                };
                let name = &rest[..end];
                if !is_param_name(name) {
                    return Err(format!("bad placeholder {{:{name}}}: a param name matches ^[a-z][a-z0-9_]*$"));
                }
                out.push_str("@request.query.");
                out.push_str(name);
                names.push(name.to_owned());
                for _ in 0..end + 2 {
                    chars.next();
                }
            }
            None => out.push(c),
        }
    }
    Ok((out, names))
}

/// Parses a duration like `250ms`, `10s`, `2m`.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let n: u64 = text[..split].parse().ok()?;
    match &text[split..] {
        "ms" => Some(std::time::Duration::from_millis(n)),
        "s" => Some(std::time::Duration::from_secs(n)),
        "m" => Some(std::time::Duration::from_secs(n.checked_mul(60)?)),
        _ => None,
    }
}

fn executor(
    map: &Map<String, Value>,
    params: &[Param],
    schema: Option<&Schema>,
    path: &str,
    problems: &mut Problems,
) -> Option<Executor> {
    let unknown_keys = |allowed: &[&str], problems: &mut Problems| {
        for key in map.keys().filter(|k| !allowed.contains(&k.as_str())) {
            problems.push(join(path, key), format!("unknown key \"{key}\" (allowed: {})", allowed.join(", ")));
        }
    };
    match map.get("kind").and_then(Value::as_str) {
        Some("crud") => {
            unknown_keys(&["kind", "entity", "action", "id", "filter", "set", "sort"], problems);
            crud(map, params, schema, path, problems).map(Executor::Crud)
        }
        Some("http") => {
            unknown_keys(&["kind", "method", "path", "timeout"], problems);
            let method = match map.get("method").and_then(Value::as_str).map(str::to_ascii_uppercase) {
                Some(m) if ["GET", "POST", "PUT", "PATCH", "DELETE"].contains(&m.as_str()) => m,
                _ => {
                    problems.push(join(path, "method"), "method must be one of: GET, POST, PUT, PATCH, DELETE");
                    return None;
                }
            };
            let route = match map.get("path").and_then(Value::as_str) {
                Some(p) if p.starts_with('/') && !p.contains("..") && !p.contains(['?', '#', ' ']) => p.to_owned(),
                _ => {
                    problems.push(
                        join(path, "path"),
                        "path must be a route of the backend like \"/cards/archive\" (no query, no \"..\")",
                    );
                    return None;
                }
            };
            let timeout = match map.get("timeout") {
                None => DEFAULT_HTTP_TIMEOUT,
                Some(v) => match v.as_str().and_then(parse_duration) {
                    Some(d) if !d.is_zero() && d <= MAX_HTTP_TIMEOUT => d,
                    _ => {
                        problems.push(
                            join(path, "timeout"),
                            "timeout must be a duration like \"10s\" or \"500ms\", at most 120s",
                        );
                        return None;
                    }
                },
            };
            Some(Executor::Http(Http { method, path: route, timeout }))
        }
        Some("job") => {
            unknown_keys(&["kind", "run", "pace"], problems);
            let run = match map.get("run").and_then(Value::as_str) {
                Some("export") => JobRun::Export,
                Some("native") => JobRun::Native,
                _ => {
                    problems.push(
                        join(path, "run"),
                        "run must be \"export\" or \"native\" (a registered Rust job handler)",
                    );
                    return None;
                }
            };
            let pace = match map.get("pace") {
                None => std::time::Duration::ZERO,
                Some(v) => match v.as_str().and_then(parse_duration) {
                    Some(d) if d <= std::time::Duration::from_secs(60) => d,
                    _ => {
                        problems.push(join(path, "pace"), "pace must be a duration like \"200ms\", at most 60s");
                        return None;
                    }
                },
            };
            Some(Executor::Job(JobSpec { run, pace }))
        }
        Some("native") => {
            unknown_keys(&["kind"], problems);
            Some(Executor::Native)
        }
        _ => {
            problems.push(join(path, "kind"), format!("executor kind must be one of: {}", EXECUTORS.join(", ")));
            None
        }
    }
}

fn crud(
    map: &Map<String, Value>,
    params: &[Param],
    schema: Option<&Schema>,
    path: &str,
    problems: &mut Problems,
) -> Option<Crud> {
    let before = problems.list.len();
    let declared = |name: &str| params.iter().any(|p| p.name == name);
    let entity = match map.get("entity").and_then(Value::as_str) {
        Some(e) => e.to_owned(),
        None => {
            problems.push(join(path, "entity"), "a crud executor names the entity it works on");
            return None;
        }
    };
    let ent = schema.and_then(|s| s.entities.get(&entity));
    if let Some(schema) = schema
        && ent.is_none()
    {
        let names: Vec<&str> = schema.entities.keys().map(String::as_str).collect();
        problems.push(join(path, "entity"), format!("unknown entity \"{entity}\" (entities: {})", names.join(", ")));
    }
    let action = match map.get("action").and_then(Value::as_str) {
        Some("create") => CrudAction::Create,
        Some("update") => CrudAction::Update,
        Some("delete") => CrudAction::Delete,
        Some("list") => CrudAction::List,
        _ => {
            problems.push(join(path, "action"), "action must be one of: create, update, delete, list");
            return None;
        }
    };
    let template_param = |value: &Value, at: String, problems: &mut Problems| {
        if let Some(name) = value.as_str().and_then(placeholder)
            && !declared(name)
        {
            problems.push(at, format!("{{:{name}}} names no declared param"));
        }
    };
    let id = map.get("id").cloned();
    if let Some(v) = &id {
        if !matches!(action, CrudAction::Update | CrudAction::Delete) {
            problems.push(join(path, "id"), "id applies to update and delete only");
        } else if !v.is_string() {
            problems.push(join(path, "id"), "id must be a record id or a placeholder like \"{:id}\"");
        }
        template_param(v, join(path, "id"), problems);
    }
    let filter = match map.get("filter") {
        None => None,
        Some(Value::String(text)) => {
            let fpath = join(path, "filter");
            if action == CrudAction::Create {
                problems.push(&fpath, "a create has no filter");
            }
            if text.contains("@request") {
                problems.push(&fpath, "an operation's filter refers to its params as {:param}, not @request");
            }
            match bind_filter(text) {
                Err(why) => problems.push(&fpath, why),
                Ok((bound, names)) => {
                    for name in names.iter().filter(|n| !declared(n)) {
                        problems.push(&fpath, format!("{{:{name}}} names no declared param"));
                    }
                    // A param the call may leave out would make the filter
                    // compare with nothing, which matches the empty records
                    // (`list = {:list}` with no list: every card without one).
                    let optional = |n: &str| params.iter().any(|p| p.name == n && !p.required && p.default.is_none());
                    for name in names.iter().filter(|n| optional(n)) {
                        problems.push(
                            &fpath,
                            format!(
                                "{{:{name}}} names a param a call may leave out; make it required or give it a default"
                            ),
                        );
                    }
                    // Whether it fits the schema is the store's to judge
                    // ([`check_filters`], once the file parsed).
                    if let Err(e) = a2app_filter::parse(&bound) {
                        problems.push(&fpath, format!("invalid filter: {}", e.message));
                    }
                }
            }
            Some(text.clone())
        }
        Some(_) => {
            problems.push(join(path, "filter"), "filter must be a string in the records API's filter syntax");
            None
        }
    };
    if matches!(action, CrudAction::Update | CrudAction::Delete) && id.is_none() && filter.is_none() {
        problems.push(path, "an update or delete names its record with \"id\" or its records with \"filter\"");
    }
    if id.is_some() && filter.is_some() {
        problems.push(path, "give \"id\" or \"filter\", not both");
    }
    let set = match map.get("set") {
        None => Map::new(),
        Some(Value::Object(set)) => {
            let spath = join(path, "set");
            if !matches!(action, CrudAction::Create | CrudAction::Update) {
                problems.push(&spath, "set applies to create and update only");
            }
            for (field, value) in set {
                if let Some(ent) = ent
                    && !ent.fields.contains_key(field)
                {
                    problems.push(join(&spath, field), format!("\"{field}\" is not a field of {entity}"));
                }
                template_param(value, join(&spath, field), problems);
            }
            set.clone()
        }
        Some(_) => {
            problems.push(join(path, "set"), "set must be an object of field → value or \"{:param}\"");
            Map::new()
        }
    };
    if action == CrudAction::Update && set.is_empty() {
        problems.push(path, "an update says what it changes in \"set\"");
    }
    if action == CrudAction::Create
        && map.get("set").is_none()
        && let Some(ent) = ent
    {
        for p in params.iter().filter(|p| !ent.fields.contains_key(&p.name)) {
            problems.push(
                join(path, "entity"),
                format!(
                    "a create without \"set\" writes its params as fields, but \"{}\" is not a field of {entity}",
                    p.name
                ),
            );
        }
    }
    let sort = match map.get("sort") {
        None => None,
        Some(Value::String(s)) => {
            if action != CrudAction::List {
                problems.push(join(path, "sort"), "sort applies to list only");
            }
            if let Err(e) = a2app_filter::parse_sort(s) {
                problems.push(join(path, "sort"), format!("invalid sort: {}", e.message));
            }
            Some(s.clone())
        }
        Some(_) => {
            problems.push(join(path, "sort"), "sort must be a string like \"-created\"");
            None
        }
    };
    (problems.list.len() == before).then_some(Crud { entity, action, id, filter, set, sort })
}

/// A value of each param's type, to compile a filter at check time.
/// Every crud filter of `operations` judged by `fits` against `schema`, with
/// each param given a value of its type (its default when it has one).
pub fn check_filters(operations: &[Operation], schema: &Schema, fits: crate::Fits) -> Vec<Problem> {
    let mut problems = Problems::new(FILE);
    for (i, op) in operations.iter().enumerate() {
        let Executor::Crud(crud) = &op.run else { continue };
        let Some(text) = &crud.filter else { continue };
        let Ok((bound, _)) = bind_filter(text) else { continue };
        let Ok(expr) = a2app_filter::parse(&bound) else { continue };
        if let Err(why) = fits(schema, &crud.entity, &expr, &sample_params(&op.params)) {
            let path = join(&join(&index("$", i), "executor"), "filter");
            problems.push(&path, format!("invalid filter for {}: {}", crud.entity, why.message));
        }
    }
    problems.list
}

fn sample_params(params: &[Param]) -> Map<String, Value> {
    params
        .iter()
        .map(|p| {
            let v = p.default.clone().unwrap_or(match p.kind {
                ParamType::String => Value::from(""),
                ParamType::Number => Value::from(0),
                ParamType::Boolean => Value::from(false),
            });
            (p.name.clone(), v)
        })
        .collect()
}

/// A route a backend serves, as it advertises it (`GET /_routes`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct Route {
    pub method: String,
    pub path: String,
}

/// Compares the `http` operations with the routes the backend advertises:
/// every declared route must be served, and every served route declared.
pub fn check_routes(operations: &[Operation], advertised: &[Route], backend_url: &str) -> Vec<Problem> {
    let mut problems = Problems::new(FILE);
    let served = |m: &str, p: &str| advertised.iter().any(|r| r.method.eq_ignore_ascii_case(m) && r.path == p);
    for (i, op) in operations.iter().enumerate() {
        if let Executor::Http(h) = &op.run
            && !served(&h.method, &h.path)
        {
            problems.push(
                join(&join(&index("$", i), "executor"), "path"),
                format!("the backend at {backend_url} does not serve {} {}", h.method, h.path),
            );
        }
    }
    for r in advertised {
        let declared = operations.iter().any(
            |op| matches!(&op.run, Executor::Http(h) if h.method.eq_ignore_ascii_case(&r.method) && h.path == r.path),
        );
        if !declared {
            problems.push(
                "$",
                format!(
                    "the backend at {backend_url} serves {} {}, but no operation declares it",
                    r.method.to_ascii_uppercase(),
                    r.path
                ),
            );
        }
    }
    problems.list
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_rewritten_outside_string_literals_only() {
        let (text, names) = bind_filter(r#"list = {:list} && title != "{:list}" && points > {:min}"#).unwrap();
        assert_eq!(text, r#"list = @request.query.list && title != "{:list}" && points > @request.query.min"#);
        assert_eq!(names, ["list", "min"]);
        assert!(bind_filter("x = {:Bad}").is_err());
        assert!(bind_filter("x = {:open").is_err());
        assert_eq!(placeholder("{:card}"), Some("card"));
        assert_eq!(placeholder("card"), None);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// What an author writes never panics the gate, and a rewrite keeps every
        /// character outside the placeholders.
        #[test]
        fn author_text_never_panics(text in "[{}:a-z0-9_\"' \\\\=é]{0,40}") {
            if let Ok((bound, names)) = bind_filter(&text) {
                proptest::prop_assert_eq!(bound.matches("@request.query.").count(), names.len());
            }
            let _ = crate::schedule::parse(&text);
            let _ = parse_duration(&text);
            let _ = parse(&text, None);
        }
    }

    #[test]
    fn reads_the_kanban_operations() {
        let schema = crate::schema::parse(include_str!("../../../examples/kanban/schema.json"), false).unwrap();
        let ops = parse(include_str!("../../../examples/kanban/operations.json"), Some(&schema)).unwrap();
        let kinds: Vec<(&str, &str)> = ops.iter().map(|o| (o.name.as_str(), o.run.kind())).collect();
        assert!(kinds.contains(&("move_card", "crud")));
        assert!(kinds.contains(&("clear_done", "crud")));
        assert!(kinds.contains(&("export_board", "job")));
    }
}
