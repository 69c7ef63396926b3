//! Files of `binary` fields: checked, stored beside the database, served back.
//!
//! A file lands in `data/storage/<entity>/<record id>/<stored name>` before
//! the record that names it is written, so a committed record never points at
//! a missing file; when the write fails the file is removed again. The stored
//! name keeps the uploaded stem (sanitized) plus a random suffix, as
//! PocketBase does, so two uploads never collide and names are not guessable.

use crate::app::App;
use protocol::schema::{Entity, FieldType};
use protocol::{ErrorCode, Violation};
use serde_json::Value;
use std::path::PathBuf;

/// The size limit of a field that declares none (PocketBase's default).
pub const DEFAULT_MAX_SIZE: u64 = 5 << 20;

/// One uploaded file, as a transport received it.
#[derive(Debug, Clone)]
pub struct Upload {
    pub field: String,
    pub filename: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// An upload that passed its checks, with the name it will be stored under.
#[derive(Debug, Clone)]
pub struct Planned {
    pub field: String,
    pub stored: String,
    pub bytes: Vec<u8>,
}

/// Checks every upload against the entity's binary fields; all problems at once.
pub fn check(entity_name: &str, entity: &Entity, uploads: &[Upload]) -> (Vec<Planned>, Vec<Violation>) {
    let mut planned = Vec::new();
    let mut violations = Vec::new();
    for up in uploads {
        let Some(FieldType::Binary { max_size, mime_types }) = entity.fields.get(&up.field).map(|f| &f.kind) else {
            let binaries: Vec<&str> = entity
                .fields
                .iter()
                .filter(|(_, f)| matches!(f.kind, FieldType::Binary { .. }))
                .map(|(n, _)| n.as_str())
                .collect();
            violations.push(
                Violation::new(
                    ErrorCode::UnknownField,
                    format!("\"{}\" is not a file field of {entity_name}", up.field),
                )
                .field(up.field.clone())
                .expected(format!("one of: {}", binaries.join(", "))),
            );
            continue;
        };
        if planned.iter().any(|p: &Planned| p.field == up.field) {
            violations.push(
                Violation::new(ErrorCode::InvalidString, format!("\"{}\" holds one file; two were sent", up.field))
                    .field(up.field.clone()),
            );
            continue;
        }
        let limit = max_size.unwrap_or(DEFAULT_MAX_SIZE);
        if up.bytes.len() as u64 > limit {
            violations.push(
                Violation::new(
                    ErrorCode::TooLong,
                    format!("\"{}\" is {} bytes; at most {limit} are allowed", up.field, up.bytes.len()),
                )
                .field(up.field.clone())
                .expected(format!("a file of at most {limit} bytes")),
            );
            continue;
        }
        // The content decides, not the declared type: a file claiming a format we
        // recognize must really be one, and anything else keeps its declared type.
        let declared = up.content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        let kind = match sniff(&up.bytes) {
            Some(k) => k.to_owned(),
            None if SNIFFED.contains(&declared.as_str()) => "application/octet-stream".to_owned(),
            None => declared,
        };
        let kind = kind.as_str();
        if !mime_types.is_empty() && !mime_types.iter().any(|m| m.eq_ignore_ascii_case(kind)) {
            violations.push(
                Violation::new(
                    ErrorCode::InvalidString,
                    format!("\"{}\" must be a file of type {}", up.field, mime_types.join(", ")),
                )
                .field(up.field.clone())
                .expected(format!("one of: {}", mime_types.join(", ")))
                .got(Value::from(kind)),
            );
            continue;
        }
        planned.push(Planned { field: up.field.clone(), stored: stored_name(&up.filename), bytes: up.bytes.clone() });
    }
    (planned, violations)
}

/// `My Photo (1).PNG` → `my_photo_1_k3j9x2m0qa.png`.
fn stored_name(original: &str) -> String {
    let base = original.rsplit(['/', '\\']).next().unwrap_or(original);
    let (stem, ext) = match base.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() && e.len() <= 10 && e.chars().all(|c| c.is_ascii_alphanumeric()) => {
            (s, Some(e.to_ascii_lowercase()))
        }
        _ => (base, None),
    };
    let mut clean: String =
        stem.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
    clean = clean.split('_').filter(|p| !p.is_empty()).collect::<Vec<_>>().join("_");
    clean.truncate(100);
    if clean.is_empty() {
        clean = "file".into();
    }
    let suffix: String = a2app_definition::id::generate().chars().take(10).collect();
    match ext {
        Some(e) => format!("{clean}_{suffix}.{e}"),
        None => format!("{clean}_{suffix}"),
    }
}

