//! A record write in one transaction, as the SQLite store's `apply` does it,
//! with the locks that keep it right while other nodes write: the records its
//! refs name are locked against deletion until it commits; an update then
//! locks its row and compares its version again; a delete locks its row
//! before it unlinks the records pointing at it, so a ref made meanwhile
//! waits and then finds the record gone. Every path takes a referenced record
//! before the rows pointing at it, so an update and a delete cannot deadlock.

use super::Tx;
use super::row::{self, Param};
use super::{Fail, quote};
use crate::sql::SqlCache;
use crate::verify::{self, entity};
use crate::{KEY_LIFETIME, Row, StoreError, Write, WriteKind, Written};
use postgres::error::SqlState;
use postgres::types::ToSql;
use protocol::schema::{Entity, FieldType, Schema};
use serde_json::{Map, Value};

/// The write, its key, its password change, its audit entry: the receipt.
pub fn write(tx: &mut Tx<'_>, cache: &SqlCache, schema: &Schema, write: &Write) -> Result<Written, Fail> {
    let id = match &write.kind {
        WriteKind::Create { id } | WriteKind::Update { id, .. } | WriteKind::Delete { id, .. } => id,
    };
    // The key first, as on SQLite: a repeated request is told so, whatever else.
    if let Some(key) = &write.key {
        claim_key(tx, &write.entity, key, id, write.now)?;
    }
    if write.rule.is_some() {
        // Rules compile to SQLite's SQL only so far (docs/decisions/0019):
        // refusing is better than writing unchecked.
        return Err(StoreError::Internal("the PostgreSQL store does not check rules yet".into()).into());
    }
    // Set modifiers read the record locked, so another node's increment
    // waits for this one and then counts on top of it.
    let resolved = match &write.kind {
        WriteKind::Update { id, .. } if !write.modifiers.is_empty() => {
            let ent = entity(schema, &write.entity)?;
            let sql = cache.get(&write.entity, ent);
            let current =
                read(tx, &format!("{} FOR NO KEY UPDATE", sql.by_id), ent, id)?.ok_or(StoreError::NotFound)?;
            Some(verify::modified(ent, write, &current)?)
        }
        _ => None,
    };
    let write = resolved.as_ref().unwrap_or(write);
    unstorable(schema, write)?;
    let (row, action, before) = apply(tx, cache, schema, write)?;
    if let Some(hash) = &write.password_hash {
        tx.execute(
            "INSERT INTO _a2app_auth (user_id, password_hash, token_key) VALUES ($1, $2, $3) \
             ON CONFLICT (user_id) DO UPDATE SET password_hash = excluded.password_hash, token_key = excluded.token_key",
            &[id, hash, &a2app_definition::secret::agent_token()],
        )?;
    }
    if action == "delete" && write.entity == a2app_definition::users::ENTITY {
        tx.execute("DELETE FROM _a2app_auth WHERE user_id = $1", &[id])?;
    }
    let receipt = audit(tx, cache, schema, write, &row, action, before.as_ref())?;
    super::changes::record(tx, write.now, action, &write.entity, &row)?;
    Ok(Written { row, receipt })
}

