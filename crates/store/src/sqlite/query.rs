//! Compiles a parsed filter and sort against the schema into parameterized SQLite SQL
//! with PocketBase 0.40.6's semantics (`tools/search/filter.go` and the record field
//! resolver).
//!
//! The output is a WHERE condition (and an ORDER BY body) for
//! `SELECT * FROM "<entity>" WHERE … ORDER BY …`, using positional `?` parameters only.
//! Every literal, macro value and `@request.*` value is bound; only schema names are
//! written into the SQL text. There are no top-level JOINs: a single-relation path is
//! a correlated scalar subquery, and a multi-value path (list relation, back-relation,
//! `:each`, `@collection`) lives inside one `EXISTS (SELECT 1 FROM … LEFT JOIN …)`
//! that plays the role of PocketBase's joined, DISTINCT top-level query, so
//! conditions on the same path see the same related row, exactly as there.
//! Match-all (the default for multi-value operands) adds PocketBase's
//! `NOT EXISTS (… WHERE NOT cond)` subquery; the `?` operators only need one match.
//!
//! Where we knowingly differ from PocketBase (each is an error or a fix, never a
//! silent change of meaning):
//! - an ISO 8601 text with a `T` compared with a datetime column is normalised to
//!   the stored form, so it matches the instant it names (PocketBase matches nothing);
//! - a modifier PocketBase silently ignores is an error: `:each`/`:length` on a field
//!   that is not list, enum, ref or binary, `:isset`/`:changed` outside `@request`,
//!   modifiers inside a json path, `:each`/`:length` on query, header or auth values;
//! - `geoDistance()` is refused: there is no geoPoint type and the bundled SQLite has
//!   no math functions;
//! - `@request.auth.*` reads the auth record given in the request, without a join:
//!   paths through its relations (`@request.auth.team.name`) read nested JSON, not
//!   another table;
//! - a LIKE whose pattern is `@request.body.<field>:each` is refused (PocketBase
//!   either fails or matches nothing, depending on the query plan).

mod path;
mod values;

use protocol::schema::{Entity, Schema};
use rusqlite::types::Value;
use serde_json::{Map, Value as Json};

use a2app_filter::{CompareOp, Comparison, Expr, FilterError, Operand, OperandKind, SortKey, SortTarget};
use path::{Column, Hop, Terminal, column, field_list, fresh_alias, hop_joins, quote, strftime_sql, terminal_sql};
use values::{MACROS, json_to_param, lookup, macro_value, normalize_iso_datetime, param_to_text};

/// PocketBase follows at most this many relations in one path (`maxNestedRels`).
const MAX_NESTED_RELATIONS: usize = 6;
/// SQLite's limit on the tables of one join.
const MAX_JOINED_TABLES: usize = 64;

/// What `@request.*` resolves to. Built by the transport for the request at hand;
/// every value ends up as a bound parameter.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestInfo {
    /// The authenticated record (`@request.auth.*`), `None` for a guest.
    pub auth: Option<Map<String, Json>>,
    /// `@request.method`, e.g. `GET`.
    pub method: String,
    /// `@request.headers.*`. PocketBase lower-cases names and turns `-` into `_`;
    /// lookups here also accept the raw header name.
    pub headers: Map<String, Json>,
    /// `@request.query.*`.
    pub query: Map<String, Json>,
    /// `@request.body.*`, `None` when the request has no body.
    pub body: Option<Map<String, Json>>,
    /// `@request.context`: `default`, `oauth2`, `otp`, `password`, `realtime`, `protectedFile`.
    pub context: String,
}

/// Everything a filter may depend on besides the schema: the clock for the datetime
/// macros (injected, so tests do not depend on the wall clock) and the request.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryContext {
    pub now: jiff::Timestamp,
    pub request: RequestInfo,
}

/// A piece of SQL and its positional parameters, in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SqlFragment {
    pub sql: String,
    pub params: Vec<Value>,
}

