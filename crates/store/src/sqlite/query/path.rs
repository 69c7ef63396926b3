//! Relation paths as SQL: the hops a field path walks (`list.owner.name`,
//! `assignees.name`, `cards_via_list.title`, `tags:each`) and the LEFT JOINs that
//! walk them. LEFT JOINs starting from a one-row dummy table reproduce PocketBase's
//! top-level LEFT JOIN exactly: a missing target gives NULLs, and an empty list gives
//! one row of NULLs (which is why `assignees.name = ''` matches a card with none).

use protocol::schema::{Entity, FieldType, SYSTEM_FIELDS, Schema};
use rusqlite::types::Value;

use super::Sql;

/// What a column holds, with system fields folded in.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Column {
    Text,
    Number,
    Boolean,
    Datetime,
    Enum,
    Ref(String),
    ListEnum,
    ListRef(String),
    Json,
    Binary,
}

impl Column {
    /// PocketBase's "MultiValuer" fields (select, relation, file): the ones `:each`
    /// and `:length` apply to.
    pub(super) fn is_multi_valuer(&self) -> bool {
        matches!(self, Column::Enum | Column::Ref(_) | Column::ListEnum | Column::ListRef(_) | Column::Binary)
    }

    /// Stored as a JSON array.
    pub(super) fn is_list(&self) -> bool {
        matches!(self, Column::ListEnum | Column::ListRef(_))
    }

    pub(super) fn type_name(&self) -> &'static str {
        match self {
            Column::Text => "string",
            Column::Number => "number",
            Column::Boolean => "boolean",
            Column::Datetime => "datetime",
            Column::Enum => "enum",
            Column::Ref(_) => "ref",
            Column::ListEnum => "list<enum>",
            Column::ListRef(_) => "list<ref>",
            Column::Json => "json",
            Column::Binary => "binary",
        }
    }
}

/// The column `name` of `entity`, system fields included.
pub(super) fn column(entity: &Entity, name: &str) -> Option<Column> {
    match name {
        "id" => return Some(Column::Text),
        "created" | "updated" => return Some(Column::Datetime),
        _ => {}
    }
    Some(match &entity.fields.get(name)?.kind {
        FieldType::String { .. } => Column::Text,
        FieldType::Number { .. } => Column::Number,
        FieldType::Boolean => Column::Boolean,
        FieldType::Datetime => Column::Datetime,
        FieldType::Enum { .. } => Column::Enum,
        FieldType::Ref { entity } => Column::Ref(entity.clone()),
        FieldType::ListEnum { .. } => Column::ListEnum,
        FieldType::ListRef { entity } => Column::ListRef(entity.clone()),
        FieldType::Json => Column::Json,
        FieldType::Binary { .. } => Column::Binary,
    })
}

/// "fields of cards: id, title, …, created, updated", for unknown-field messages.
pub(super) fn field_list(schema: &Schema, entity: &str) -> String {
    let Some(e) = schema.entities.get(entity) else { return String::new() };
    let mut names: Vec<&str> = vec!["id"];
    names.extend(e.fields.keys().map(String::as_str).filter(|n| !SYSTEM_FIELDS.contains(n)));
    names.extend(["created", "updated"]);
    format!("fields of {entity}: {}", names.join(", "))
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Hop {
    /// A `ref` field: at most one target.
    Single { field: String, target: String },
    /// A `list<ref>` field: any number of targets.
    Multi { field: String, target: String },
    /// `<entity>_via_<field>`: the records of `entity` whose `field` points back here.
    Back { entity: String, field: String, list: bool },
    /// `field:each` on a list field: one row per item.
    Each { field: String },
    /// `@collection.<entity>[:alias]`: every record of an unrelated entity.
    Collection { entity: String, alias: String },
    /// `@request.body.<field>:each`: one row per submitted item (JSON array text).
    BodyEach { items: String },
    /// `@request.body.<ref>.…`: the submitted ids (JSON array text) of `target`.
    BodyRef { target: String, ids: String, list: bool },
}

impl Hop {
    /// Whether the hop can yield more than one row, making the path multi-valued
    /// (match-all by default, `?` for any).
    pub(super) fn is_multi(&self) -> bool {
        match self {
            Hop::Single { .. } => false,
            Hop::BodyRef { list, .. } => *list,
            Hop::Multi { .. } | Hop::Back { .. } | Hop::Each { .. } | Hop::Collection { .. } | Hop::BodyEach { .. } => {
                true
            }
        }
    }
}

/// What is read at the end of a path.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Terminal {
    Column(String),
    /// A json field, optionally with a path below it (`$.a.b`, `$.items[0]`).
    Json {
        column: String,
        path: String,
    },
    /// `:length` of a multi-value field.
    Length(String),
    /// The item of the last `Each`/`BodyEach` hop.
    Item,
    /// `:each` of a single-value field: its value without the column's type
    /// affinity, as the `json_each` item PocketBase reads would be.
    SingleItem(String),
    Lower(Box<Terminal>),
    /// `strftime(format, <inner>, modifiers...)` over a multi-value path.
    Strftime {
        format: String,
        inner: Box<Terminal>,
        modifiers: Vec<String>,
    },
}

pub(super) use crate::sql::quote;

/// `x` as a JSON array for `json_each`/`json_array_length`: an array stays, any
/// other value becomes a one-item array (PocketBase's normalisation for non-JSON
/// columns). CASE keeps `json_type` from ever seeing malformed JSON.
fn as_json_array(x: &str) -> String {
    format!(
        "CASE WHEN json_valid({x}) THEN (CASE WHEN json_type({x}) = 'array' THEN {x} ELSE json_array({x}) END) ELSE json_array({x}) END"
    )
}

