//! The MCP tools, generated from the app's definition, never hand-listed per
//! app.
//!
//! The compact surface is a fixed set of generic tools (`describe`, `query`,
//! `get`, `create`, `update`, `delete`) whose size does not grow with the
//! number of entities: the entity is a parameter, and the entity names are in
//! the server's instructions and in describe, not in every schema. Each tool
//! is a thin adapter: decode the arguments, one `a2app_core` call, encode the
//! answer as `structuredContent` plus a text block.
//!
//! When the app has operations, `run_operation` and `job_status` join them,
//! and in `full` mode one typed tool per operation (`operation_tools`), all
//! over `core::operations` and `core::jobs` like `POST /api/ops/{name}`.

use super::Call;
use crate::http::State;
use a2app_core::Error;
use a2app_core::access::Intent;
use a2app_core::app::config::ToolSurface;
use a2app_core::app::operations::{Operation, ParamType};
use a2app_core::caller::Caller;
use a2app_core::records::{self, ListParams, Shape, WriteOptions};
use a2app_core::store::RequestInfo;
use a2app_core::{App, AppDefinition};
use protocol::arguments;
use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Tool};
use serde_json::{Map, Value, json};

/// The instructions sent with `initialize` and `server/discover`: what the
/// app is and which entities it has (kept out of the tool schemas so their
/// size stays flat).
pub fn instructions(app: &App) -> String {
    let config = &app.definition.config;
    let entities: Vec<&str> = app.definition.schema.entities.keys().map(String::as_str).collect();
    let mut text = config.name.clone();
    if !config.description.is_empty() {
        text.push_str(&format!(": {}", config.description));
    }
    text.push_str(&format!(
        "\nEntities: {}.\nCall describe first for fields, types and conventions; branch on error codes; \
         report writes from their receipt.",
        entities.join(", ")
    ));
    text
}

/// Every tool, in a fixed order: the compact surface, then the operation
/// tools (none when the app has no operations), then the claim check.
pub fn list(app: &App) -> Vec<Tool> {
    let mut defs = compact();
    defs.extend(operation_tools(&app.definition));
    defs.push(claims_def());
    defs.into_iter().filter_map(|def| serde_json::from_value(def).ok()).collect()
}

/// Whether a grant's scopes can use the tool `name` at all (each call is
/// still checked against the exact scope it needs).
pub fn granted(app: &App, grant: &a2app_core::caller::GrantAccess, name: &str) -> bool {
    use protocol::grant::Scope;
    let any = |held: fn(&Scope) -> bool| grant.scopes.iter().any(held);
    match name {
        // A grant's own writes are all it is checked against.
        "describe" | "check_claims" => true,
        "query" | "get" => any(|s| matches!(s, Scope::Read(_) | Scope::Write(_))),
        "create" | "update" | "delete" => any(|s| matches!(s, Scope::Write(_))),
        "run_operation" | "job_status" => any(|s| matches!(s, Scope::Operation(_))),
        op if app.definition.operations.iter().any(|o| o.name == op) => {
            grant.scopes.contains(&Scope::Operation(op.to_owned()))
        }
        _ => false,
    }
}

/// The scope a call of tool `name` with `args` needs, for a grant's step-up
/// challenge: `None` when the tool needs none of its own (describe, a job's
/// status) or the call names nothing a scope could cover (its own answer
/// then says what is wrong).
pub fn needed_scope(app: &App, name: &str, args: &Value) -> Option<protocol::grant::Scope> {
    use protocol::grant::Scope;
    let text = |key: &str| args.get(key).and_then(Value::as_str).map(str::to_owned);
    let entity = || text("entity").filter(|e| app.definition.schema.entities.contains_key(e));
    let operation = || text("name").filter(|n| app.definition.operations.iter().any(|o| &o.name == n));
    match name {
        "query" | "get" => entity().map(Scope::Read),
        "create" | "update" | "delete" => entity().map(Scope::Write),
        "run_operation" => operation().map(Scope::Operation),
        op if app.definition.operations.iter().any(|o| o.name == op) => Some(Scope::Operation(op.to_owned())),
        _ => None,
    }
}