/// Compiles `expr` into a WHERE condition over the table of `entity`.
pub fn compile_filter(
    schema: &Schema,
    entity: &str,
    expr: &Expr,
    ctx: &QueryContext,
) -> Result<SqlFragment, FilterError> {
    let mut compiler = Compiler::new(schema, entity, ctx)?;
    // Conjuncts that do not touch a multi-value path stay outside the EXISTS wrapper,
    // so that plain conditions can still use the table's indexes.
    let conjuncts: Vec<&Expr> = match expr {
        Expr::And(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut outside: Vec<Sql> = Vec::new();
    let mut inside: Vec<Sql> = Vec::new();
    for conjunct in conjuncts {
        compiler.uses_wrapper = false;
        let sql = compiler.expr(conjunct)?;
        if compiler.uses_wrapper { inside.push(sql) } else { outside.push(sql) }
    }
    if !inside.is_empty() {
        // SQLite refuses a join of more than 64 tables; say so in the filter's terms
        // rather than let the query fail. (PocketBase's joined query has the same cap.)
        let tables = 1 + compiler.joins.iter().map(|j| j.sql.text.matches(" LEFT JOIN ").count()).sum::<usize>();
        if tables > MAX_JOINED_TABLES {
            return Err(FilterError::new(
                format!(
                    "the filter follows too many different multi-value paths: {tables} joined tables, SQLite allows {MAX_JOINED_TABLES}"
                ),
                0,
            ));
        }
        let mut wrapper = Sql::raw("EXISTS (SELECT 1 FROM (SELECT 1) \"__base\"");
        for join in &compiler.joins {
            wrapper.push(&join.sql);
        }
        wrapper.push_str(" WHERE ");
        wrapper.push(&Sql::join(&inside, " AND "));
        wrapper.push_str(")");
        outside.push(wrapper);
    }
    let sql = if outside.len() == 1 { outside.remove(0) } else { Sql::join(&outside, " AND ").parenthesized() };
    Ok(SqlFragment { sql: sql.text, params: sql.params })
}

/// Compiles sort keys into an ORDER BY body (`""` when there are none).
///
/// A key must name a column: a field, a relation path (read through a scalar
/// subquery; for a multi-value path, its first value) or `@random`/`@rowid`.
pub fn compile_sort(
    schema: &Schema,
    entity: &str,
    keys: &[SortKey],
    ctx: &QueryContext,
) -> Result<SqlFragment, FilterError> {
    let mut compiler = Compiler::new(schema, entity, ctx)?;
    let mut parts: Vec<Sql> = Vec::new();
    for key in keys {
        let direction = if key.descending { "DESC" } else { "ASC" };
        let mut sql = match &key.target {
            SortTarget::Random => {
                parts.push(Sql::raw("RANDOM()"));
                continue;
            }
            SortTarget::Rowid => Sql::raw(format!("{}.\"_rowid_\"", quote(entity))),
            SortTarget::Field(name) => {
                let segments = segments(name, key.position);
                let resolved = compiler.path(entity, Vec::new(), &segments)?;
                match resolved.multi {
                    // Sorting by a multi-value path has no single right answer;
                    // PocketBase's joined query picks an arbitrary row. We take the
                    // first value, deterministically.
                    Some(multi) => compiler.scalar(&multi.hops, &multi.terminal),
                    None => resolved.sql,
                }
            }
        };
        sql.push_str(&format!(" {direction}"));
        parts.push(sql);
    }
    let sql = Sql::join(&parts, ", ");
    Ok(SqlFragment { sql: sql.text, params: sql.params })
}

/// SQL text with its parameters, kept together so that concatenation can never
/// put a parameter out of order.
///
/// Each parameter is marked as a *value* (a literal, macro, request value or
/// function argument: what PocketBase binds as a parameter) or as internal
/// plumbing (a json path, a list of submitted ids: what PocketBase writes into the
/// SQL text). PocketBase's empty-value and LIKE rules look at its parameters, so
/// ours must look at the values only.
#[derive(Debug, Clone, Default, PartialEq)]
struct Sql {
    text: String,
    params: Vec<Value>,
    kinds: Vec<ParamKind>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParamKind {
    Internal,
    Value,
    /// A boolean from the request, bound as 0/1 but written `true`/`false` when
    /// PocketBase turns it into text (a LIKE pattern).
    Bool,
}

impl Sql {
    fn raw(text: impl Into<String>) -> Sql {
        Sql { text: text.into(), ..Sql::default() }
    }

    /// A bound value on its own.
    fn param(value: Value) -> Sql {
        Sql { text: "?".to_string(), params: vec![value], kinds: vec![ParamKind::Value] }
    }

    fn push_str(&mut self, text: &str) {
        self.text.push_str(text);
    }

    fn push(&mut self, other: &Sql) {
        self.text.push_str(&other.text);
        self.params.extend(other.params.iter().cloned());
        self.kinds.extend(other.kinds.iter().copied());
    }

    /// Binds internal plumbing (see the type's doc).
    fn push_param(&mut self, value: Value) {
        self.text.push('?');
        self.params.push(value);
        self.kinds.push(ParamKind::Internal);
    }

    /// Binds a value (see the type's doc).
    fn push_value(&mut self, value: Value) {
        self.text.push('?');
        self.params.push(value);
        self.kinds.push(ParamKind::Value);
    }

    fn values(&self) -> impl Iterator<Item = &Value> {
        self.params.iter().zip(&self.kinds).filter(|(_, k)| **k != ParamKind::Internal).map(|(p, _)| p)
    }

    fn join(parts: &[Sql], separator: &str) -> Sql {
        let mut out = Sql::default();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                out.push_str(separator);
            }
            out.push(part);
        }
        out
    }

    fn parenthesized(self) -> Sql {
        let mut out = Sql::raw("(");
        out.push(&self);
        out.push_str(")");
        out
    }

    /// Concatenates text pieces and SQL pieces in order.
    fn concat(parts: &[Piece<'_>]) -> Sql {
        let mut out = Sql::default();
        for part in parts {
            match part {
                Piece::Text(t) => out.push_str(t),
                Piece::Sql(s) => out.push(s),
            }
        }
        out
    }
}

enum Piece<'a> {
    Text(&'a str),
    Sql(&'a Sql),
}
use Piece::{Sql as S, Text as T};

/// A constant written into the SQL: `NULL` (empty) or a boolean `1`/`0` (known
/// not to be empty). Together with the bound values it drives PocketBase's
/// `=`/`!=` null normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Constant {
    None,
    Empty,
    NonEmpty,
}

/// PocketBase's NullFallback: how `=`/`!=` treat NULL for an operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fallback {
    /// `''` and NULL are the same, and a non-empty bound value is compared directly.
    Auto,
    /// json: NULL is a value of its own; compare with IS / IS NOT.
    Disabled,
    /// Function results: never assumed non-empty, so NULL falls back to `''`.
    Enforced,
}

/// A multi-value path, kept so its match-all subquery can be rebuilt with fresh aliases.
#[derive(Debug, Clone)]
struct MultiPath {
    hops: Vec<Hop>,
    terminal: Terminal,
}

/// An operand resolved against the schema and the request (PocketBase's ResolverResult).
#[derive(Debug, Clone)]
struct Resolved {
    sql: Sql,
    constant: Constant,
    fallback: Fallback,
    /// PocketBase attaches the submitted items of `@request.body.<f>:each` to the
    /// operand as a bound value even though they feed a join. That makes the
    /// operand "known non-empty", and a LIKE against it fail; we reproduce the
    /// former and refuse the latter.
    join_value: bool,
    /// A quoted text from the filter itself (candidate for ISO datetime normalisation).
    text_literal: bool,
    /// A datetime column read as is.
    datetime: bool,
    multi: Option<MultiPath>,
}

impl Resolved {
    fn value(value: Value) -> Resolved {
        if value == Value::Null {
            return Resolved::null();
        }
        Resolved::column(Sql::param(value))
    }

    fn null() -> Resolved {
        Resolved { constant: Constant::Empty, ..Resolved::column(Sql::raw("NULL")) }
    }

    fn boolean(value: bool) -> Resolved {
        Resolved { constant: Constant::NonEmpty, ..Resolved::column(Sql::raw(if value { "1" } else { "0" })) }
    }

    fn column(sql: Sql) -> Resolved {
        Resolved {
            sql,
            constant: Constant::None,
            fallback: Fallback::Auto,
            join_value: false,
            text_literal: false,
            datetime: false,
            multi: None,
        }
    }

    /// PocketBase's isEmpty: NULL, or a single bound value that is NULL or `''`.
    fn is_empty(&self) -> bool {
        self.constant == Constant::Empty
            || (self.fallback == Fallback::Auto
                && self.sql.values().count() == 1
                && self.sql.values().any(is_empty_value))
    }

    /// PocketBase's isKnownNonEmpty: a boolean constant, or bound values none of
    /// which is empty (never for function results).
    fn is_known_non_empty(&self) -> bool {
        self.fallback != Fallback::Enforced
            && (self.constant == Constant::NonEmpty
                || self.join_value
                || (self.constant != Constant::Empty
                    && self.sql.values().count() > 0
                    && !self.sql.values().any(is_empty_value)))
    }
}

fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Text(s) => s.is_empty(),
        _ => false,
    }
}

