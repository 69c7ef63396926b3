//! The migration plan both stores follow: which changes apply, which are
//! refused, and the message for each. A store supplies the SQL of each step
//! in its dialect ([`Tables`]); the decisions are made here once.
//!
//! Additive changes apply at once. A change that would lose or reinterpret
//! stored data is refused with a message naming it, unless the operator
//! allowed destruction; a drop or type change of something that holds no data
//! is not destructive and applies. Every refusal is collected, so one run
//! names them all.

use crate::{Migration, StoreError};
use protocol::schema::{Entity, FieldType, Schema};
use std::collections::{BTreeSet, HashMap};

pub(crate) use a2app_definition::schema::{INDEX_PREFIX, index_name};

/// One step of a migration in a store's dialect, inside its transaction.
pub(crate) trait Tables {
    type Error: From<StoreError>;

    fn table_exists(&mut self, name: &str) -> Result<bool, Self::Error>;
    /// Column name → its type as the database reports it.
    fn columns(&mut self, table: &str) -> Result<HashMap<String, String>, Self::Error>;
    /// Whether a column the database reports as `stored` holds fields of `kind`.
    fn holds_type(&self, stored: &str, kind: &FieldType) -> bool;
    fn create_table(&mut self, name: &str, entity: &Entity) -> Result<(), Self::Error>;
    fn drop_table(&mut self, name: &str) -> Result<(), Self::Error>;
    fn count(&mut self, table: &str) -> Result<i64, Self::Error>;
    fn add_column(&mut self, table: &str, column: &str, kind: &FieldType) -> Result<(), Self::Error>;
    /// Drops a column and the indexes over it.
    fn drop_column(&mut self, table: &str, column: &str) -> Result<(), Self::Error>;
    /// Rows whose column holds something other than its empty value.
    fn rows_holding(&mut self, table: &str, column: &str) -> Result<i64, Self::Error>;
    /// The name the database keeps for an index named `name`.
    fn index(&self, name: &str) -> String;
    /// The indexes of `table` whose names start with `prefix`.
    fn indexes_named(&mut self, table: &str, prefix: &str) -> Result<Vec<String>, Self::Error>;
    fn create_index(&mut self, name: &str, table: &str, columns: &[String]) -> Result<(), Self::Error>;
    fn drop_index(&mut self, name: &str) -> Result<(), Self::Error>;
    /// An email `table` holds more than once, letter case aside.
    fn shared_email(&mut self, table: &str) -> Result<Option<String>, Self::Error>;
    /// The unique index on the users' email, letter case aside, empty ones apart.
    fn create_email_index(&mut self, name: &str, table: &str) -> Result<(), Self::Error>;
}

/// Brings the tables from `previous` (the schema last applied) to `schema`.
pub(crate) fn apply<T: Tables>(
    db: &mut T,
    previous: &Schema,
    schema: &Schema,
    allow_destructive: bool,
) -> Result<Migration, T::Error> {
    let mut plan = Plan { db, allow_destructive, applied: Vec::new(), refused: Vec::new() };
    for (name, entity) in &schema.entities {
        if plan.db.table_exists(name)? {
            plan.evolve(name, previous.entities.get(name), entity)?;
        } else {
            plan.db.create_table(name, entity)?;
            plan.applied.push(format!("created entity {name}"));
            plan.sync_indexes(name, entity)?;
        }
    }
    for name in previous.entities.keys().filter(|n| !schema.entities.contains_key(*n)) {
        if !plan.db.table_exists(name)? {
            continue;
        }
        let rows = plan.db.count(name)?;
        if rows > 0 && !allow_destructive {
            plan.refused.push(format!("dropping entity \"{name}\" would delete its {rows} records"));
            continue;
        }
        plan.db.drop_table(name)?;
        plan.applied.push(format!("dropped entity {name} ({rows} records)"));
    }
    let Plan { applied, refused, .. } = plan;
    if !refused.is_empty() {
        return Err(StoreError::MigrationRefused(refused).into());
    }
    Ok(Migration { applied })
}

struct Plan<'d, T> {
    db: &'d mut T,
    allow_destructive: bool,
    applied: Vec<String>,
    refused: Vec<String>,
}