fn entity_param() -> Value {
    json!({"type": "string", "pattern": "^[a-z][a-z0-9_]*$", "description": "Entity name (see describe)."})
}

fn id_param() -> Value {
    json!({"type": "string", "pattern": "^[a-z0-9]{15}$", "description": "Record id."})
}

fn shape_params() -> (Value, Value) {
    (
        json!({"type": "string", "description": "Ref fields to inline, comma-separated (e.g. list)."}),
        json!({"type": "string", "description": "Fields to return, comma-separated (e.g. id,title)."}),
    )
}

fn key_param() -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 255,
        "description": "Retry with this key: a repeat writes nothing (duplicate_request)."})
}

fn if_match_param() -> Value {
    json!({"type": "string", "description": "The updated value you read; changed since: version_conflict."})
}

/// A tool's input schema. No `$schema`: MCP reads a schema without one as
/// JSON Schema 2020-12, and the 57 bytes it costs each tool are the room the
/// compact list's token budget has (docs/decisions/0108).
fn schema(properties: Value, required: &[&str]) -> Value {
    let mut schema = json!({"type": "object", "properties": properties, "additionalProperties": false});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// `readOnlyHint`, `destructiveHint`, `idempotentHint`; never open-world:
/// every tool acts on this app's own data.
fn annotations(title: &str, read_only: bool, destructive: bool, idempotent: bool) -> Value {
    let mut a = json!({"title": title, "readOnlyHint": read_only, "openWorldHint": false});
    if !read_only {
        a["destructiveHint"] = json!(destructive);
        a["idempotentHint"] = json!(idempotent);
    }
    a
}

/// The compact surface. The order is the order of `tools/list`. The
/// `a2app mcp` gateway serves these same definitions with an `app` argument
/// added, so an agent meets one tool surface whichever way it reaches an app.
pub fn compact() -> Vec<Value> {
    let (expand, fields) = shape_params();
    vec![
        json!({
            "name": "describe",
            "description": "The app's model: entities, fields (types, limits), operations, conventions. Call it first. path narrows it: cards, cards/fields/title.",
            "inputSchema": schema(json!({"path": {"type": "string", "description": "Part to read; omit for all."}}), &[]),
            "annotations": annotations("Describe the app", true, false, true),
        }),
        json!({
            "name": "query",
            "description": "List records of an entity. Answers {page, perPage, totalItems, totalPages, items}.",
            "inputSchema": schema(json!({
                "entity": entity_param(),
                "filter": {"type": "string", "description": "PocketBase filter, e.g. done = false && due_date < \"2026-08-01\"."},
                "sort": {"type": "string", "description": "Fields, comma-separated; - for descending, e.g. -created."},
                "page": {"type": "integer", "minimum": 1, "default": 1},
                "perPage": {"type": "integer", "minimum": 1, "maximum": records::MAX_PER_PAGE, "default": records::DEFAULT_PER_PAGE},
                "expand": expand,
                "fields": fields,
            }), &["entity"]),
            "annotations": annotations("Query records", true, false, true),
        }),
        json!({
            "name": "get",
            "description": "Read one record by id.",
            "inputSchema": schema(json!({"entity": entity_param(), "id": id_param(), "expand": expand, "fields": fields}), &["entity", "id"]),
            "annotations": annotations("Get a record", true, false, true),
        }),
        json!({
            "name": "create",
            "description": "Create a record. Every invalid value is reported at once (code, field); fix all and retry. Answers the stored record with its _receipt.",
            "inputSchema": schema(json!({
                "entity": entity_param(),
                "record": {"type": "object", "description": "Field values as describe defines them; dates ISO 8601."},
                "idempotencyKey": key_param(),
            }), &["entity", "record"]),
            "annotations": annotations("Create a record", false, false, false),
        }),
        json!({
            "name": "update",
            "description": "Change fields of a record; the others keep their values. Answers the stored record with its _receipt.",
            "inputSchema": schema(json!({
                "entity": entity_param(),
                "id": id_param(),
                "record": {"type": "object", "description": "Only the fields to change."},
                "ifMatch": if_match_param(),
                "idempotencyKey": key_param(),
            }), &["entity", "id", "record"]),
            "annotations": annotations("Update a record", false, true, true),
        }),
        json!({
            "name": "delete",
            "description": "Delete a record. Ask the person first.",
            "inputSchema": schema(json!({
                "entity": entity_param(),
                "id": id_param(),
                "ifMatch": if_match_param(),
                "idempotencyKey": key_param(),
            }), &["entity", "id"]),
            "annotations": annotations("Delete a record", false, true, true),
        }),
    ]
}

/// `check_claims`: the agent's message for the person, checked against what
/// this caller stored since its last check. Read-only: it writes nothing the
/// app holds (the check is kept for the person's dashboard, as a read is
/// logged). The `a2app mcp` gateway serves it too.
pub fn claims_def() -> Value {
    json!({
        "name": "check_claims",
        "description": "Check your message to the person against your stored writes first. withheld: fix each discrepancy, do not send.",
        "inputSchema": schema(json!({
            "message": {"type": "string", "maxLength": a2app_core::claims::MAX_MESSAGE, "description": "Your text."},
            "since": {"type": "string", "description": "A time, or a check's cursor."},
        }), &["message"]),
        "annotations": annotations("Check claims", true, false, true),
    })
}

/// The text of a check for the model: the verdict, then what to do or what
/// to show.
pub fn claims_text(check: &protocol::claim::Check) -> String {
    use protocol::claim::Verdict;
    let mut lines = Vec::new();
    match check.verdict {
        Verdict::Pass => lines.push("pass: the message may be sent. Confirmations for the person:".to_owned()),
        Verdict::Withheld => lines.push("withheld: do not send the message.".to_owned()),
    }
    lines.extend(check.discrepancies.iter().map(|d| format!("- {}", d.message)));
    if check.verdict == Verdict::Pass {
        lines.extend(check.confirmations.iter().map(|c| format!("- {c}")));
    }
    lines.join("\n")
}

/// `show`: A2UI surfaces, for hosts that draw this app's view (the only
/// place a surface is drawn), so other hosts' lists keep their size.
pub fn show_tool() -> Tool {
    serde_json::from_value(show_def()).unwrap_or_else(|_| Tool::new("show", "", Map::new()))
}

/// `show`'s definition (the gateway adds its `app` argument).
pub fn show_def() -> Value {
    json!({
        "name": "show",
        "description": format!(
            "Show the person an A2UI v1.0 surface in this app's view (a form, a list, cards, an approval), or read one back. \
             messages: createSurface, updateComponents, updateDataModel, deleteSurface; catalog {} with Text, Row, Column, List, \
             Card, Divider, Button, TextField, CheckBox, ChoicePicker, DateTimeInput (a2app://a2ui/catalog has their properties). \
             A Button's action is {{event: {{name: one of this app's tools, context: its arguments, values or {{path}}}}}}; \
             it runs when the person presses it and confirms. surfaceId alone: that surface and what the person entered.",
            a2app_a2ui::CATALOG_ID
        ),
        "inputSchema": schema(json!({
            "messages": {"type": "array", "items": {"type": "object"}, "description": "A2UI v1.0 messages, applied all or nothing."},
            "surfaceId": {"type": "string", "description": "Read this surface back."},
        }), &[]),
        "annotations": annotations("Show a surface", false, false, true),
    })
}

/// `show`'s answer and its text: the surfaces it touched or read (with the
/// catalog id), or, for a `listing`, every surface's id. The gateway answers
/// the same.
pub fn show_answer(surfaces: Value, listing: bool) -> (Value, String) {
    let items = surfaces.as_array().map_or(&[][..], Vec::as_slice);
    if listing {
        let text = format!("{} surfaces; show {{surfaceId}} reads one.", items.len());
        return (json!({ "surfaces": surfaces }), text);
    }
    let said: Vec<String> = items
        .iter()
        .map(|m| match m.get("createSurface") {
            Some(c) => format!(
                "{} ({} components) is shown to the person",
                c["surfaceId"].as_str().unwrap_or_default(),
                c["components"].as_array().map_or(0, Vec::len)
            ),
            None => format!("{} is gone", m["deleteSurface"]["surfaceId"].as_str().unwrap_or_default()),
        })
        .collect();
    let text = format!("{}. Read what the person entered with show {{surfaceId}}.", said.join("; "));
    (json!({ "catalogId": a2app_a2ui::CATALOG_ID, "surfaces": surfaces }), text)
}

/// `run_operation` and `job_status`, listed only when the app has operations;
/// in `full` mode also one typed tool per operation (name = the operation's
/// name, parameters from `operations.json`).
fn operation_tools(def: &AppDefinition) -> Vec<Value> {
    let ops = &def.operations;
    if ops.is_empty() {
        return Vec::new();
    }
    let mut out = runner(ops.iter().any(|o| o.destructive));
    if def.config.mcp.tools == ToolSurface::Full {
        out.extend(ops.iter().map(operation_tool));
    }
    out
}

/// `run_operation` and `job_status`, whatever the operations are (the
/// gateway lists them for every app); `destructive` when any operation is.
pub fn runner(destructive: bool) -> Vec<Value> {
    vec![
        json!({
            "name": "run_operation",
            "description": "Run an operation (describe lists them). A destructive one answers approval_required with an approvalKey: ask the person, then repeat the call with it. A job answers a jobId.",
            "inputSchema": schema(json!({
                "name": {"type": "string", "description": "Operation name."},
                "params": {"type": "object", "description": "The operation's params."},
                "approvalKey": {"type": "string", "description": "From approval_required, after a person confirmed."},
                "idempotencyKey": key_param(),
            }), &["name"]),
            "annotations": annotations("Run an operation", false, destructive, false),
        }),
        json!({
            "name": "job_status",
            "description": "A job's state and progress.",
            "inputSchema": schema(json!({"jobId": {"type": "string", "description": "The job id."}}), &["jobId"]),
            "annotations": annotations("Job status", true, false, true),
        }),
    ]
}

/// A crud `list` operation only reads; every other kind may write.
fn reads_only(op: &Operation) -> bool {
    use a2app_core::app::operations::{CrudAction, Executor};
    matches!(&op.run, Executor::Crud(c) if c.action == CrudAction::List) && !op.destructive
}

/// One typed tool for one operation.
fn operation_tool(op: &Operation) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for p in &op.params {
        let kind = match p.kind {
            ParamType::String => "string",
            ParamType::Number => "number",
            ParamType::Boolean => "boolean",
        };
        let mut prop = json!({"type": kind});
        if !p.choices.is_empty() {
            prop["enum"] = Value::Array(p.choices.clone());
        }
        if let Some(d) = &p.default {
            prop["default"] = d.clone();
        }
        if !p.description.is_empty() {
            prop["description"] = json!(p.description);
        }
        if p.required {
            required.push(p.name.as_str());
        }
        properties.insert(p.name.clone(), prop);
    }
    if op.destructive {
        properties.insert(
            "approvalKey".into(),
            json!({"type": "string", "description": "From approval_required, after a person confirmed."}),
        );
    }
    let description =
        if op.description.is_empty() { format!("Run the operation {}.", op.name) } else { op.description.clone() };
    json!({
        "name": op.name,
        "description": description,
        "inputSchema": schema(Value::Object(properties), &required),
        "annotations": annotations(&op.name, reads_only(op), op.destructive, false),
    })
}