/// A join of the EXISTS wrapper, shared by every operand that walks the same hops.
struct WrapperJoin {
    key: String,
    alias: String,
    sql: Sql,
}

struct Compiler<'a> {
    schema: &'a Schema,
    base: &'a str,
    base_entity: &'a Entity,
    ctx: &'a QueryContext,
    next_alias: usize,
    joins: Vec<WrapperJoin>,
    /// Set when the expression being compiled reads a wrapper join.
    uses_wrapper: bool,
}

/// A path split at dots, with the char offset of each segment.
fn segments(name: &str, position: usize) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut offset = position;
    for segment in name.split('.') {
        out.push((segment, offset));
        offset += segment.chars().count() + 1;
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Modifier {
    Each,
    Length,
    Lower,
    Isset,
    Changed,
}

/// Splits `name:modifier`, refusing unknown modifiers with a position on the colon.
fn split_modifier(segment: &str, position: usize) -> Result<(&str, Option<Modifier>), FilterError> {
    let Some((name, modifier)) = segment.split_once(':') else { return Ok((segment, None)) };
    let colon = position + name.chars().count();
    let modifier = match modifier {
        "each" => Modifier::Each,
        "length" => Modifier::Length,
        "lower" => Modifier::Lower,
        "isset" => Modifier::Isset,
        "changed" => Modifier::Changed,
        other => {
            return Err(FilterError::new(
                format!(
                    "unknown modifier \":{other}\" in {segment:?}; expected :each, :length, :lower, :isset or :changed"
                ),
                colon,
            ));
        }
    };
    Ok((name, Some(modifier)))
}

impl<'a> Compiler<'a> {
    fn new(schema: &'a Schema, entity: &'a str, ctx: &'a QueryContext) -> Result<Self, FilterError> {
        let base_entity = schema.entities.get(entity).ok_or_else(|| {
            let known: Vec<&str> = schema.entities.keys().map(String::as_str).collect();
            FilterError::new(format!("unknown entity {entity:?} (entities: {})", known.join(", ")), 0)
        })?;
        Ok(Compiler { schema, base: entity, base_entity, ctx, next_alias: 0, joins: Vec::new(), uses_wrapper: false })
    }

    fn fresh_alias(&mut self) -> String {
        fresh_alias(&mut self.next_alias)
    }

    fn entity(&self, name: &str, position: usize) -> Result<&'a Entity, FilterError> {
        self.schema
            .entities
            .get(name)
            .ok_or_else(|| FilterError::new(format!("the schema has no entity {name:?}"), position))
    }

    fn expr(&mut self, expr: &Expr) -> Result<Sql, FilterError> {
        let (items, separator) = match expr {
            Expr::Compare(c) => return self.comparison(c),
            Expr::And(items) => (items, " AND "),
            Expr::Or(items) => (items, " OR "),
        };
        let parts = items.iter().map(|item| self.expr(item)).collect::<Result<Vec<_>, _>>()?;
        Ok(Sql::join(&parts, separator).parenthesized())
    }

    fn comparison(&mut self, c: &Comparison) -> Result<Sql, FilterError> {
        let mut left = self.operand(&c.left)?;
        let mut right = self.operand(&c.right)?;
        // Our divergence: an ISO 8601 text ("2026-07-30T10:00:00Z") compared with a
        // datetime column is rewritten to the stored form, so it names the same instant.
        normalize_datetime_literal(&left, &mut right);
        normalize_datetime_literal(&right, &mut left);
        if matches!(c.op, CompareOp::Like | CompareOp::NotLike) && right.join_value {
            return Err(FilterError::new(
                "a LIKE pattern cannot be @request.body.<field>:each (PocketBase fails on it too); put it on the left",
                c.right.position,
            ));
        }
        Ok(compare(self, &left, c.op, c.any, &right))
    }

    fn operand(&mut self, operand: &Operand) -> Result<Resolved, FilterError> {
        match &operand.kind {
            OperandKind::Text(s) => Ok(Resolved { text_literal: true, ..Resolved::value(Value::Text(s.clone())) }),
            OperandKind::Number(n) => Ok(Resolved::value(Value::Real(*n))),
            OperandKind::Identifier(name) => self.identifier(name, operand.position),
            OperandKind::Function { name, args } => self.function(name, args, operand.position),
        }
    }

    fn identifier(&mut self, name: &str, position: usize) -> Result<Resolved, FilterError> {
        if name == "@request" || name.starts_with("@request.") {
            return self.request(name, position);
        }
        if name.starts_with("@collection.") {
            return self.collection(name, position);
        }
        if name.starts_with('@') {
            return match macro_value(name, self.ctx.now) {
                Some(value) => Ok(Resolved::value(value)),
                None => Err(FilterError::new(
                    format!("unknown macro {name:?}; known: {}, @request.*, @collection.*", MACROS.join(" ")),
                    position,
                )),
            };
        }
        match self.path(self.base, Vec::new(), &segments(name, position)) {
            Ok(resolved) => Ok(resolved),
            // As in PocketBase, these words are keywords unless a field has the name.
            Err(err) => match name.to_ascii_lowercase().as_str() {
                "null" => Ok(Resolved::null()),
                "true" => Ok(Resolved::boolean(true)),
                "false" => Ok(Resolved::boolean(false)),
                _ => Err(err),
            },
        }
    }

    /// Resolves a field path starting at `entity` after `hops` already walked.
    fn path(&mut self, entity: &str, mut hops: Vec<Hop>, segs: &[(&str, usize)]) -> Result<Resolved, FilterError> {
        let mut entity_name = entity.to_string();
        for (i, &(segment, position)) in segs.iter().enumerate() {
            let entity = self.entity(&entity_name, position)?;
            if segment.is_empty() {
                return Err(FilterError::new("empty segment in field path", position));
            }
            if i + 1 == segs.len() {
                return self.last_segment(&entity_name, entity, hops, segment, position);
            }
            if segment.contains(':') {
                return Err(FilterError::new(
                    format!("modifier in {segment:?}: a modifier can only end a path"),
                    position,
                ));
            }
            let col = column(entity, segment);
            if col == Some(Column::Json) {
                let mut json_path = String::new();
                for &(key, key_position) in &segs[i + 1..] {
                    if key.is_empty() || key.contains(':') {
                        return Err(FilterError::new(
                            format!("invalid json path key {key:?}: modifiers are not supported inside json paths"),
                            key_position,
                        ));
                    }
                    if key.chars().all(|c| c.is_ascii_digit()) {
                        json_path.push_str(&format!("[{key}]"));
                    } else {
                        json_path.push_str(&format!(".{key}"));
                    }
                }
                let terminal = Terminal::Json { column: segment.to_string(), path: json_path };
                return Ok(Resolved { fallback: Fallback::Disabled, ..self.finish(hops, terminal) });
            }
            if i >= MAX_NESTED_RELATIONS {
                return Err(FilterError::new(
                    format!("too many nested relations: a path may follow at most {MAX_NESTED_RELATIONS}"),
                    position,
                ));
            }
            match col {
                None => {
                    let (back_entity, back_field, list) = self.back_relation(&entity_name, segment, position)?;
                    hops.push(Hop::Back { entity: back_entity.clone(), field: back_field, list });
                    entity_name = back_entity;
                }
                Some(Column::Ref(target)) => {
                    // `rel.id` is the ref column itself: no join needed.
                    if i + 2 == segs.len() && segs[i + 1].0 == "id" {
                        return self.last_segment(&entity_name, entity, hops, segment, position);
                    }
                    hops.push(Hop::Single { field: segment.to_string(), target: target.clone() });
                    entity_name = target;
                }
                Some(Column::ListRef(target)) => {
                    hops.push(Hop::Multi { field: segment.to_string(), target: target.clone() });
                    entity_name = target;
                }
                Some(other) => {
                    return Err(FilterError::new(
                        format!(
                            "field {segment:?} of {entity_name} is a {}, not a relation; only ref, list<ref> and json fields can be followed by '.'",
                            other.type_name()
                        ),
                        position,
                    ));
                }
            }
        }
        Err(FilterError::new("empty field path", segs.first().map_or(0, |s| s.1)))
    }

    /// `<entity>_via_<field>`: returns the back entity, its field, and whether the
    /// field is a list.
    fn back_relation(
        &self,
        entity: &str,
        segment: &str,
        position: usize,
    ) -> Result<(String, String, bool), FilterError> {
        let unknown =
            || FilterError::new(format!("unknown field {segment:?} ({})", field_list(self.schema, entity)), position);
        let (back_entity, back_field) = segment.rsplit_once("_via_").ok_or_else(unknown)?;
        if back_entity.is_empty() || back_field.is_empty() {
            return Err(unknown());
        }
        let Some(back) = self.schema.entities.get(back_entity) else {
            return Err(FilterError::new(
                format!("back-relation {segment:?}: the schema has no entity {back_entity:?}"),
                position,
            ));
        };
        match column(back, back_field) {
            Some(Column::Ref(t)) if t == entity => Ok((back_entity.to_string(), back_field.to_string(), false)),
            Some(Column::ListRef(t)) if t == entity => Ok((back_entity.to_string(), back_field.to_string(), true)),
            _ => Err(FilterError::new(
                format!(
                    "back-relation {segment:?}: {back_entity}.{back_field} is not a ref or list<ref> field pointing at {entity}"
                ),
                position,
            )),
        }
    }

    fn last_segment(
        &mut self,
        entity_name: &str,
        entity: &Entity,
        mut hops: Vec<Hop>,
        segment: &str,
        position: usize,
    ) -> Result<Resolved, FilterError> {
        let (name, modifier) = split_modifier(segment, position)?;
        let colon = position + name.chars().count();
        if let Some(m @ (Modifier::Isset | Modifier::Changed)) = modifier {
            let m = if m == Modifier::Isset { "isset" } else { "changed" };
            return Err(FilterError::new(
                format!(":{m} only applies to @request values (e.g. @request.body.{name}:{m})"),
                colon,
            ));
        }
        let col = column(entity, name).ok_or_else(|| {
            FilterError::new(format!("unknown field {name:?} ({})", field_list(self.schema, entity_name)), position)
        })?;
        let plain = if col == Column::Json {
            Terminal::Json { column: name.to_string(), path: String::new() }
        } else {
            Terminal::Column(name.to_string())
        };
        let resolved = match modifier {
            Some(m @ (Modifier::Each | Modifier::Length)) => {
                if !col.is_multi_valuer() {
                    return Err(FilterError::new(
                        format!(
                            ":{} applies to list<enum>, list<ref>, enum, ref and binary fields; {name:?} is a {}",
                            if m == Modifier::Each { "each" } else { "length" },
                            col.type_name()
                        ),
                        colon,
                    ));
                }
                if m == Modifier::Length {
                    self.finish(hops, Terminal::Length(name.to_string()))
                } else if col.is_list() {
                    hops.push(Hop::Each { field: name.to_string() });
                    self.finish(hops, Terminal::Item)
                } else {
                    // A single value is its own only item.
                    self.finish(hops, Terminal::SingleItem(name.to_string()))
                }
            }
            Some(_) => self.finish(hops, Terminal::Lower(Box::new(plain))),
            None => Resolved { datetime: col == Column::Datetime, ..self.finish(hops, plain) },
        };
        let fallback = if col == Column::Json { Fallback::Disabled } else { Fallback::Auto };
        Ok(Resolved { fallback, ..resolved })
    }

    /// Turns walked hops and a terminal into an operand: a plain column, a scalar
    /// subquery (single relations only) or a read of the EXISTS wrapper's joins.
    fn finish(&mut self, hops: Vec<Hop>, terminal: Terminal) -> Resolved {
        if hops.is_empty() {
            return Resolved::column(terminal_sql(&quote(self.base), &terminal));
        }
        if !hops.iter().any(Hop::is_multi) {
            return Resolved::column(self.scalar(&hops, &terminal));
        }
        self.uses_wrapper = true;
        let mut prev = quote(self.base);
        for i in 0..hops.len() {
            let key = format!("{:?}", &hops[..=i]);
            if let Some(existing) = self.joins.iter().find(|j| j.key == key) {
                prev = existing.alias.clone();
                continue;
            }
            let (sql, alias) = hop_joins(&hops[i], &prev, &mut self.next_alias);
            self.joins.push(WrapperJoin { key, alias: alias.clone(), sql });
            prev = alias;
        }
        Resolved {
            multi: Some(MultiPath { hops, terminal: terminal.clone() }),
            ..Resolved::column(terminal_sql(&prev, &terminal))
        }
    }

    /// Joins for `hops` with fresh aliases, from the outer row; returns the joins
    /// and the last alias.
    fn chain(&mut self, hops: &[Hop]) -> (Sql, String) {
        let mut joins = Sql::default();
        let mut prev = quote(self.base);
        for hop in hops {
            let (sql, alias) = hop_joins(hop, &prev, &mut self.next_alias);
            joins.push(&sql);
            prev = alias;
        }
        (joins, prev)
    }

    /// `(SELECT value FROM (SELECT 1) LEFT JOIN …)`: exactly one row, so a missing
    /// target reads as NULL, as with PocketBase's LEFT JOIN.
    fn scalar(&mut self, hops: &[Hop], terminal: &Terminal) -> Sql {
        let base = self.fresh_alias();
        let (joins, last) = self.chain(hops);
        let value = terminal_sql(&last, terminal);
        Sql::concat(&[T("(SELECT "), S(&value), T(&format!(" FROM (SELECT 1) {base}")), S(&joins), T(")")])
    }

    /// PocketBase's multi-match subquery: every value of the path, one per row, as "v".
    fn values_subquery(&mut self, multi: &MultiPath) -> Sql {
        let base = self.fresh_alias();
        let (joins, last) = self.chain(&multi.hops);
        let value = terminal_sql(&last, &multi.terminal);
        Sql::concat(&[T("SELECT "), S(&value), T(&format!(" AS \"v\" FROM (SELECT 1) {base}")), S(&joins)])
    }

    fn collection(&mut self, name: &str, position: usize) -> Result<Resolved, FilterError> {
        let segs = segments(name, position);
        if segs.len() < 3 {
            return Err(FilterError::new(
                format!("incomplete {name:?}: expected @collection.<entity>.<field>"),
                position,
            ));
        }
        let (entity, alias) = match segs[1].0.split_once(':') {
            Some((entity, alias)) => (entity, alias),
            None => (segs[1].0, ""),
        };
        if !self.schema.entities.contains_key(entity) {
            return Err(FilterError::new(format!("@collection: the schema has no entity {entity:?}"), segs[1].1));
        }
        let hops = vec![Hop::Collection { entity: entity.to_string(), alias: alias.to_string() }];
        self.path(entity, hops, &segs[2..])
    }

    fn function(&mut self, name: &str, args: &[Operand], position: usize) -> Result<Resolved, FilterError> {
        match name {
            "strftime" => {
                // PocketBase's shape: a quoted format, an optional time value (a field,
                // text or number, not another function), then quoted modifiers.
                if args.len() > 10 {
                    return Err(FilterError::new("strftime takes at most 10 arguments", position));
                }
                let format = match args.first().map(|a| &a.kind) {
                    Some(OperandKind::Text(format)) => format.clone(),
                    _ => {
                        return Err(FilterError::new(
                            "strftime(format, time, modifiers...) needs a quoted format such as '%Y-%m' first",
                            args.first().map_or(position, |a| a.position),
                        ));
                    }
                };
                let mut modifiers = Vec::new();
                for arg in args.iter().skip(2) {
                    let OperandKind::Text(m) = &arg.kind else {
                        return Err(FilterError::new(
                            "strftime modifiers must be quoted texts such as 'start of month'",
                            arg.position,
                        ));
                    };
                    modifiers.push(m.clone());
                }
                let Some(time) = args.get(1) else {
                    let sql = strftime_sql(&format, None, &modifiers);
                    return Ok(Resolved { fallback: Fallback::Enforced, ..Resolved::column(sql) });
                };
                if matches!(time.kind, OperandKind::Function { .. }) {
                    return Err(FilterError::new("strftime's time value cannot be a function call", time.position));
                }
                let time = self.operand(time)?;
                let sql = strftime_sql(&format, Some(&time.sql), &modifiers);
                // A multi-value time keeps its match-all semantics, as in PocketBase.
                let multi = time.multi.map(|m| MultiPath {
                    hops: m.hops,
                    terminal: Terminal::Strftime { format: format.clone(), inner: Box::new(m.terminal), modifiers },
                });
                Ok(Resolved { multi, fallback: Fallback::Enforced, ..Resolved::column(sql) })
            }
            "geoDistance" => Err(FilterError::new(
                "geoDistance(...) is not supported: the schema has no geoPoint type and the bundled SQLite has no math functions",
                position,
            )),
            _ => Err(FilterError::new(format!("unknown function {name:?}; known: strftime"), position)),
        }
    }

    fn request(&mut self, name: &str, position: usize) -> Result<Resolved, FilterError> {
        let segs = segments(name, position);
        let request = &self.ctx.request;
        let unknown = || {
            FilterError::new(
                format!(
                    "unknown request field {name:?}; expected @request.context, @request.method, @request.auth.*, @request.body.*, @request.query.* or @request.headers.*"
                ),
                position,
            )
        };
        let Some(&(kind, _)) = segs.get(1) else { return Err(unknown()) };
        match (kind, segs.len()) {
            ("context", 2) => Ok(Resolved::value(Value::Text(request.context.clone()))),
            ("method", 2) => Ok(Resolved::value(Value::Text(request.method.clone()))),
            ("auth", 3..) => match &request.auth {
                // A guest has no auth record: every @request.auth.* is NULL, even :isset.
                None => {
                    split_modifier(segs[segs.len() - 1].0, segs[segs.len() - 1].1)?;
                    Ok(Resolved::null())
                }
                Some(auth) => {
                    // PocketBase reads an auth key with a modifier through a join with
                    // the auth collection, where :isset does not exist: it is ignored,
                    // so `@request.auth.id:isset` is the id (NULL for an unknown key).
                    let (key, modifier) = split_modifier(segs[2].0, segs[2].1)?;
                    if segs.len() == 3 && modifier == Some(Modifier::Isset) {
                        return self.static_value(Some(auth), &[(key, segs[2].1)], false);
                    }
                    self.static_value(Some(auth), &segs[2..], false)
                }
            },
            ("query", 3..) => self.static_value(Some(&request.query), &segs[2..], false),
            ("headers", 3..) => self.static_value(Some(&request.headers), &segs[2..], true),
            ("body", 3..) => self.body(&segs[2..]),
            _ => Err(unknown()),
        }
    }

    fn body(&mut self, segs: &[(&str, usize)]) -> Result<Resolved, FilterError> {
        let body = self.ctx.request.body.as_ref();
        let (first, first_position) = segs[0];
        if segs.len() > 1 {
            // `@request.body.<ref>.<field>`: follow the submitted ids.
            let relation = match column(self.base_entity, first) {
                Some(Column::Ref(target)) => Some((target, false)),
                Some(Column::ListRef(target)) => Some((target, true)),
                _ => None,
            };
            if let Some((target, list)) = relation {
                let ids = submitted_ids(body.and_then(|b| b.get(first)));
                if ids.is_empty() {
                    return Ok(Resolved::null());
                }
                let ids = Json::from(ids).to_string();
                let hops = vec![Hop::BodyRef { target: target.clone(), ids, list }];
                return self.path(&target, hops, &segs[1..]);
            }
            return self.static_value(body, segs, false);
        }
        let (key, modifier) = split_modifier(first, first_position)?;
        let colon = first_position + key.chars().count();
        let col = column(self.base_entity, key);
        let submitted = body.and_then(|b| b.get(key));
        match modifier {
            Some(Modifier::Changed) => {
                let Some(col) = col else {
                    return Err(FilterError::new(
                        format!(
                            ":changed needs a field of {}; {key:?} is not one ({})",
                            self.base,
                            field_list(self.schema, self.base)
                        ),
                        first_position,
                    ));
                };
                let Some(submitted) = submitted else { return Ok(Resolved::boolean(false)) };
                let new = self.request_value(submitted, Some(&col));
                let current = self.path(self.base, Vec::new(), &[(key, first_position)])?;
                let differs = equal_expr(false, &new, &current);
                let sql = Sql::concat(&[T("(CASE WHEN "), S(&differs), T(" THEN 1 ELSE 0 END)")]);
                Ok(Resolved { constant: Constant::NonEmpty, ..Resolved::column(sql) })
            }
            Some(m @ (Modifier::Each | Modifier::Length)) => {
                let Some(col) = col.filter(Column::is_multi_valuer) else {
                    return Err(FilterError::new(
                        format!(
                            ":{} on @request.body.{key} needs a list<enum>, list<ref>, enum, ref or binary field of {}",
                            if m == Modifier::Each { "each" } else { "length" },
                            self.base
                        ),
                        colon,
                    ));
                };
                let items: Vec<Json> = match submitted {
                    None | Some(Json::Null) => Vec::new(),
                    Some(Json::Array(items)) => items.clone(),
                    Some(other) => vec![other.clone()],
                };
                if m == Modifier::Length {
                    return Ok(Resolved::value(Value::Integer(i64::try_from(items.len()).unwrap_or(i64::MAX))));
                }
                if !col.is_list() {
                    return Ok(self.request_value(items.first().unwrap_or(&Json::Null), Some(&col)));
                }
                let hops = vec![Hop::BodyEach { items: Json::from(items).to_string() }];
                Ok(Resolved { join_value: true, ..self.finish(hops, Terminal::Item) })
            }
            _ => self.static_value(body, segs, false),
        }
    }

    /// A `@request.*` value from a JSON object, with `:isset` and `:lower`.
    fn static_value(
        &mut self,
        root: Option<&Map<String, Json>>,
        segs: &[(&str, usize)],
        header_names: bool,
    ) -> Result<Resolved, FilterError> {
        let (last, last_position) = segs[segs.len() - 1];
        let (key, modifier) = split_modifier(last, last_position)?;
        let mut path: Vec<&str> = segs.iter().map(|s| s.0).collect();
        let n = path.len();
        path[n - 1] = key;
        let found = root.and_then(|r| {
            lookup(r, &path).or_else(|| {
                // Header names arrive raw ("X-Token"); PocketBase exposes them as x_token.
                if header_names && n == 1 {
                    r.iter().find(|(k, _)| k.to_ascii_lowercase().replace('-', "_") == key).map(|(_, v)| v)
                } else {
                    None
                }
            })
        });
        match modifier {
            None => Ok(match found {
                Some(v) => self.request_value(v, column(self.base_entity, key).as_ref()),
                None => Resolved::null(),
            }),
            // PocketBase writes the SQL keywords here, not 1/0, and the difference
            // shows with IS NOT: `'x' IS NOT FALSE` is false.
            Some(Modifier::Isset) => Ok(Resolved {
                constant: Constant::NonEmpty,
                ..Resolved::column(Sql::raw(if found.is_some() { "TRUE" } else { "FALSE" }))
            }),
            Some(Modifier::Lower) => {
                let value = found.map_or(Resolved::null(), |v| self.request_value(v, None));
                let sql = Sql::concat(&[T("LOWER("), S(&value.sql), T(")")]);
                Ok(Resolved { sql, ..value })
            }
            Some(other) => Err(FilterError::new(
                format!(
                    ":{} does not apply to request values here; @request values take :isset and :lower{}",
                    format!("{other:?}").to_ascii_lowercase(),
                    if other == Modifier::Changed { ", @request.body.<field> takes :changed" } else { "" }
                ),
                last_position + key.chars().count(),
            )),
        }
    }

    /// A request value as a bound parameter. A numeric string for a number field is
    /// bound as a number (multipart bodies carry numbers as text).
    fn request_value(&self, value: &Json, col: Option<&Column>) -> Resolved {
        if let Json::Bool(b) = value {
            let sql = Sql {
                text: "?".to_string(),
                params: vec![Value::Integer(i64::from(*b))],
                kinds: vec![ParamKind::Bool],
            };
            return Resolved::column(sql);
        }
        let mut param = json_to_param(value);
        if let (Some(Column::Number), Some(Value::Text(s))) = (col, &param)
            && let Ok(n) = s.trim().parse::<f64>()
            && n.is_finite()
        {
            param = Some(Value::Real(n));
        }
        match param {
            Some(p) => Resolved::value(p),
            None => Resolved::null(),
        }
    }
}

