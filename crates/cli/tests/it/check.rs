//! `agent-app check` and `agent-app new`: one fixture per kind of mistake.

use crate::{example, run};

fn check_dir(files: &[(&str, &str)]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let out = run(&["check", dir.path().to_str().unwrap()]);
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned())
}

const APP: &str = "id = \"t\"\nname = \"T\"\n";

fn schema_problem(schema: &str) -> (i32, String) {
    check_dir(&[("app.toml", APP), ("schema.json", schema)])
}

#[test]
fn the_examples_pass() {
    let out = run(&["check", example("kanban").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok: kanban (3 entities, 20 fields, 5 operations, 2 request capabilities)\n"
    );
}

#[test]
fn request_capabilities_are_checked_against_the_schema_with_every_problem() {
    let schema = r#"{"entities":{"cards":{"fields":{"title":{"type":"string"}}}}}"#;
    let requests = r#"[{"name": "tidy", "title": "Tidy", "description": "Tidy the cards.", "reads": ["tasks"],
                        "writes": ["cards"], "instructions": "anything", "result": {"done": {"type": "date"}}},
                       {"name": "tidy", "title": "Again", "description": "d"}]"#;
    let (code, out) = check_dir(&[("app.toml", APP), ("schema.json", schema), ("requests.json", requests)]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "requests.json: $[0].reads[0]: no entity \"tasks\" in schema.json",
            "requests.json: $[0].instructions: unknown key \"instructions\" (allowed: name, title, description, reads, writes, params, result)",
            "requests.json: $[0].result.done.type: param type must be one of: string, number, boolean",
            "requests.json: $[1].name: duplicate capability \"tidy\"",
        ]
    );
}