/// Runs a tool. App errors are `isError` results carrying the error envelope;
/// an unknown tool is `-32602`; anything unexpected is a generic error.
pub(crate) async fn call(
    state: &State,
    origin: &Call<'_>,
    name: &str,
    args: Map<String, Value>,
) -> Result<CallToolResult, ErrorData> {
    let app = &state.app;
    let listed = !matches!(name, "run_operation" | "job_status") || !app.definition.operations.is_empty();
    if let Some(properties) = declared(name).filter(|_| listed) {
        let unknown = arguments::undeclared(&args, properties);
        if !unknown.is_empty() {
            return Ok(failure(&Error::Invalid(unknown)));
        }
    }
    // Numbers no tool may take as sent; a record's are the guard's to name.
    let numbers = inexact_arguments(origin);
    let (in_record, elsewhere): (Vec<_>, Vec<_>) = numbers
        .into_iter()
        .partition(|n| matches!(name, "create" | "update") && n.path.first().is_some_and(|p| p == "record"));
    if !elsewhere.is_empty() {
        return Ok(failure(&Error::Invalid(a2app_core::number::violations(&elsewhere))));
    }
    let outcome = match name {
        "describe" => describe(app, &args),
        "query" => query(app, origin.caller, &args).await,
        "get" => get(app, origin.caller, &args).await,
        "create" | "update" | "delete" => write(state, origin, name, &args, in_record).await,
        "show" => show(state, origin, &args).await,
        "check_claims" => claims(state, origin, args).await,
        "run_operation" | "job_status" if !app.definition.operations.is_empty() => {
            operation(state, origin, name, &args).await
        }
        _ if app.definition.config.mcp.tools == ToolSurface::Full
            && app.definition.operations.iter().any(|o| o.name == name) =>
        {
            typed_operation(state, origin, name, &args).await
        }
        _ => {
            return Err(ErrorData::invalid_params(
                format!("no tool named {name}; tools/list names them"),
                Some(json!({"name": name})),
            ));
        }
    };
    Ok(match outcome {
        Ok(Answer { value, text }) => {
            let text = text.unwrap_or_else(|| serde_json::to_string(&value).unwrap_or_default());
            let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
            result.structured_content = Some(value);
            result
        }
        Err(error) => failure(&error),
    })
}