/// The distinct ids submitted for a relation field: a string or an array of strings.
fn submitted_ids(value: Option<&Json>) -> Vec<Json> {
    let mut ids: Vec<Json> = Vec::new();
    let mut add = |s: &str| {
        if !s.is_empty() && !ids.iter().any(|i| i.as_str() == Some(s)) {
            ids.push(Json::from(s));
        }
    };
    match value {
        Some(Json::String(s)) => add(s),
        Some(Json::Array(items)) => items.iter().filter_map(Json::as_str).for_each(add),
        _ => {}
    }
    ids
}

fn normalize_datetime_literal(column: &Resolved, literal: &mut Resolved) {
    if !column.datetime || !literal.text_literal {
        return;
    }
    if let [Value::Text(text)] = literal.sql.params.as_slice()
        && let Some(stored) = normalize_iso_datetime(text)
    {
        literal.sql = Sql::param(Value::Text(stored));
    }
}

/// `left op right` with PocketBase's semantics, including match-all for multi-value
/// operands unless `any`.
fn compare(compiler: &mut Compiler<'_>, left: &Resolved, op: CompareOp, any: bool, right: &Resolved) -> Sql {
    let base = plain_compare(left, op, right);
    if any {
        return base;
    }
    // Rows that fail the comparison. PocketBase 0.40.6 does not also count rows whose
    // value is NULL (checked: `assignees.age > 0` keeps a card with a dangling id),
    // so neither do we.
    let negate = |inner: &Sql| -> Sql { Sql::concat(&[T("NOT ("), S(inner), T(")")]) };
    let all = match (&left.multi, &right.multi) {
        (None, None) => return base,
        (Some(l), Some(r)) => {
            let ls = compiler.values_subquery(l);
            let rs = compiler.values_subquery(r);
            let la = compiler.fresh_alias();
            let ra = compiler.fresh_alias();
            let lv = Resolved { fallback: left.fallback, ..Resolved::column(Sql::raw(format!("{la}.\"v\""))) };
            let rv = Resolved { fallback: right.fallback, ..Resolved::column(Sql::raw(format!("{ra}.\"v\""))) };
            let cond = negate(&plain_compare(&lv, op, &rv));
            Sql::concat(&[
                T("NOT EXISTS (SELECT 1 FROM ("),
                S(&ls),
                T(&format!(") {la} LEFT JOIN (")),
                S(&rs),
                T(&format!(") {ra} WHERE ")),
                S(&cond),
                T(")"),
            ])
        }
        (Some(m), None) | (None, Some(m)) => {
            let many_on_left = left.multi.is_some();
            let (many, other) = if many_on_left { (left, right) } else { (right, left) };
            let sub = compiler.values_subquery(m);
            let alias = compiler.fresh_alias();
            let item = Resolved { fallback: many.fallback, ..Resolved::column(Sql::raw(format!("{alias}.\"v\""))) };
            // The other side keeps its SQL and values but, as in PocketBase, not its
            // null fallback.
            let other = Resolved { fallback: Fallback::Auto, multi: None, ..other.clone() };
            let inner = if many_on_left { plain_compare(&item, op, &other) } else { plain_compare(&other, op, &item) };
            let cond = negate(&inner);
            Sql::concat(&[T("NOT EXISTS (SELECT 1 FROM ("), S(&sub), T(&format!(") {alias} WHERE ")), S(&cond), T(")")])
        }
    };
    Sql::concat(&[T("("), S(&base), T(" AND "), S(&all), T(")")])
}