/// Values the guard lets through (and the SQLite store keeps) that this
/// store's columns cannot hold as given: U+0000 in a text (PostgreSQL's
/// `text` refuses it), and an integer beyond 2^53 (a `double precision`
/// would round it, and the read-back, comparing numbers as such, would not
/// see it). Each is named, and nothing is written.
fn unstorable(schema: &Schema, write: &Write) -> Result<(), Fail> {
    const EXACT: u64 = 1 << 53;
    let ent = entity(schema, &write.entity)?;
    let violations: Vec<protocol::Violation> = write
        .values
        .iter()
        .filter_map(|(field, value)| {
            let column = row::column_type(&ent.fields.get(field)?.kind);
            let (code, message, expected) = match value {
                Value::String(s) if column == "text" && s.contains('\0') => (
                    protocol::ErrorCode::InvalidString,
                    format!("\"{field}\" holds U+0000, which PostgreSQL cannot store"),
                    "text without the character U+0000",
                ),
                Value::Number(n)
                    if column == "double precision"
                        && (n.as_u64().is_some_and(|u| u > EXACT)
                            || n.as_i64().is_some_and(|i| i.unsigned_abs() > EXACT)) =>
                {
                    (
                        protocol::ErrorCode::InvalidNumber,
                        format!("\"{field}\" is an integer beyond 2^53, which this store cannot hold exactly"),
                        "an integer between -2^53 and 2^53",
                    )
                }
                _ => return None,
            };
            Some(protocol::Violation::new(code, message).field(field.clone()).expected(expected).got(value.clone()))
        })
        .collect();
    if violations.is_empty() { Ok(()) } else { Err(StoreError::Unstorable(violations).into()) }
}

/// The minute (of the app's clock) expired idempotency keys were last purged.
static LAST_KEY_PURGE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// Claims `key` within `scope` (an entity, or an operation's `_ops/<name>`)
/// for `id`: an insert that waits for a competing transaction holding the
/// same key, and takes over an expired one. A live key refuses, naming what
/// its first use wrote or started.
pub fn claim_key(tx: &mut Tx<'_>, scope: &str, key: &str, id: &str, now: jiff::Timestamp) -> Result<(), Fail> {
    let cutoff = a2app_definition::datetime::format(now.checked_sub(KEY_LIFETIME).unwrap_or(now));
    // Expired keys are purged at most once a minute (by the app's clock), as
    // the SQLite store does; until then a claim takes an expired one over.
    let minute = now.as_second() / 60;
    if LAST_KEY_PURGE.swap(minute, std::sync::atomic::Ordering::Relaxed) != minute {
        tx.execute("DELETE FROM _a2app_keys WHERE created < $1", &[&cutoff])?;
    }
    let now = a2app_definition::datetime::format(now);
    let claimed = tx.query_opt(
        "INSERT INTO _a2app_keys (entity, key, record_id, created) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (entity, key) DO UPDATE SET record_id = excluded.record_id, created = excluded.created \
         WHERE _a2app_keys.created < $5 RETURNING 1",
        &[&scope, &key, &id, &now, &cutoff],
    )?;
    if claimed.is_some() {
        return Ok(());
    }
    let first = tx.query_one("SELECT record_id FROM _a2app_keys WHERE entity = $1 AND key = $2", &[&scope, &key])?;
    Err(StoreError::DuplicateRequest { id: first.get(0) }.into())
}

