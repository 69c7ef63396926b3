//! Describe: the app's data model, verbs and conventions, generated from the
//! live schema and operations on every call so it cannot drift.

use crate::config::AuthMode;
use crate::directory::AppDefinition;
use crate::error::Error;
use indexmap::IndexMap;
use protocol::describe::{Describe, DescribedApp, DescribedEntity, DescribedOperation, DescribedParam, SystemField};
use serde_json::Value;

/// The conventions every agent gets, in the app, not in any one client.
const CONVENTIONS: &[(&str, &str)] = &[
    (
        "preferOperations",
        "When an operation does what you want, call it instead of writing records: it is the app's own verb and keeps its rules.",
    ),
    (
        "confirmDestructive",
        "Ask the person before running anything marked destructive; such operations answer approval_required until a person confirmed.",
    ),
    (
        "writeLikeTheUi",
        "Write only what the app's own interface would write; do not invent fields or put data in a field that means something else.",
    ),
    (
        "resolveLabels",
        "Refer to records by id. To turn a name such as \"To Do\" into an id, make one filtered GET on the entity's label field; more than one match is ambiguous: ask, never pick.",
    ),
    (
        "dates",
        "Send dates as ISO 8601 (2026-07-31 or 2026-07-31T09:00:00Z) and day keys as YYYY-MM-DD; resolve words like \"tomorrow\" yourself with serverNow and serverTzOffsetMinutes from /api/_a2app.",
    ),
    (
        "neverApproximate",
        "If the app cannot express what was asked, say so; never approximate it with a field or value that means something else.",
    ),
    (
        "retries",
        "Send an Idempotency-Key with every write you might retry; a replay answers 409 duplicate_request naming the record already written.",
    ),
    (
        "errors",
        "Branch on the error code, never on the message; every violation of a write comes back at once, so fix them all in one retry.",
    ),
    ("receipts", "Report what a write did from its _receipt, which the app generated from the stored record."),
];

/// The describe document of `def`, whose [`version`] is `schema_version`.
pub fn describe(def: &AppDefinition, schema_version: &str) -> Describe {
    let entities = def
        .schema
        .entities
        .iter()
        .map(|(name, e)| {
            let system = ["id", "created", "updated"]
                .iter()
                .map(|f| {
                    let (kind, format) = if *f == "id" {
                        ("string", "15 characters of [a-z0-9]")
                    } else {
                        ("datetime", "YYYY-MM-DD HH:MM:SS.mmmZ (UTC)")
                    };
                    (f.to_string(), SystemField { kind: kind.into(), read_only: true, format: format.into() })
                })
                .collect();
            let described = DescribedEntity {
                label: e.label.clone(),
                records: format!("/api/collections/{name}/records"),
                fields: e.fields.clone(),
                system_fields: system,
                indexes: e.indexes.clone(),
            };
            (name.clone(), described)
        })
        .collect();
    let operations = def
        .operations
        .iter()
        .map(|op| DescribedOperation {
            name: op.name.clone(),
            description: op.description.clone(),
            params: described_params(&op.params),
            executor: op.run.kind().to_owned(),
            destructive: op.destructive,
            schedule: op.schedule.clone(),
            url: format!("/api/ops/{}", op.name),
            consent: (op.destructive && def.config.destructive_consent == crate::config::DestructiveConsent::Person)
                .then(|| "person".to_owned()),
        })
        .collect();
    Describe {
        app: DescribedApp {
            id: def.config.id.clone(),
            name: def.config.name.clone(),
            description: def.config.description.clone(),
            auth_mode: match def.config.auth_mode {
                AuthMode::SingleUser => "single-user".into(),
                AuthMode::MultiUser => "multi-user".into(),
            },
            timezone: def.config.timezone.clone(),
        },
        schema_version: schema_version.to_owned(),
        entities,
        operations,
        requests: def.requests.iter().map(capability).collect(),
        conventions: CONVENTIONS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<IndexMap<_, _>>(),
    }
}