/// The arguments a fixed tool declares (the compact surface, `show`,
/// `run_operation`, `job_status`), built once: their schemas do not depend on
/// the app. A typed operation tool's arguments are the operation's params,
/// which core refuses by name when unknown.
fn declared(name: &str) -> Option<&'static Map<String, Value>> {
    static FIXED: std::sync::OnceLock<Vec<(String, Map<String, Value>)>> = std::sync::OnceLock::new();
    let fixed = FIXED.get_or_init(|| {
        compact()
            .into_iter()
            .chain([show_def(), claims_def()])
            .chain(runner(false))
            .filter_map(|def| {
                Some((def["name"].as_str()?.to_owned(), def["inputSchema"]["properties"].as_object()?.clone()))
            })
            .collect()
    });
    fixed.iter().find(|(n, _)| n == name).map(|(_, properties)| properties)
}

/// What a tool answered: the structured value, and its text when that is not
/// the value's JSON (a write's receipt).
struct Answer {
    value: Value,
    text: Option<String>,
}

impl Answer {
    fn json(value: impl serde::Serialize) -> Result<Answer, Error> {
        let value = serde_json::to_value(value).map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Answer { value, text: None })
    }
}

/// An app error as an `isError` result: the envelope as `structuredContent`
/// (code, field, every violation) and a text the model can act on.
fn failure(error: &Error) -> CallToolResult {
    if let Error::Internal(detail) = error {
        tracing::error!(%detail, "internal error in an MCP tool");
    }
    let body = error.to_body();
    let mut text = format!("{}: {}", body.code.as_str(), body.message);
    if matches!(error, Error::Unauthorized(_)) {
        // What an MCP host's user can act on: the header hosts let them set.
        text.push_str(
            "\nTo write, an MCP host signs in (OAuth, where the app asks for it) or sends Authorization: Bearer <contents of .agent-token>.",
        );
    }
    for v in &body.violations {
        let field = v.field.as_deref().unwrap_or("-");
        text.push_str(&format!("\n- {field}: {} ({})", v.code.as_str(), v.message));
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = serde_json::to_value(&body).ok();
    result
}

fn text(args: &Map<String, Value>, key: &str) -> Result<Option<String>, Error> {
    arguments::text(args, key).map_err(|v| Error::Invalid(vec![v]))
}

fn required(args: &Map<String, Value>, key: &str) -> Result<String, Error> {
    arguments::required(args, key).map_err(|v| Error::Invalid(vec![v]))
}

/// An integer argument, passed to core as the query-string text it parses.
fn number(args: &Map<String, Value>, key: &str) -> Result<Option<String>, Error> {
    Ok(arguments::number(args, key).map_err(|v| Error::Invalid(vec![v]))?.map(|n| n.to_string()))
}

fn bad_param(key: &str, expected: &str, got: &Value) -> Error {
    Error::Invalid(vec![arguments::invalid(key, expected, got)])
}

fn shape(args: &Map<String, Value>) -> Result<Shape, Error> {
    Ok(Shape { expand: text(args, "expand")?, fields: text(args, "fields")? })
}

/// A turn is a writer's: the caller is resolved as for a write.
async fn claims(state: &State, origin: &Call<'_>, args: Map<String, Value>) -> Result<Answer, Error> {
    let caller = crate::mcp::caller(state, &origin.parts.headers, Intent::Write).await?;
    let check = a2app_core::claims::check(&state.app, &caller, &Value::Object(args)).await?;
    let text = claims_text(&check);
    Ok(Answer { text: Some(text), ..Answer::json(check)? })
}

fn describe(app: &App, args: &Map<String, Value>) -> Result<Answer, Error> {
    match text(args, "path")? {
        Some(path) if !path.trim().is_empty() => Answer::json(app.describe_part(&path)?),
        _ => Answer::json(app.describe()),
    }
}

async fn query(app: &std::sync::Arc<App>, caller: &Caller, args: &Map<String, Value>) -> Result<Answer, Error> {
    let entity = required(args, "entity")?;
    let params = ListParams {
        page: number(args, "page")?,
        per_page: number(args, "perPage")?,
        sort: text(args, "sort")?,
        filter: text(args, "filter")?,
        expand: text(args, "expand")?,
        fields: text(args, "fields")?,
        skip_total: None,
    };
    // Over HTTP these read the request's URL query and headers; a tool call
    // has neither of its own, and a filter reading them would match nothing.
    let reads_request = [&params.filter, &params.sort]
        .into_iter()
        .flatten()
        .any(|t| t.contains("@request.query") || t.contains("@request.headers"));
    if reads_request {
        return Err(Error::InvalidQuery(
            "@request.query and @request.headers are an HTTP request's; a tool call has neither: write the value into the filter".into(),
        ));
    }
    let request = RequestInfo { method: "GET".into(), context: "default".into(), ..Default::default() };
    Answer::json(records::list(app, caller, &entity, &params, request).await?)
}

async fn get(app: &std::sync::Arc<App>, caller: &Caller, args: &Map<String, Value>) -> Result<Answer, Error> {
    let entity = required(args, "entity")?;
    let id = required(args, "id")?;
    Answer::json(records::view(app, caller, &entity, &id, &shape(args)?).await?)
}

/// The numbers of this call's arguments that cannot be kept, from the
/// arguments' root (`record.estimate`).
fn inexact_arguments(origin: &Call<'_>) -> Vec<a2app_core::number::Inexact> {
    let Some(numbers) = origin.parts.extensions.get::<crate::mcp::Numbers>() else { return Vec::new() };
    numbers
        .0
        .iter()
        .filter(|n| n.path.len() > 2 && n.path[0] == "params" && n.path[1] == "arguments")
        .map(|n| a2app_core::number::Inexact { path: n.path[2..].to_vec(), text: n.text.clone() })
        .collect()
}

async fn write(
    state: &State,
    origin: &Call<'_>,
    name: &str,
    args: &Map<String, Value>,
    in_record: Vec<a2app_core::number::Inexact>,
) -> Result<Answer, Error> {
    // Writes need the agent token (or the app's own origin), as over HTTP.
    let caller = crate::mcp::caller(state, &origin.parts.headers, Intent::Write).await?;
    let app = &state.app;
    let entity = required(args, "entity")?;
    let opts = WriteOptions {
        key: text(args, "idempotencyKey")?,
        if_match: text(args, "ifMatch")?,
        // The record's numbers, from the record's root.
        inexact: in_record
            .into_iter()
            .map(|n| a2app_core::number::Inexact { path: n.path[1..].to_vec(), text: n.text })
            .collect(),
        ..WriteOptions::default()
    };
    let record = || -> Result<Value, Error> {
        match args.get("record") {
            Some(v @ Value::Object(_)) => Ok(v.clone()),
            other => Err(bad_param("record", "an object of field values", other.unwrap_or(&Value::Null))),
        }
    };
    let stored = match name {
        "create" => records::create(app, &caller, &entity, &record()?, &opts).await?,
        "update" => {
            let id = required(args, "id")?;
            records::update(app, &caller, &entity, &id, &record()?, &opts).await?
        }
        _ => {
            let id = required(args, "id")?;
            let receipt = records::delete(app, &caller, &entity, &id, &opts).await?;
            let text = receipt.text.clone();
            return Ok(Answer { value: json!({ "_receipt": receipt }), text: Some(text) });
        }
    };
    let text = stored.get("_receipt").and_then(|r| r.get("text")).and_then(Value::as_str).map(str::to_owned);
    Ok(Answer { value: Value::Object(stored), text })
}

/// `show`: renders messages or reads a surface (both with the agent token).
async fn show(state: &State, origin: &Call<'_>, args: &Map<String, Value>) -> Result<Answer, Error> {
    let app = &state.app;
    // Reading is a write's credential too: a surface holds what the person
    // typed, which is theirs and the agent's, not every visitor's.
    let who = crate::mcp::caller(state, &origin.parts.headers, Intent::Write).await?;
    a2app_core::surfaces::may_use(&who)?;
    let (value, text) = match (args.get("messages"), text(args, "surfaceId")?) {
        (Some(_), Some(_)) => {
            let v = protocol::Violation::new(
                protocol::ErrorCode::InvalidParam,
                "give messages to render, or a surfaceId to read, not both",
            )
            .field("surfaceId");
            return Err(Error::Invalid(vec![v]));
        }
        (Some(batch), None) => show_answer(Value::from(a2app_core::surfaces::render(app, batch).await?), false),
        (None, Some(id)) => show_answer(json!([a2app_core::surfaces::get(app, &id).await?]), false),
        (None, None) => show_answer(Value::from(a2app_core::surfaces::list(app).await?), true),
    };
    Ok(Answer { value, text: Some(text) })
}

/// `run_operation` and `job_status`.
async fn operation(state: &State, origin: &Call<'_>, tool: &str, args: &Map<String, Value>) -> Result<Answer, Error> {
    if tool == "job_status" {
        let job = a2app_core::jobs::get(&state.app, &required(args, "jobId")?).await?;
        return Answer::json(job);
    }
    let name = required(args, "name")?;
    let params = match args.get("params") {
        None | Some(Value::Null) => Value::Null,
        Some(v @ Value::Object(_)) => v.clone(),
        Some(other) => return Err(bad_param("params", "an object of the operation's params", other)),
    };
    invoke(state, origin, &name, params, args).await
}

/// A `full` mode tool: the arguments are the operation's params.
async fn typed_operation(
    state: &State,
    origin: &Call<'_>,
    name: &str,
    args: &Map<String, Value>,
) -> Result<Answer, Error> {
    let mut params = args.clone();
    params.remove("approvalKey");
    params.remove("idempotencyKey");
    invoke(state, origin, name, Value::Object(params), args).await
}

/// Runs an operation as `POST /api/ops/{name}` does: a write-authorized
/// caller, the approval key of a destructive one, the idempotency key.
async fn invoke(
    state: &State,
    origin: &Call<'_>,
    name: &str,
    params: Value,
    args: &Map<String, Value>,
) -> Result<Answer, Error> {
    use a2app_core::operations::{Answer as Ran, Invocation};
    let caller = crate::mcp::caller(state, &origin.parts.headers, Intent::Write).await?;
    let invocation =
        Invocation::new(params).approval(text(args, "approvalKey")?).idempotency_key(text(args, "idempotencyKey")?);
    match a2app_core::operations::invoke(&state.app, &caller, name, invocation).await? {
        Ran::Done(done) => {
            let text = (!done.receipts.is_empty())
                .then(|| done.receipts.iter().map(|r| r.text.as_str()).collect::<Vec<_>>().join("\n"));
            let mut answer = Answer::json(done)?;
            answer.text = text;
            Ok(answer)
        }
        Ran::Started(started) => {
            let text =
                format!("Started job {} ({}); read its progress with job_status.", started.job_id, started.operation);
            let mut answer = Answer::json(started)?;
            answer.text = Some(text);
            Ok(answer)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn definition(surface: &str) -> AppDefinition {
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("app.toml", format!("id = \"t\"\nname = \"T\"\n[mcp]\ntools = \"{surface}\"\n")),
            ("schema.json", r#"{"entities":{"notes":{"fields":{"title":{"type":"string"}}}}}"#.to_owned()),
            (
                "operations.json",
                r#"[{"name":"archive_done","description":"Archive finished notes.","destructive":true,
                     "params":{"older_than":{"type":"number","required":true},"mode":{"type":"string","enum":["soft","hard"],"default":"soft"}},
                     "executor":{"kind":"crud","entity":"notes","action":"delete","filter":"title = ''"}},
                    {"name":"export","params":{},"executor":{"kind":"job","run":"export"}}]"#
                    .to_owned(),
            ),
        ];
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        a2app_core::app::load(dir.path()).unwrap()
    }

    fn names(defs: &[Value]) -> Vec<&str> {
        defs.iter().map(|d| d["name"].as_str().unwrap()).collect()
    }

    #[test]
    fn operation_tools_are_generated_from_operations_json() {
        let compact = operation_tools(&definition("compact"));
        assert_eq!(names(&compact), ["run_operation", "job_status"]);
        assert_eq!(compact[0]["annotations"]["destructiveHint"], true);
        assert_eq!(compact[1]["annotations"]["readOnlyHint"], true);

        let full = operation_tools(&definition("full"));
        assert_eq!(names(&full), ["run_operation", "job_status", "archive_done", "export"]);
        let archive = &full[2];
        assert_eq!(archive["description"], "Archive finished notes.");
        assert_eq!(archive["annotations"]["destructiveHint"], true);
        let schema = &archive["inputSchema"];
        assert_eq!(schema["required"], json!(["older_than"]));
        assert_eq!(schema["properties"]["older_than"], json!({"type": "number"}));
        assert_eq!(
            schema["properties"]["mode"],
            json!({"type": "string", "enum": ["soft", "hard"], "default": "soft"})
        );
        assert_eq!(schema["properties"]["approvalKey"]["type"], "string");
        assert_eq!(full[3]["annotations"]["destructiveHint"], false);
        assert!(full[3]["inputSchema"]["properties"].get("approvalKey").is_none());
        // Every generated definition is a valid rmcp tool.
        assert!(full.into_iter().all(|d| serde_json::from_value::<Tool>(d).is_ok()));
    }

    #[test]
    fn an_app_without_operations_gets_no_operation_tools() {
        let mut def = definition("full");
        def.operations.clear();
        assert!(operation_tools(&def).is_empty());
    }
}