fn apply(
    tx: &mut Tx<'_>,
    cache: &SqlCache,
    schema: &Schema,
    write: &Write,
) -> Result<(Row, &'static str, Option<Row>), Fail> {
    let name = write.entity.as_str();
    let now = a2app_definition::datetime::format(write.now);
    let ent = entity(schema, name)?;
    let table = quote(name);
    let sql = cache.get(name, ent);
    match &write.kind {
        WriteKind::Create { id } => {
            check_refs(tx, ent, &write.values, true)?;
            let mut cols = vec!["\"id\"".to_owned()];
            let mut params: Vec<Param> = vec![Box::new(id.clone())];
            for (field, value) in &write.values {
                let Some(spec) = ent.fields.get(field) else { continue };
                cols.push(quote(field));
                params.push(row::to_sql(&spec.kind, value));
            }
            cols.push("\"created\"".into());
            cols.push("\"updated\"".into());
            params.push(Box::new(now.clone()));
            params.push(Box::new(now));
            let marks: Vec<String> = (1..=cols.len()).map(|n| format!("${n}")).collect();
            let insert = format!("INSERT INTO {table} ({}) VALUES ({})", cols.join(", "), marks.join(", "));
            execute_row_write(tx, &insert, &params, &write.values)?;
            let row =
                read(tx, &sql.by_id, ent, id)?.ok_or_else(|| StoreError::NotStored(vec![verify::missing_row()]))?;
            verify::read_back(&write.values, &row)?;
            Ok((row, "create", None))
        }
        WriteKind::Update { id, if_match } => {
            // The answers come in the SQLite store's order (missing, then
            // version, then refs), but the locks in a delete's: the records
            // the refs name first, then this row, as a delete locks its record
            // before the rows pointing at it. Opposite orders deadlock.
            let seen = read(tx, &sql.by_id, ent, id)?.ok_or(StoreError::NotFound)?;
            verify::version_matches(if_match.as_deref(), &seen)?;
            check_refs(tx, ent, &write.values, true)?;
            // `NO KEY`: the id stays, so creates locking this row as a ref's
            // target (`FOR KEY SHARE`) need not wait.
            let current =
                read(tx, &format!("{} FOR NO KEY UPDATE", sql.by_id), ent, id)?.ok_or(StoreError::NotFound)?;
            verify::version_matches(if_match.as_deref(), &current)?;
            let mut sets = Vec::new();
            let mut params: Vec<Param> = Vec::new();
            for (field, value) in &write.values {
                let Some(spec) = ent.fields.get(field) else { continue };
                params.push(row::to_sql(&spec.kind, value));
                sets.push(format!("{} = ${}", quote(field), params.len()));
            }
            params.push(Box::new(now));
            sets.push(format!("\"updated\" = ${}", params.len()));
            params.push(Box::new(id.clone()));
            let update = format!("UPDATE {table} SET {} WHERE \"id\" = ${}", sets.join(", "), params.len());
            execute_row_write(tx, &update, &params, &write.values)?;
            let row =
                read(tx, &sql.by_id, ent, id)?.ok_or_else(|| StoreError::NotStored(vec![verify::missing_row()]))?;
            verify::read_back(&write.values, &row)?;
            Ok((row, "update", Some(current)))
        }
        WriteKind::Delete { id, if_match } => {
            let current = read(tx, &for_update(&sql.by_id), ent, id)?.ok_or(StoreError::NotFound)?;
            verify::version_matches(if_match.as_deref(), &current)?;
            unlink(tx, schema, name, id, &now)?;
            tx.execute(&format!("DELETE FROM {table} WHERE \"id\" = $1"), &[id])?;
            if read(tx, &sql.by_id, ent, id)?.is_some() {
                return Err(StoreError::NotStored(vec![verify::still_there()]).into());
            }
            Ok((current, "delete", None))
        }
    }
}

/// The row a delete removes, locked until the transaction ends, so another
/// node's write to it waits and then finds it gone.
fn for_update(by_id: &str) -> String {
    format!("{by_id} FOR UPDATE")
}

fn read(tx: &mut Tx<'_>, sql: &str, ent: &Entity, id: &str) -> Result<Option<Row>, Fail> {
    Ok(tx.query_opt(sql, &[&id])?.map(|r| row::read(ent, &r)).transpose()?)
}

/// Runs an INSERT or UPDATE of one row, naming the constraint it broke.
fn execute_row_write(tx: &mut Tx<'_>, sql: &str, params: &[Param], values: &Map<String, Value>) -> Result<(), Fail> {
    let refs: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect();
    match tx.execute(sql, &refs) {
        Ok(_) => Ok(()),
        Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
            let on_id = e.as_db_error().and_then(|d| d.constraint()).is_some_and(|c| c.ends_with("_pkey"));
            Err(if on_id { StoreError::DuplicateId } else { StoreError::NotUnique(verify::unique_violation(values)) }
                .into())
        }
        Err(e) => Err(e.into()),
    }
}