/// One comparison, without any multi-value handling.
fn plain_compare(left: &Resolved, op: CompareOp, right: &Resolved) -> Sql {
    let sign = match op {
        CompareOp::Eq => return equal_expr(true, left, right),
        CompareOp::Neq => return equal_expr(false, left, right),
        CompareOp::Like | CompareOp::NotLike => {
            let like = if op == CompareOp::Like { " LIKE " } else { " NOT LIKE " };
            if right.sql.values().next().is_none() {
                // Column on the right: "contains" that column's value.
                return Sql::concat(&[S(&left.sql), T(like), T("('%' || "), S(&right.sql), T(" || '%') ESCAPE '\\'")]);
            }
            let mut pattern = right.sql.clone();
            for (param, kind) in pattern.params.iter_mut().zip(&pattern.kinds) {
                let text = match kind {
                    ParamKind::Internal => continue,
                    ParamKind::Value => param_to_text(param),
                    ParamKind::Bool => (*param == Value::Integer(1)).to_string(),
                };
                *param = Value::Text(like_pattern(&text));
            }
            return Sql::concat(&[S(&left.sql), T(like), S(&pattern), T(" ESCAPE '\\'")]);
        }
        CompareOp::Lt => " < ",
        CompareOp::Lte => " <= ",
        CompareOp::Gt => " > ",
        CompareOp::Gte => " >= ",
    };
    Sql::concat(&[S(&left.sql), T(sign), S(&right.sql)])
}

