//! The `users` entity of a multi-user app: the fields every one has, the
//! body keys that carry secrets (never stored as fields), and how the entity
//! is told from an author's own. Passwords and tokens are `a2app-access`'s.

use indexmap::IndexMap;
use protocol::schema::{Entity, Field, FieldType, StringFormat};

/// The auth entity of a multi-user app.
pub const ENTITY: &str = "users";
/// Body keys that carry secrets: handled here, never stored as fields.
pub const SECRET_KEYS: &[&str] = &["password", "passwordConfirm", "oldPassword"];
pub const MIN_PASSWORD: usize = 8;
pub const MAX_PASSWORD: usize = 256;

/// The fields every `users` entity has, before the author's own.
pub fn system_fields() -> IndexMap<String, Field> {
    let field = |kind, required, read_only| Field { kind, required, read_only, default: None };
    let mut fields = IndexMap::new();
    fields.insert(
        "email".to_owned(),
        field(
            FieldType::String { min: None, max: Some(255), pattern: None, format: Some(StringFormat::Email) },
            true,
            false,
        ),
    );
    fields.insert("emailVisibility".to_owned(), field(FieldType::Boolean, false, false));
    fields.insert("verified".to_owned(), field(FieldType::Boolean, false, true));
    fields
}

/// The `users` entity: the system fields, then the author's fields.
pub fn entity(declared: Option<Entity>) -> Entity {
    let mut fields = system_fields();
    let (label, indexes, rules) = match declared {
        Some(e) => {
            fields.extend(e.fields);
            (e.label.or(Some("email".into())), e.indexes, e.rules)
        }
        None => (Some("email".into()), Vec::new(), None),
    };
    Entity { label, fields, indexes, rules }
}

/// The `users` entity of a multi-user app carries `emailVisibility`, a name no
/// author may declare, so it is recognized by shape.
pub fn is_auth_entity(name: &str, entity: &Entity) -> bool {
    name == ENTITY && entity.fields.contains_key("emailVisibility")
}

/// Whether the app is multi-user: its `users` entity is the auth entity.
pub fn has_users(schema: &protocol::schema::Schema) -> bool {
    schema.entities.get(ENTITY).is_some_and(|e| is_auth_entity(ENTITY, e))
}
