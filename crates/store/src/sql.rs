//! SQL text both stores write alike (PostgreSQL and SQLite quote names and
//! list columns the same way).

use protocol::schema::{Entity, FieldType};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Quotes an identifier. Identifiers come from the validated schema only.
pub(crate) fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// A page of the audit feed: entries stored after `since` (first parameter)
/// in time order, at most `limit` (second) and then the rest of the last
/// entry's millisecond, so a reader passing the last `at` it saw as the next
/// `since` skips no entry that shares it. `mark` is the dialect's parameter
/// sigil (`?` or `$`).
pub(crate) fn receipts_page(mark: char) -> String {
    format!(
        "SELECT seq, receipt FROM _a2app_audit WHERE at > {mark}1 AND at <= COALESCE(\
         (SELECT at FROM _a2app_audit WHERE at > {mark}1 ORDER BY at LIMIT 1 OFFSET CAST({mark}2 AS BIGINT) - 1), at) \
         ORDER BY at, seq"
    )
}

/// The SELECT list of an entity, in the order the stores' row readers expect:
/// `id`, every field in the schema's order, `created`, `updated`.
pub(crate) fn select_list(table: &str, entity: &Entity) -> String {
    let t = quote(table);
    let mut cols = vec![format!("{t}.\"id\"")];
    cols.extend(entity.fields.keys().map(|name| format!("{t}.{}", quote(name))));
    cols.push(format!("{t}.\"created\""));
    cols.push(format!("{t}.\"updated\""));
    cols.join(", ")
}

/// SQL text that depends only on an entity's definition: built once per
/// entity instead of on every read (formatting it was a measurable share of a
/// point read and of every write's read-back).
pub(crate) struct EntitySql {
    /// [`select_list`].
    pub columns: String,
    /// One row by id (its one parameter).
    pub by_id: String,
    /// The label column of one row by id (`id` itself when the entity names
    /// no label): a receipt naming a referenced record needs no more.
    pub label_by_id: String,
    /// The label field's type; `None` when the column is `id`.
    pub label_kind: Option<FieldType>,
}

/// [`EntitySql`] by entity name, in one dialect. The store serves one schema
/// between migrations, and `migrate` clears the cache.
pub(crate) struct SqlCache {
    /// How the dialect writes a statement's first parameter (`?1`, `$1`).
    first_param: &'static str,
    built: RwLock<HashMap<String, Arc<EntitySql>>>,
}

impl SqlCache {
    pub fn new(first_param: &'static str) -> SqlCache {
        SqlCache { first_param, built: RwLock::default() }
    }

    pub fn get(&self, table: &str, entity: &Entity) -> Arc<EntitySql> {
        if let Some(found) = self.built.read().unwrap_or_else(|e| e.into_inner()).get(table) {
            return Arc::clone(found);
        }
        let (t, first) = (quote(table), self.first_param);
        let columns = select_list(table, entity);
        let by_id = format!("SELECT {columns} FROM {t} WHERE \"id\" = {first}");
        let label = entity.label.as_deref().and_then(|l| Some((l, &entity.fields.get(l)?.kind)));
        let label_by_id = format!("SELECT {} FROM {t} WHERE \"id\" = {first}", quote(label.map_or("id", |(l, _)| l)));
        let label_kind = label.map(|(_, kind)| kind.clone());
        let built = Arc::new(EntitySql { columns, by_id, label_by_id, label_kind });
        self.built.write().unwrap_or_else(|e| e.into_inner()).insert(table.to_owned(), Arc::clone(&built));
        built
    }

    pub fn clear(&self) {
        self.built.write().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