/// `=`/`!=` with PocketBase's null/empty normalisation: `''` and NULL are equal.
fn equal_expr(equal: bool, left: &Resolved, right: &Resolved) -> Sql {
    let (op, concat, null_check) =
        if equal { (" = ", " OR ", " IS NULL") } else { (" IS NOT ", " AND ", " IS NOT NULL") };
    // json operands: NULL is a value of its own, so compare with IS / IS NOT.
    if left.fallback == Fallback::Disabled || right.fallback == Fallback::Disabled {
        let is = if equal { " IS " } else { " IS NOT " };
        return Sql::concat(&[S(&left.sql), T(is), S(&right.sql)]);
    }
    let l_empty = left.is_empty();
    let r_empty = right.is_empty();
    let empty = Sql::raw("''");
    if l_empty && r_empty {
        return Sql::concat(&[T("''"), T(op), T("''")]);
    }
    if left.is_known_non_empty() || right.is_known_non_empty() {
        let l = if l_empty { &empty } else { &left.sql };
        let r = if r_empty { &empty } else { &right.sql };
        return Sql::concat(&[S(l), T(op), S(r)]);
    }
    if l_empty {
        return Sql::concat(&[T("(''"), T(op), S(&right.sql), T(concat), S(&right.sql), T(null_check), T(")")]);
    }
    if r_empty {
        return Sql::concat(&[T("("), S(&left.sql), T(op), T("''"), T(concat), S(&left.sql), T(null_check), T(")")]);
    }
    Sql::concat(&[T("COALESCE("), S(&left.sql), T(", '')"), T(op), T("COALESCE("), S(&right.sql), T(", '')")])
}