impl<T: Tables> Plan<'_, T> {
    fn evolve(&mut self, name: &str, before: Option<&Entity>, entity: &Entity) -> Result<(), T::Error> {
        let columns = self.db.columns(name)?;
        for (field, spec) in &entity.fields {
            let Some(stored) = columns.get(field) else {
                self.db.add_column(name, field, &spec.kind)?;
                self.applied.push(format!("added field {name}.{field}"));
                continue;
            };
            let old_kind = before.and_then(|e| e.fields.get(field)).map(|f| &f.kind);
            let changed = match old_kind {
                Some(old) => old.name() != spec.kind.name() || old.target() != spec.kind.target(),
                // No record of the old type: trust the column's.
                None => !self.db.holds_type(stored, &spec.kind),
            };
            if !changed {
                continue;
            }
            let from = old_kind.map(FieldType::name).unwrap_or(stored.as_str());
            let held = self.db.rows_holding(name, field)?;
            if held > 0 && !self.allow_destructive {
                self.refused.push(format!(
                    "changing the type of {name}.{field} from {from} to {} would reinterpret {held} stored values",
                    spec.kind.name()
                ));
                continue;
            }
            self.db.drop_column(name, field)?;
            self.db.add_column(name, field, &spec.kind)?;
            self.applied.push(format!(
                "changed the type of {name}.{field} from {from} to {} ({held} values reset)",
                spec.kind.name()
            ));
        }
        for column in columns.keys() {
            if ["id", "created", "updated"].contains(&column.as_str()) || entity.fields.contains_key(column) {
                continue;
            }
            let held = self.db.rows_holding(name, column)?;
            if held > 0 && !self.allow_destructive {
                self.refused.push(format!("dropping field {name}.{column} would lose its values in {held} records"));
                continue;
            }
            self.db.drop_column(name, column)?;
            self.applied.push(format!("dropped field {name}.{column} ({held} values)"));
        }
        self.sync_indexes(name, entity)
    }

    /// Logins look users up by email, and two users cannot share one: the
    /// auth entity has a unique index on it. Its prefix keeps it out of the
    /// managed set `sync_indexes` keeps; it goes when the app stops being
    /// multi-user (a single-user app's `users` is an entity like any other).
    /// A table becoming the users must not hold one email twice: the index
    /// could not be built, and no `--allow-destructive` would help.
    fn sync_email_index(&mut self, table: &str, entity: &Entity) -> Result<(), T::Error> {
        let index = self.db.index(&format!("a2app_uidx_{table}__email"));
        let exists = self.db.indexes_named(table, &index)?.contains(&index);
        let wanted = a2app_definition::users::is_auth_entity(table, entity);
        if wanted && !exists {
            if let Some(email) = self.db.shared_email(table)? {
                return Err(StoreError::Unmigratable(format!(
                    "{table}.email holds {email:?} more than once, and each user of a multi-user app needs an email \
                     of their own: change the others, then start again"
                ))
                .into());
            }
            self.db.create_email_index(&index, table)?;
        } else if exists && !wanted {
            self.db.drop_index(&index)?;
            self.applied.push(format!("dropped index {index}"));
        }
        Ok(())
    }

    fn sync_indexes(&mut self, table: &str, entity: &Entity) -> Result<(), T::Error> {
        self.sync_email_index(table, entity)?;
        let existing: BTreeSet<String> = self.db.indexes_named(table, INDEX_PREFIX)?.into_iter().collect();
        // `created` is always indexed (the newest-first listing sorts on it),
        // then the declared ones, each once: one on `created` alone is the first.
        let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
        for cols in std::iter::once(vec!["created".to_owned()]).chain(entity.indexes.iter().cloned()) {
            let name = self.db.index(&index_name(table, &cols));
            if !wanted.iter().any(|(n, _)| *n == name) {
                wanted.push((name, cols));
            }
        }
        for index in &existing {
            if !wanted.iter().any(|(name, _)| name == index) {
                self.db.drop_index(index)?;
                self.applied.push(format!("dropped index {index}"));
            }
        }
        for (index, cols) in wanted {
            if !existing.contains(&index) {
                self.db.create_index(&index, table, &cols)?;
                self.applied.push(format!("created index {index}"));
            }
        }
        Ok(())
    }
}