#[test]
fn each_kind_of_mistake_is_reported_with_file_and_path() {
    let rows: &[(&str, &str)] = &[
        (
            r#"{"entities":{"a":{"fields":{"x":{"type":"text"}}}}}"#,
            "schema.json: $.entities.a.fields.x.type: unknown type \"text\"",
        ),
        (
            r#"{"entities":{"a":{"fields":{"x":{"type":"ref","entity":"b"}}}}}"#,
            "schema.json: $.entities.a.fields.x.entity: ref to unknown entity \"b\"",
        ),
        (r#"{"entities":{"A":{"fields":{}}}}"#, "schema.json: $.entities.A: bad entity name \"A\""),
        (
            r#"{"entities":{"a":{"fields":{"X y":{"type":"string"}}}}}"#,
            "schema.json: $.entities.a.fields[\"X y\"]: bad field name",
        ),
        (
            r#"{"entities":{"a":{"fields":{"x":{"type":"enum","values":[]}}}}}"#,
            "schema.json: $.entities.a.fields.x.values: enum needs at least one value",
        ),
        (r#"{"entities":{"a":{"fields":{}},"a":{"fields":{}}}}"#, "schema.json: $.entities.a: duplicate entity \"a\""),
        (
            r#"{"entities":{"a":{"fields":{"x":{"type":"string","maxLength":3}}}}}"#,
            "schema.json: $.entities.a.fields.x.maxLength: unknown key \"maxLength\"",
        ),
        (
            r#"{"entities":{"a":{"fields":{},"colour":"red"}}}"#,
            "schema.json: $.entities.a.colour: unknown key \"colour\"",
        ),
        (r#"{"entities": {"#, "schema.json: $: not valid JSON"),
    ];
    for (schema, want) in rows {
        let (code, out) = schema_problem(schema);
        assert_eq!(code, 1, "{schema}");
        assert!(out.lines().any(|l| l.starts_with(want)), "{schema}\nwanted a line starting with: {want}\ngot:\n{out}");
    }
}

#[test]
fn problems_in_every_file_are_reported_together() {
    let (code, out) = check_dir(&[
        ("app.toml", "id = \"t\"\nname = \"T\"\nport = 1\n"),
        ("schema.json", r#"{"entities":{"a":{"fields":{"x":{"type":"nope"}}}}}"#),
        ("operations.json", r#"[{"name":"go","executor":{"kind":"shell"}}]"#),
    ]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0].starts_with("app.toml: $.port: unknown key \"port\""), "{out}");
    assert!(lines[1].starts_with("schema.json: $.entities.a.fields.x.type: unknown type \"nope\""), "{out}");
    assert!(lines[2].starts_with("operations.json: $[0].executor.kind: executor kind must be one of"), "{out}");
}

#[test]
fn rules_of_multi_user_apps_must_fit_the_schema() {
    let schema = r#"{"entities":{"notes":{"fields":{"title":{"type":"string"}},"rules":{"list":"titel = 'x'","view":"title ="}}}}"#;
    let (code, out) =
        check_dir(&[("app.toml", "id = \"t\"\nname = \"T\"\nauth_mode = \"multi-user\"\n"), ("schema.json", schema)]);
    assert_eq!(code, 1);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("schema.json: $.entities.notes.rules.view: rule does not parse"), "{out}");
    assert!(
        lines[1].starts_with(
            "schema.json: $.entities.notes.rules.list: rule does not fit the schema: unknown field \"titel\""
        ),
        "{out}"
    );
    // The same rules in a single-user app are a mistake of their own.
    let (code, out) = schema_problem(schema);
    assert_eq!(code, 1);
    assert!(
        out.starts_with("schema.json: $.entities.notes.rules: rules apply only to auth_mode = \"multi-user\" apps"),
        "{out}"
    );
}

#[test]
fn missing_files_are_named() {
    let (code, out) = check_dir(&[]);
    assert_eq!(code, 1);
    assert!(out.contains("app.toml: $: missing"), "{out}");
    assert!(out.contains("schema.json: $: missing"), "{out}");
}

#[test]
fn new_writes_a_starter_that_passes_check() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("My Tasks");
    let out = run(&["new", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(&["check", dir.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok: my-tasks (2 entities, 6 fields, 0 operations)\n");
    // A second `new` on the same directory refuses and changes nothing.
    let out = run(&["new", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));

    // Any name is written as the user gave it, TOML-escaped; a blank one is refused before anything is made.
    let name = "Ann's \"Q3\" board \\ plans\nand\ttabs \u{7f}✓";
    let dir = parent.path().join("named");
    let out = run(&["new", dir.to_str().unwrap(), "--name", name]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let def = a2app_core::app::load(&dir).unwrap_or_else(|p| panic!("{p:?}"));
    assert_eq!(def.config.name, name);
    let blank = parent.path().join("blank");
    let out = run(&["new", blank.to_str().unwrap(), "--name", "  "]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: --name is blank; give the app a name people will see, or leave --name out to use the directory's\n"
    );
    assert!(!blank.exists());
    let file = parent.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let out = run(&["new", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(said.ends_with("a-file exists and is not a directory; choose a new directory\n"), "{said}");
}

#[test]
fn new_in_the_current_directory_names_the_app_after_it() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("Field Notes");
    std::fs::create_dir(&dir).unwrap();
    let out = crate::bin().args(["new", "."]).current_dir(&dir).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let def = a2app_core::app::load(&dir).unwrap_or_else(|p| panic!("{p:?}"));
    assert_eq!((def.config.id.as_str(), def.config.name.as_str()), ("field-notes", "Field Notes"));
    let out = run(&["check", dir.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ok: field-notes (2 entities, 6 fields, 0 operations)\n");
}

/// `app.toml` with one presentation example whose fields are `example` (TOML
/// lines) and, when given, a preview table.
fn presentation(example: &str, preview: &str) -> String {
    let preview = if preview.is_empty() {
        String::new()
    } else {
        format!("[discovery.presentation.examples.preview]\n{preview}\n")
    };
    format!("{APP}[discovery.presentation]\nversion = \"1\"\n[[discovery.presentation.examples]]\n{example}\n{preview}")
}

const EXAMPLE: &str = "id = \"plan\"\ntitle = \"Plan\"\nprompt = \"What is due?\"";
const PREVIEW: &str =
    "src = \"https://example.com/p.png\"\nalt = \"A board\"\nwidth = 800\nheight = 600\nmimeType = \"image/png\"";

#[test]
fn presentation_examples_are_checked_against_the_specs_limits() {
    const SCHEMA: &str = r#"{"entities":{"a":{"fields":{"x":{"type":"string"}}}}}"#;
    let x = |n: usize| "x".repeat(n);
    let twelve: String = (0..13)
        .map(|i| format!("[[discovery.presentation.examples]]\nid = \"e{i}\"\ntitle = \"T\"\nprompt = \"P\"\n"))
        .collect();
    let rows: Vec<(String, &str)> = vec![
        (presentation(EXAMPLE, PREVIEW), ""),
        (
            format!("{APP}[discovery.presentation]\nversion = \"2\"\n[[discovery.presentation.examples]]\n{EXAMPLE}\n"),
            "app.toml: $.discovery.presentation.version: version must be \"1\"",
        ),
        (
            format!("{APP}[discovery.presentation]\nversion = \"1\"\nexamples = []\n"),
            "app.toml: $.discovery.presentation.examples: examples must list 1 to 12 examples, got 0",
        ),
        (
            format!("{APP}[discovery.presentation]\nversion = \"1\"\n{twelve}"),
            "app.toml: $.discovery.presentation.examples: examples must list 1 to 12 examples, got 13",
        ),
        (
            presentation("id = \"-plan\"\ntitle = \"T\"\nprompt = \"P\"", ""),
            "app.toml: $.discovery.presentation.examples[0].id: id must be 1-100 letters",
        ),
        (
            presentation(&format!("id = \"{}\"\ntitle = \"T\"\nprompt = \"P\"", x(101)), ""),
            "app.toml: $.discovery.presentation.examples[0].id: id must be 1-100 letters",
        ),
        (
            format!(
                "{APP}[discovery.presentation]\nversion = \"1\"\n[[discovery.presentation.examples]]\n{EXAMPLE}\n[[discovery.presentation.examples]]\n{EXAMPLE}\n"
            ),
            "app.toml: $.discovery.presentation.examples[1].id: duplicate example id \"plan\"",
        ),
        (
            presentation(&format!("id = \"p\"\ntitle = \"{}\"\nprompt = \"P\"", x(101)), ""),
            "app.toml: $.discovery.presentation.examples[0].title: at most 100 characters, got 101",
        ),
        (
            presentation(&format!("id = \"p\"\ntitle = \"T\"\nprompt = \"{}\"", x(2001)), ""),
            "app.toml: $.discovery.presentation.examples[0].prompt: at most 2000 characters, got 2001",
        ),
        (
            presentation("id = \"p\"\ntitle = \"T\"", ""),
            "app.toml: $.discovery.presentation.examples[0].prompt: must be a non-empty string of at most 2000 characters",
        ),
        (
            presentation(&format!("{EXAMPLE}\ndescription = \"{}\"", x(501)), ""),
            "app.toml: $.discovery.presentation.examples[0].description: at most 500 characters, got 501",
        ),
        (
            presentation(EXAMPLE, &PREVIEW.replace("https://", "http://")),
            "app.toml: $.discovery.presentation.examples[0].preview.src: src must be an https:// URL",
        ),
        (
            presentation(EXAMPLE, &PREVIEW.replace("A board", &x(501))),
            "app.toml: $.discovery.presentation.examples[0].preview.alt: at most 500 characters, got 501",
        ),
        (
            presentation(EXAMPLE, &PREVIEW.replace("800", "0")),
            "app.toml: $.discovery.presentation.examples[0].preview.width: width must be a whole number of pixels from 1 to 8192",
        ),
        (
            presentation(EXAMPLE, &PREVIEW.replace("600", "8193")),
            "app.toml: $.discovery.presentation.examples[0].preview.height: height must be a whole number of pixels from 1 to 8192",
        ),
        (
            presentation(EXAMPLE, &PREVIEW.replace("image/png", "image/gif")),
            "app.toml: $.discovery.presentation.examples[0].preview.mimeType: mimeType must be one of: image/png, image/jpeg, image/webp, image/avif, image/svg+xml",
        ),
        (
            presentation(&format!("{EXAMPLE}\ncolour = 1"), ""),
            "app.toml: $.discovery.presentation.examples[0].colour: unknown key \"colour\"",
        ),
        (
            format!("{APP}[discovery]\nname = \"kanban\"\n"),
            "app.toml: $.discovery.name: name must be reverse-DNS with one slash",
        ),
        (
            format!("{APP}[discovery]\nnoindex = \"yes\"\n"),
            "app.toml: $.discovery.noindex: noindex must be true or false",
        ),
        (
            format!("{APP}[discovery]\nicons = [{{ src = \"http://x/i.png\" }}]\n"),
            "app.toml: $.discovery.icons[0].src: src must be an https:// URL or a path of this app",
        ),
        (format!("{APP}[mcp]\ntools = \"all\"\n"), "app.toml: $.mcp.tools: tools must be \"compact\" or \"full\""),
    ];
    for (toml, want) in &rows {
        let (code, out) = check_dir(&[("app.toml", toml), ("schema.json", SCHEMA)]);
        if want.is_empty() {
            assert_eq!(code, 0, "{toml}\n{out}");
            continue;
        }
        assert_eq!(code, 1, "{toml}\n{out}");
        assert!(out.lines().any(|l| l.starts_with(want)), "{toml}\nwanted a line starting with: {want}\ngot:\n{out}");
    }
}