/// The LIKE pattern for a bound value. Without an unescaped `%` the value means
/// "contains": `\ % _` are escaped and it is wrapped in `%…%`. With one, the value
/// is the pattern as written (`Lorem%` = starts with).
fn like_pattern(value: &str) -> String {
    if has_unescaped_percent(value) {
        return value.to_string();
    }
    format!("%{}%", escape_like(value))
}

fn has_unescaped_percent(value: &str) -> bool {
    let mut prev = None;
    for c in value.chars() {
        if c == '%' && prev != Some('\\') {
            return true;
        }
        // A doubled backslash escapes itself, not what follows.
        prev = if c == '\\' && prev == Some('\\') { None } else { Some(c) };
    }
    false
}

/// Puts a backslash before each `\`, `%` and `_` that is not already preceded by
/// one. Reproduces PocketBase's scan, which works right to left and does not look
/// at the char it has just escaped against: in a run like `__` only the last one
/// gets a backslash (so `a__b` keeps one wildcard), as PocketBase 0.40.6 does.
fn escape_like(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let mut reversed: Vec<char> = Vec::with_capacity(chars.len() * 2);
    let mut pending = false;
    for (i, &c) in chars.iter().enumerate().rev() {
        if pending {
            if c != '\\' {
                reversed.push('\\');
            }
            pending = false;
        } else {
            pending = matches!(c, '\\' | '%' | '_');
        }
        reversed.push(c);
        if i == 0 && pending {
            reversed.push('\\');
        }
    }
    reversed.into_iter().rev().collect()
}

#[cfg(test)]
mod tests;