/// The SQL for `terminal` read from table alias `alias` (already quoted).
pub(super) fn terminal_sql(alias: &str, terminal: &Terminal) -> Sql {
    match terminal {
        Terminal::Column(c) => Sql::raw(format!("{alias}.{}", quote(c))),
        Terminal::Item => Sql::raw(format!("{alias}.\"value\"")),
        // Unary plus is a no-op that drops the affinity: `0 > +status` compares a
        // number with text, where `0 > status` would first turn 0 into '0'.
        Terminal::SingleItem(c) => Sql::raw(format!("+{alias}.{}", quote(c))),
        Terminal::Json { column, path } => {
            // Non-JSON text is wrapped in an object so json_extract still works on it;
            // the path is user input, so it is bound, never spliced.
            let x = format!("{alias}.{}", quote(column));
            let mut sql = Sql::raw(format!("(CASE WHEN json_valid({x}) THEN json_extract({x}, "));
            sql.push_param(Value::Text(format!("${path}")));
            sql.push_str(&format!(") ELSE json_extract(json_object('pb', {x}), "));
            sql.push_param(Value::Text(format!("$.pb{path}")));
            sql.push_str(") END)");
            sql
        }
        Terminal::Length(c) => {
            let x = format!("{alias}.{}", quote(c));
            Sql::raw(format!(
                "(CASE WHEN json_valid({x}) THEN (CASE WHEN json_type({x}) = 'array' THEN json_array_length({x}) ELSE 1 END) WHEN {x} IS NULL OR {x} = '' THEN 0 ELSE 1 END)"
            ))
        }
        Terminal::Lower(inner) => {
            let mut sql = Sql::raw("LOWER(");
            sql.push(&terminal_sql(alias, inner));
            sql.push_str(")");
            sql
        }
        Terminal::Strftime { format, inner, modifiers } => {
            strftime_sql(format, Some(&terminal_sql(alias, inner)), modifiers)
        }
    }
}

/// A new quoted table alias. Entity names start with a letter, so `__j<n>` can
/// never shadow a table.
pub(super) fn fresh_alias(counter: &mut usize) -> String {
    *counter += 1;
    format!("\"__j{counter}\"")
}

/// The LEFT JOINs for `hop` from table alias `prev` (quoted), with aliases from
/// `counter`. Returns the joins and the alias the next hop starts from.
pub(super) fn hop_joins(hop: &Hop, prev: &str, counter: &mut usize) -> (Sql, String) {
    let mut fresh = || fresh_alias(counter);
    match hop {
        Hop::Single { field, target } => {
            let a = fresh();
            (Sql::raw(format!(" LEFT JOIN {} {a} ON {a}.\"id\" = {prev}.{}", quote(target), quote(field))), a)
        }
        Hop::Multi { field, target } => {
            let e = fresh();
            let a = fresh();
            let items = as_json_array(&format!("{prev}.{}", quote(field)));
            (
                Sql::raw(format!(
                    " LEFT JOIN json_each({items}) {e} LEFT JOIN {} {a} ON {a}.\"id\" = {e}.\"value\"",
                    quote(target)
                )),
                a,
            )
        }
        Hop::Back { entity, field, list: false } => {
            let a = fresh();
            (Sql::raw(format!(" LEFT JOIN {} {a} ON {a}.{} = {prev}.\"id\"", quote(entity), quote(field))), a)
        }
        Hop::Back { entity, field, list: true } => {
            let a = fresh();
            let e = fresh();
            let items = as_json_array(&format!("{a}.{}", quote(field)));
            (
                Sql::raw(format!(
                    " LEFT JOIN {} {a} ON {prev}.\"id\" IN (SELECT {e}.\"value\" FROM json_each({items}) {e})",
                    quote(entity)
                )),
                a,
            )
        }
        Hop::Each { field } => {
            let e = fresh();
            let items = as_json_array(&format!("{prev}.{}", quote(field)));
            (Sql::raw(format!(" LEFT JOIN json_each({items}) {e}")), e)
        }
        Hop::Collection { entity, .. } => {
            let a = fresh();
            (Sql::raw(format!(" LEFT JOIN {} {a} ON 1", quote(entity))), a)
        }
        Hop::BodyEach { items } => {
            let e = fresh();
            let mut sql = Sql::raw(" LEFT JOIN json_each(");
            sql.push_param(Value::Text(items.clone()));
            sql.push_str(&format!(") {e}"));
            (sql, e)
        }
        Hop::BodyRef { target, ids, .. } => {
            let a = fresh();
            let mut sql = Sql::raw(format!(
                " LEFT JOIN {} {a} ON {a}.\"id\" IN (SELECT \"value\" FROM json_each(",
                quote(target)
            ));
            sql.push_param(Value::Text(ids.clone()));
            sql.push_str("))");
            (sql, a)
        }
    }
}

/// `strftime(?, time, ?...)` with the format and modifiers bound.
pub(super) fn strftime_sql(format: &str, time: Option<&Sql>, modifiers: &[String]) -> Sql {
    let mut sql = Sql::raw("strftime(");
    sql.push_value(Value::Text(format.to_string()));
    if let Some(time) = time {
        sql.push_str(", ");
        sql.push(time);
    }
    for modifier in modifiers {
        sql.push_str(", ");
        sql.push_value(Value::Text(modifier.clone()));
    }
    sql.push_str(")");
    sql
}