/// Every ref must name an existing record of its entity. With `lock`, the
/// records found stay locked against deletion (`FOR KEY SHARE`) until the
/// transaction ends: a delete on another node waits, then unlinks this ref.
pub fn check_refs(tx: &mut Tx<'_>, ent: &Entity, values: &Map<String, Value>, lock: bool) -> Result<(), Fail> {
    let mut violations = Vec::new();
    for (field, target, ids) in verify::refs(ent, values) {
        let sql =
            format!("SELECT 1 FROM {} WHERE \"id\" = $1{}", quote(target), if lock { " FOR KEY SHARE" } else { "" });
        for id in ids {
            if tx.query_opt(&sql, &[&id])?.is_none() {
                violations.push(verify::missing_ref(field, target, id));
                break;
            }
        }
    }
    if violations.is_empty() { Ok(()) } else { Err(StoreError::MissingRefs(violations).into()) }
}

/// The condition "`column` (of a ref or a list of refs) names `$1`".
pub fn holds(column: &str, multi: bool) -> String {
    if multi { format!("{column} ? $1") } else { format!("{column} = $1") }
}

/// Before a delete: refs to the record are cleared, as PocketBase does for
/// optional relations; a required ref to it refuses the delete.
fn unlink(tx: &mut Tx<'_>, schema: &Schema, target: &str, id: &str, now: &str) -> Result<(), Fail> {
    for (name, ent) in &schema.entities {
        for (field, spec) in &ent.fields {
            if spec.kind.target() != Some(target) {
                continue;
            }
            let (table, col) = (quote(name), quote(field));
            let multi = matches!(spec.kind, FieldType::ListRef { .. });
            let holds = holds(&col, multi);
            if spec.required {
                if tx.query_opt(&format!("SELECT 1 FROM {table} WHERE {holds} LIMIT 1"), &[&id])?.is_some() {
                    return Err(StoreError::InUse { entity: name.clone(), field: field.clone() }.into());
                }
                continue;
            }
            // `jsonb - text` drops every element equal to the text, keeping the order of the rest.
            let set = if multi { format!("{col} - $1") } else { "''".to_owned() };
            tx.execute(&format!("UPDATE {table} SET {col} = {set}, \"updated\" = $2 WHERE {holds}"), &[&id, &now])?;
        }
    }
    Ok(())
}

/// Writes the audit entry (in the same transaction) and returns the receipt.
fn audit(
    tx: &mut Tx<'_>,
    cache: &SqlCache,
    schema: &Schema,
    write: &Write,
    row: &Row,
    action: &str,
    before: Option<&Row>,
) -> Result<protocol::receipt::Receipt, Fail> {
    // The receipt reads labels through a `Fn`: the transaction is lent to it
    // through a cell, and the first error it meets ends the write.
    let (cell, failed) = (std::cell::RefCell::new(tx), std::cell::RefCell::new(None));
    let receipt = verify::receipt(schema, write, row, action, before, |ent, entity, id| {
        let sql = cache.get(entity, ent);
        let found = match cell.borrow_mut().query_opt(&sql.label_by_id, &[&id]) {
            Ok(found) => found?,
            Err(e) => {
                failed.borrow_mut().get_or_insert(e);
                return None;
            }
        };
        match &sql.label_kind {
            Some(kind) => row::from_sql(kind, &found, 0).ok(),
            None => found.try_get::<_, String>(0).ok().map(Value::String),
        }
    });
    if let Some(e) = failed.into_inner() {
        return Err(e.into());
    }
    let tx = cell.into_inner();
    let text = serde_json::to_string(&receipt).map_err(|e| StoreError::Internal(e.to_string()))?;
    tx.execute(
        "INSERT INTO _a2app_audit (at, entity, record_id, action, agent, caller, receipt) VALUES ($1, $2, $3, $4, $5, $6, $7)",
        &[&receipt.at, &write.entity, &receipt.id, &action, &write.agent, &write.caller, &text],
    )?;
    Ok(receipt)
}