/// `schemaVersion`: the schema's fingerprint, extended by the operations and
/// request capabilities when there are any (so an app with neither keeps the
/// version it always had). Clients cache describe under it: an operation or a
/// capability reworded must change it, or a client would act on the old words.
pub fn version(def: &AppDefinition) -> String {
    let base = crate::schema::fingerprint(&def.schema);
    if def.operations.is_empty() && def.requests.is_empty() {
        return base;
    }
    let ops: Vec<Value> = def
        .operations
        .iter()
        .map(|op| {
            serde_json::json!([
                op.name,
                op.description,
                described_params(&op.params),
                op.run.kind(),
                op.destructive,
                op.schedule
            ])
        })
        .collect();
    let caps: Vec<protocol::request::Capability> = def.requests.iter().map(capability).collect();
    let canonical = serde_json::to_string(&(base, ops, caps)).unwrap_or_default();
    format!("sv_{:08x}", crc32fast::hash(canonical.as_bytes()))
}

/// Declared params as describe publishes them.
fn described_params(params: &[crate::operations::Param]) -> IndexMap<String, DescribedParam> {
    params
        .iter()
        .map(|p| {
            let param = DescribedParam {
                kind: p.kind.as_str().into(),
                required: p.required,
                default: p.default.clone(),
                choices: p.choices.clone(),
                description: p.description.clone(),
            };
            (p.name.clone(), param)
        })
        .collect()
}

/// A capability of `requests.json` as describe publishes it: the words a
/// person consents to on the agent's side.
pub fn capability(c: &crate::requests::Capability) -> protocol::request::Capability {
    protocol::request::Capability {
        name: c.name.clone(),
        title: c.title.clone(),
        description: c.description.clone(),
        reads: c.reads.clone(),
        writes: c.writes.clone(),
        params: described_params(&c.params),
        result: described_params(&c.result),
    }
}

/// One part of describe: `cards`, `cards/title`, `cards/fields/title`,
/// `operations`, `operations/<name>`, `conventions` (`.` works as `/` too).
pub fn part(def: &AppDefinition, schema_version: &str, path: &str) -> Result<Value, Error> {
    let doc = serde_json::to_value(describe(def, schema_version)).map_err(|e| Error::Internal(e.to_string()))?;
    let not_found = Error::Missing;
    // An operation's name may hold `.` (`v2.sync`): after `operations` the
    // rest of the path is the name as written.
    let trimmed = path.trim_matches('/');
    if let Some(name) = trimmed.strip_prefix("operations").filter(|r| r.is_empty() || r.starts_with(['/', '.'])) {
        let name = name.get(1..).unwrap_or_default().trim_matches('/');
        let ops = doc["operations"].clone();
        return match name {
            "" => Ok(ops),
            name if name.contains('/') => Err(not_found(format!("describe has no part \"{path}\""))),
            name => ops
                .as_array()
                .and_then(|list| list.iter().find(|o| o["name"] == name))
                .cloned()
                .ok_or_else(|| Error::UnknownOperation(name.to_owned())),
        };
    }
    let segments: Vec<&str> = path.split(['/', '.']).filter(|s| !s.is_empty()).collect();
    let Some((first, rest)) = segments.split_first() else { return Ok(doc) };
    match *first {
        "conventions" | "app" | "schemaVersion" | "requests" if rest.is_empty() && doc.get(*first).is_some() => {
            Ok(doc[*first].clone())
        }
        "entities" if rest.is_empty() => Ok(doc["entities"].clone()),
        _ => {
            let (entity, rest) = if *first == "entities" { (rest[0], &rest[1..]) } else { (*first, rest) };
            let ent = doc["entities"].get(entity).cloned().ok_or_else(|| Error::UnknownEntity(entity.to_owned()))?;
            match rest {
                [] => Ok(ent),
                ["fields"] => Ok(ent["fields"].clone()),
                ["fields", field] | [field] => ent["fields"]
                    .get(*field)
                    .or_else(|| ent["systemFields"].get(*field))
                    .cloned()
                    .ok_or_else(|| not_found(format!("{entity} has no field \"{field}\""))),
                _ => Err(not_found(format!("describe has no part \"{path}\""))),
            }
        }
    }
}