const SNIFFED: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"];

/// The MIME type of well-known formats from their first bytes.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        [b'%', b'P', b'D', b'F', ..] => Some("application/pdf"),
        _ => None,
    }
}

/// A record's storage directory.
pub fn dir(app: &App, entity: &str, id: &str) -> PathBuf {
    app.definition.data_dir().join("storage").join(entity).join(id)
}

pub fn save(app: &App, entity: &str, id: &str, planned: &[Planned]) -> std::io::Result<()> {
    if planned.is_empty() {
        return Ok(());
    }
    let dir = dir(app, entity, id);
    std::fs::create_dir_all(&dir)?;
    for p in planned {
        std::fs::write(dir.join(&p.stored), &p.bytes)?;
    }
    Ok(())
}

/// Best-effort removal; a leftover file is garbage, never a broken record.
pub fn remove(app: &App, entity: &str, id: &str, name: &str) {
    if is_plain_name(name) {
        let _ = std::fs::remove_file(dir(app, entity, id).join(name));
    }
}

pub fn remove_all(app: &App, entity: &str, id: &str) {
    let _ = std::fs::remove_dir_all(dir(app, entity, id));
}

/// A stored name never contains a path separator or starts with a dot.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-')
}

/// The MIME type to serve a stored file with, from its extension.
pub fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, e)| e) {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("pdf") => "application/pdf",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_names_are_clean_and_unique() {
        let a = stored_name("../../etc/My Photo (1).PNG");
        assert!(a.starts_with("my_photo_1_") && a.ends_with(".png"), "{a}");
        assert!(is_plain_name(&a));
        assert_ne!(stored_name("x.png"), stored_name("x.png"));
        assert!(stored_name(".hidden").starts_with("hidden_"));
        assert!(!is_plain_name("../x") && !is_plain_name(".env") && !is_plain_name("a/b"));
    }

    #[test]
    fn uploads_are_checked_against_the_field() {
        let schema =
            a2app_definition::schema::parse(include_str!("../../../examples/kanban/schema.json"), false).unwrap();
        let members = &schema.entities["members"];
        let png = vec![0x89, b'P', b'N', b'G', 0, 0];
        let up = |field: &str, bytes: Vec<u8>, ct: &str| Upload {
            field: field.into(),
            filename: "a.png".into(),
            content_type: ct.into(),
            bytes,
        };
        let (ok, v) = check("members", members, &[up("avatar", png.clone(), "image/png")]);
        assert_eq!((ok.len(), v.len()), (1, 0));
        let (_, v) = check(
            "members",
            members,
            &[up("avatar", b"<svg/>".to_vec(), "image/png"), up("name", png.clone(), "image/png")],
        );
        let codes: Vec<(&str, Option<&str>)> = v.iter().map(|v| (v.code.as_str(), v.field.as_deref())).collect();
        assert_eq!(codes, [("invalid_string", Some("avatar")), ("unknown_field", Some("name"))]);
        let (_, v) = check("members", members, &[up("avatar", [0x89, b'P', b'N', b'G'].repeat(300_000), "image/png")]);
        assert_eq!(v[0].code, ErrorCode::TooLong);
    }
}
