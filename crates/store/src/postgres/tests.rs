//! PostgreSQL store tests, on the real server `.ci/run` starts
//! (`A2APP_TEST_POSTGRES`, else the local trust-auth default). Each test
//! works in a schema of its own, dropped when it ends; two stores on one
//! schema are two nodes of one app.

use super::*;
use crate::WriteKind;
use protocol::ErrorCode;
use serde_json::json;
use std::sync::Mutex;

const DEFAULT_URL: &str = "host=127.0.0.1 port=5432 user=postgres dbname=postgres";

/// A schema of its own on the test server; dropped with everything in it.
struct Database {
    config: postgres::Config,
    name: String,
}

impl Database {
    fn new() -> Database {
        let url = std::env::var("A2APP_TEST_POSTGRES").unwrap_or_else(|_| DEFAULT_URL.to_owned());
        let config: postgres::Config = url.parse().expect("A2APP_TEST_POSTGRES is a PostgreSQL connection string");
        let name = format!("a2app_test_{}", a2app_definition::id::generate());
        let mut client = config.connect(NoTls).unwrap_or_else(|e| {
            panic!("the tests need PostgreSQL at {url:?} (set A2APP_TEST_POSTGRES; .ci/run starts one): {e}")
        });
        client.batch_execute(&format!("CREATE SCHEMA {name}")).expect("the test schema is made");
        let mut config = config;
        config.options(&format!("-c search_path={name}"));
        Database { config, name }
    }

    /// A node: a store on this schema.
    fn node(&self) -> PostgresStore {
        PostgresStore::open(self.config.clone()).expect("the store connects")
    }

    fn client(&self) -> postgres::Client {
        self.config.connect(NoTls).expect("a test connection")
    }

    /// A node whose connections carry an application name of their own
    /// (`<name> change listener`, `<name> node`), to find them on the server.
    fn named_node(&self, prefix: &str) -> (PostgresStore, String) {
        let mut config = self.config.clone();
        let name = format!("{prefix}-{}", self.name);
        config.application_name(&name);
        (PostgresStore::open(config).expect("a node"), name)
    }

    /// Ends the server's connections with this application name, as a
    /// restart or a network cut would: how many.
    fn cut(&self, application_name: &str) -> i64 {
        self.client()
            .query_one(
                "SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1",
                &[&application_name],
            )
            .expect("terminated")
            .get(0)
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Ok(mut client) = self.config.connect(NoTls) {
            let _ = client.batch_execute(&format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
        }
    }
}

fn schema(value: serde_json::Value) -> Arc<Schema> {
    Arc::new(serde_json::from_value(value).expect("test schema is valid"))
}

fn board() -> Arc<Schema> {
    schema(json!({"entities": {
        "lists": {"label": "name", "fields": {"name": {"type": "string"}}},
        "cards": {"label": "title", "fields": {
            "title": {"type": "string"},
            "points": {"type": "number"},
            "done": {"type": "boolean"},
            "list": {"type": "ref", "entity": "lists"},
            "also": {"type": "list<ref>", "entity": "lists"},
            "extra": {"type": "json"}
        }, "indexes": [["list"]]},
        "pins": {"fields": {"list": {"type": "ref", "entity": "lists", "required": true}}}
    }}))
}

fn at(second: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_790_000_000 + second).expect("a valid instant")
}

fn write(entity: &str, kind: WriteKind, values: serde_json::Value) -> Write {
    Write {
        entity: entity.into(),
        kind,
        values: values.as_object().cloned().expect("values are an object"),
        now: at(0),
        key: None,
        agent: Some("tester".into()),
        caller: "agent".into(),
        timezone: "UTC".into(),
        password_hash: None,
        labels_from: None,
        rule: None,
        on_commit: None,
        modifiers: Vec::new(),
    }
}

fn create(entity: &str, id: &str, values: serde_json::Value) -> Write {
    write(entity, WriteKind::Create { id: id.into() }, values)
}

fn run(store: &PostgresStore, schema: &Arc<Schema>, w: Write) -> Result<Written, StoreError> {
    store.write(schema, w).blocking_recv().expect("the writer answered")
}

fn ready(db: &Database, schema: &Arc<Schema>) -> PostgresStore {
    let store = db.node();
    store.migrate(schema, false).expect("the schema applies");
    store
}

fn list(store: &PostgresStore, schema: &Arc<Schema>, id: &str, name: &str) {
    run(store, schema, create("lists", id, json!({"name": name}))).expect("the list is stored");
}

#[test]
fn a_migration_makes_tables_and_indexes_and_a_second_applies_nothing() {
    let db = Database::new();
    let store = db.node();
    let schema = board();
    let first = store.migrate(&schema, false).expect("the schema applies");
    assert_eq!(
        first.applied,
        [
            "created entity lists",
            "created index a2app_idx_lists__created",
            "created entity cards",
            "created index a2app_idx_cards__created",
            "created index a2app_idx_cards__list",
            "created entity pins",
            "created index a2app_idx_pins__created",
        ]
    );
    let types: Vec<(String, String)> = db
        .client()
        .query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = 'cards' ORDER BY ordinal_position",
            &[&db.name],
        )
        .expect("columns")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let expected = [
        ("id", "text"),
        ("title", "text"),
        ("points", "double precision"),
        ("done", "boolean"),
        ("list", "text"),
        ("also", "jsonb"),
        ("extra", "json"),
        ("created", "text"),
        ("updated", "text"),
    ];
    assert_eq!(types, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
    assert_eq!(store.migrate(&schema, false).expect("again").applied, Vec::<String>::new());
    // Another node starting later finds it all in place.
    assert_eq!(db.node().migrate(&schema, false).expect("a second node").applied, Vec::<String>::new());
}

#[test]
fn nodes_starting_together_migrate_one_after_the_other() {
    let db = Database::new();
    let schema = board();
    let nodes: Vec<PostgresStore> = (0..4).map(|_| db.node()).collect();
    let applied: Vec<usize> = std::thread::scope(|s| {
        let runs: Vec<_> = nodes.iter().map(|n| s.spawn(|| n.migrate(&schema, false))).collect();
        runs.into_iter().map(|r| r.join().expect("no panic").expect("each node migrates").applied.len()).collect()
    });
    // Exactly one node made the seven tables and indexes; the others found them.
    let mut sorted = applied.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [0, 0, 0, 7], "{applied:?}");
}

#[test]
fn a_change_that_loses_data_is_refused_unless_allowed_and_an_empty_one_applies() {
    let db = Database::new();
    let before = schema(json!({"entities": {
        "notes": {"fields": {"title": {"type": "string"}, "score": {"type": "number"}, "gone": {"type": "string"}}},
        "old": {"fields": {"x": {"type": "string"}}}
    }}));
    let store = ready(&db, &before);
    run(&store, &before, create("notes", "n1", json!({"title": "Kept", "score": 3, "gone": "value"}))).expect("stored");
    // The statement of this write is prepared for a number in `score`.
    run(&store, &before, create("notes", "n0", json!({"title": "Zero", "score": 0}))).expect("stored");
    run(&store, &before, create("old", "o1", json!({"x": "y"}))).expect("stored");
    let after = schema(json!({"entities": {
        "notes": {"fields": {"title": {"type": "string"}, "score": {"type": "string"}, "added": {"type": "boolean"}}}
    }}));
    let Err(StoreError::MigrationRefused(why)) = store.migrate(&after, false) else { panic!("refused") };
    assert_eq!(
        why,
        [
            "changing the type of notes.score from number to string would reinterpret 1 stored values",
            "dropping field notes.gone would lose its values in 1 records",
            "dropping entity \"old\" would delete its 1 records",
        ]
    );
    // Nothing of the refused migration stayed: DDL is transactional.
    let columns: i64 = db
        .client()
        .query_one(
            "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'notes' AND column_name = 'added'",
            &[&db.name],
        )
        .expect("count")
        .get(0);
    assert_eq!(columns, 0);
    let applied = store.migrate(&after, true).expect("allowed").applied;
    assert_eq!(
        applied,
        [
            "changed the type of notes.score from number to string (1 values reset)",
            "added field notes.added",
            "dropped field notes.gone (1 values)",
            "dropped entity old (1 records)",
        ]
    );
    let row = &store.get_many(&after, "notes", &["n1".into()]).expect("read")[0];
    assert_eq!(row.get("title"), Some(&json!("Kept")));
    assert_eq!(row.get("score"), Some(&json!("")));
    assert_eq!(row.get("added"), Some(&json!(false)));
    // A write after the migration: the statements prepared for the old
    // columns (the same text, another type) are not reused.
    let mut again = create("notes", "n2", json!({"title": "After", "score": "high"}));
    again.now = at(1);
    let written = run(&store, &after, again).expect("stored under the new types");
    assert_eq!(written.row.get("score"), Some(&json!("high")));
}

#[test]
fn a_create_reads_back_what_it_stored_and_audits_it() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    list(&store, &schema, "l1", "Todo");
    let extra = json!({"zeta": 1, "alpha": [true, null, 2.5], "mid": {"b": 1, "a": 2}});
    let written = run(
        &store,
        &schema,
        create(
            "cards",
            "c1",
            json!({"title": "Write tests", "points": 3, "done": true, "list": "l1", "also": ["l1"], "extra": extra}),
        ),
    )
    .expect("stored");
    let row = &written.row;
    assert_eq!(row.get("id"), Some(&json!("c1")));
    assert_eq!(row.get("points"), Some(&json!(3)), "an integral number is an integer");
    assert_eq!(row.get("done"), Some(&json!(true)));
    assert_eq!(row.get("also"), Some(&json!(["l1"])));
    // The json field comes back as written, key order included.
    assert_eq!(serde_json::to_string(&row["extra"]).expect("text"), serde_json::to_string(&extra).expect("text"));
    assert_eq!(row.get("created"), Some(&json!("2026-09-21 14:13:20.000Z")));
    assert_eq!(row.get("updated"), row.get("created"));
    assert_eq!(written.receipt.action, "create");
    assert_eq!(written.receipt.id, "c1");
    // The receipt names the list by its label, read in the write's transaction.
    assert!(written.receipt.text.contains("Todo"), "{}", written.receipt.text);
    let audited = store.receipts("", 10).expect("receipts");
    assert_eq!(audited.len(), 2);
    assert_eq!(audited[1].receipt, written.receipt);
    assert!(audited[0].seq < audited[1].seq);
    assert_eq!(store.get_many(&schema, "cards", &["c1".into(), "nope".into()]).expect("read"), vec![written.row]);
    let again = run(&store, &schema, create("cards", "c1", json!({"title": "Again"})));
    assert!(matches!(again, Err(StoreError::DuplicateId)), "{again:?}");
    // A fractional number and a missing field's zero value.
    let other = run(&store, &schema, create("cards", "c2", json!({"points": 0.25}))).expect("stored");
    assert_eq!(other.row.get("points"), Some(&json!(0.25)));
    assert_eq!(other.row.get("title"), Some(&json!("")));
    assert_eq!(other.row.get("also"), Some(&json!([])));
    assert_eq!(other.row.get("extra"), Some(&json!(null)));
}

#[test]
fn an_idempotency_key_names_its_first_record_for_a_day_even_across_nodes() {
    let db = Database::new();
    let schema = board();
    let nodes: Vec<PostgresStore> = (0..2).map(|_| ready(&db, &schema)).collect();
    // Eight creates with one key, four per node, at once: one is stored.
    let outcomes: Vec<Result<Written, StoreError>> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..8)
            .map(|i| {
                let (node, schema) = (&nodes[i % 2], &schema);
                s.spawn(move || {
                    let mut w = create("lists", &format!("k{i}"), json!({"name": "Keyed"}));
                    w.key = Some("key-1".into());
                    run(node, schema, w)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("no panic")).collect()
    });
    let stored: Vec<&Written> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(stored.len(), 1, "{outcomes:?}");
    let winner = stored[0].row["id"].as_str().expect("an id").to_owned();
    for outcome in &outcomes {
        match outcome {
            Ok(_) => {}
            Err(StoreError::DuplicateRequest { id }) => assert_eq!(*id, winner),
            Err(e) => panic!("unexpected {e:?}"),
        }
    }
    let ids: Vec<String> = (0..8).map(|i| format!("k{i}")).collect();
    assert_eq!(nodes[0].get_many(&schema, "lists", &ids).expect("read").len(), 1);
    // A day later the key is free again.
    let mut later = create("lists", "k-later", json!({"name": "Later"}));
    later.key = Some("key-1".into());
    later.now = at(24 * 3600 + 1);
    run(&nodes[1], &schema, later).expect("an expired key is claimed anew");
    let mut again = create("lists", "k-again", json!({"name": "Again"}));
    again.key = Some("key-1".into());
    again.now = at(24 * 3600 + 2);
    let refused = run(&nodes[0], &schema, again);
    assert!(matches!(&refused, Err(StoreError::DuplicateRequest { id }) if id == "k-later"), "{refused:?}");
}

#[test]
fn an_update_checks_its_version_and_refs_and_reads_back() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    list(&store, &schema, "l1", "Todo");
    let first = run(&store, &schema, create("cards", "c1", json!({"title": "One", "list": "l1"}))).expect("stored");
    let mut update =
        write("cards", WriteKind::Update { id: "c1".into(), if_match: Some("stale".into()) }, json!({"title": "Two"}));
    update.now = at(5);
    let conflict = run(&store, &schema, update.clone());
    let Err(StoreError::VersionConflict(current)) = conflict else { panic!("a conflict: {conflict:?}") };
    assert_eq!(current.get("title"), Some(&json!("One")));
    update.kind = WriteKind::Update { id: "c1".into(), if_match: first.row["updated"].as_str().map(str::to_owned) };
    let updated = run(&store, &schema, update).expect("updated");
    assert_eq!(updated.row.get("title"), Some(&json!("Two")));
    assert_eq!(updated.row.get("list"), Some(&json!("l1")));
    assert_eq!(updated.row.get("updated"), Some(&json!("2026-09-21 14:13:25.000Z")));
    assert_eq!(updated.row.get("created"), first.row.get("created"));
    assert_eq!(updated.receipt.action, "update");
    let dangling = run(
        &store,
        &schema,
        write("cards", WriteKind::Update { id: "c1".into(), if_match: None }, json!({"also": ["l1", "l9"]})),
    );
    let Err(StoreError::MissingRefs(violations)) = dangling else { panic!("missing refs: {dangling:?}") };
    assert_eq!(violations.len(), 1);
    assert_eq!(violations[0].code, ErrorCode::InvalidRef);
    assert_eq!(violations[0].field.as_deref(), Some("also"));
    assert_eq!(violations[0].got, Some(json!("l9")));
    let missing =
        run(&store, &schema, write("cards", WriteKind::Update { id: "nope".into(), if_match: None }, json!({})));
    assert!(matches!(missing, Err(StoreError::NotFound)), "{missing:?}");
    assert_eq!(store.get_many(&schema, "cards", &["c1".into()]).expect("read")[0]["title"], json!("Two"));
}

#[test]
fn a_delete_unlinks_optional_refs_and_is_refused_by_a_required_one() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    list(&store, &schema, "l1", "Todo");
    list(&store, &schema, "l2", "Done");
    run(&store, &schema, create("cards", "c1", json!({"list": "l1", "also": ["l2", "l1", "l2"]}))).expect("stored");
    run(&store, &schema, create("pins", "p1", json!({"list": "l2"}))).expect("stored");
    assert_eq!(store.referencing(&schema, "cards", "also", "l2", 10).expect("read"), ["c1"]);
    assert_eq!(store.referencing(&schema, "cards", "list", "l1", 10).expect("read"), ["c1"]);
    let stale = run(
        &store,
        &schema,
        write(
            "lists",
            WriteKind::Delete { id: "l1".into(), if_match: Some("2020-01-01 00:00:00.000Z".into()) },
            json!({}),
        ),
    );
    let Err(StoreError::VersionConflict(current)) = stale else { panic!("a conflict: {stale:?}") };
    assert_eq!(current.get("name"), Some(&json!("Todo")));
    assert_eq!(store.referencing(&schema, "cards", "list", "l1", 10).expect("read"), ["c1"], "nothing unlinked");
    let mut delete = write("lists", WriteKind::Delete { id: "l1".into(), if_match: None }, json!({}));
    delete.now = at(9);
    let deleted = run(&store, &schema, delete).expect("deleted");
    assert_eq!(deleted.row.get("name"), Some(&json!("Todo")));
    assert_eq!(deleted.receipt.action, "delete");
    let card = &store.get_many(&schema, "cards", &["c1".into()]).expect("read")[0];
    assert_eq!(card.get("list"), Some(&json!("")));
    assert_eq!(card.get("also"), Some(&json!(["l2", "l2"])), "the other refs keep their order");
    assert_eq!(card.get("updated"), Some(&json!("2026-09-21 14:13:29.000Z")));
    let refused =
        run(&store, &schema, write("lists", WriteKind::Delete { id: "l2".into(), if_match: None }, json!({})));
    assert!(
        matches!(&refused, Err(StoreError::InUse { entity, field }) if entity == "pins" && field == "list"),
        "{refused:?}"
    );
    assert_eq!(store.get_many(&schema, "lists", &["l2".into()]).expect("read").len(), 1, "nothing of it happened");
    assert_eq!(store.get_many(&schema, "cards", &["c1".into()]).expect("read")[0]["also"], json!(["l2", "l2"]));
    let gone = run(&store, &schema, write("lists", WriteKind::Delete { id: "l1".into(), if_match: None }, json!({})));
    assert!(matches!(gone, Err(StoreError::NotFound)), "{gone:?}");
    assert_eq!(
        store.missing_refs(&schema, "cards", json!({"list": "l1"}).as_object().expect("an object")).expect("read")[0]
            .code,
        ErrorCode::InvalidRef
    );
}

#[test]
fn users_log_in_by_any_case_of_their_email_which_no_two_share() {
    let db = Database::new();
    let schema = schema(json!({"entities": {"users": {"fields": {
        "email": {"type": "string", "format": "email"},
        "emailVisibility": {"type": "boolean"}
    }}}}));
    let store = ready(&db, &schema);
    let mut ann = create("users", "u1", json!({"email": "Ann@Example.com"}));
    ann.password_hash = Some("hash-1".into());
    run(&store, &schema, ann).expect("stored");
    let found = store.credentials(&schema, "ann@example.COM").expect("read").expect("found");
    assert_eq!((found.user_id.as_str(), found.password_hash.as_str()), ("u1", "hash-1"));
    assert_eq!(store.token_key(&found.user_id).expect("read"), Some(found.token_key.clone()));
    let twin = run(&store, &schema, create("users", "u2", json!({"email": "ann@example.com"})));
    let Err(StoreError::NotUnique(v)) = twin else { panic!("not unique: {twin:?}") };
    assert_eq!(v[0].code, ErrorCode::NotUnique);
    assert_eq!(v[0].field.as_deref(), Some("email"));
    let mut change = write("users", WriteKind::Update { id: "u1".into(), if_match: None }, json!({}));
    change.password_hash = Some("hash-2".into());
    run(&store, &schema, change).expect("changed");
    let after = store.credentials(&schema, "ann@example.com").expect("read").expect("found");
    assert_eq!(after.password_hash, "hash-2");
    assert_ne!(after.token_key, found.token_key, "a new password revokes the old tokens");
    run(&store, &schema, write("users", WriteKind::Delete { id: "u1".into(), if_match: None }, json!({})))
        .expect("deleted");
    assert_eq!(store.credentials(&schema, "ann@example.com").expect("read"), None);
    assert_eq!(store.token_key("u1").expect("read"), None);
}

#[test]
fn a_table_with_one_email_twice_cannot_become_the_users() {
    let db = Database::new();
    let single = schema(json!({"entities": {"users": {"fields": {"email": {"type": "string"}}}}}));
    let store = ready(&db, &single);
    run(&store, &single, create("users", "u1", json!({"email": "Bo@example.com"}))).expect("stored");
    run(&store, &single, create("users", "u2", json!({"email": "bo@EXAMPLE.com"}))).expect("stored");
    let multi = schema(json!({"entities": {"users": {"fields": {
        "email": {"type": "string"}, "emailVisibility": {"type": "boolean"}
    }}}}));
    let refused = store.migrate(&multi, true);
    assert!(
        matches!(&refused, Err(StoreError::Unmigratable(why)) if why.starts_with("users.email holds \"Bo@example.com\" more than once")),
        "{refused:?}"
    );
}

#[test]
fn every_node_gets_the_same_secret() {
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let first = b.secret("auth").expect("made");
    assert_eq!(first.len(), a2app_definition::secret::agent_token().len());
    assert_eq!(a.secret("auth").expect("read"), first);
    assert_ne!(a.secret("other").expect("made"), first);
}

#[test]
fn on_commit_sees_a_write_before_its_answer() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let mut w = create("lists", "l1", json!({"name": "Hooked"}));
    let log = Arc::clone(&seen);
    w.on_commit = Some(crate::OnCommit(Arc::new(move |done: &Written| {
        log.lock().expect("not poisoned").push(done.row["id"].as_str().unwrap_or_default().to_owned());
    })));
    run(&store, &schema, w).expect("stored");
    assert_eq!(*seen.lock().expect("not poisoned"), ["l1"]);
    // A refused write is not published.
    let mut dup = create("lists", "l1", json!({"name": "Twice"}));
    let log = Arc::clone(&seen);
    dup.on_commit = Some(crate::OnCommit(Arc::new(move |_: &Written| {
        log.lock().expect("not poisoned").push("refused".into());
    })));
    let refused = run(&store, &schema, dup);
    assert!(matches!(refused, Err(StoreError::DuplicateId)), "the conflict, nothing else: {refused:?}");
    assert_eq!(seen.lock().expect("not poisoned").len(), 1);
}

#[test]
fn a_write_under_a_rule_is_refused_until_rules_compile_for_postgres() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let mut w = create("lists", "l1", json!({"name": "Ruled"}));
    let expr = a2app_filter::parse("name != ''").expect("a valid rule");
    w.rule = Some(crate::RuleCheck { expr, ctx: crate::QueryContext { now: at(0), request: Default::default() } });
    let refused = run(&store, &schema, w);
    assert!(matches!(&refused, Err(StoreError::Internal(why)) if why.contains("rules")), "{refused:?}");
    assert_eq!(store.get_many(&schema, "lists", &["l1".into()]).expect("read").len(), 0);
}

#[test]
fn a_delete_waits_for_a_write_on_another_node_that_refs_its_record_then_unlinks_it() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    list(&store, &schema, "l1", "Todo");
    // Another node in the middle of a create that refs l1: its check locked l1.
    let mut other = db.client();
    let mut tx = other.transaction().expect("a transaction");
    tx.query_one("SELECT 1 FROM lists WHERE id = 'l1' FOR KEY SHARE", &[]).expect("l1 is there");
    tx.execute("INSERT INTO cards (id, list, created, updated) VALUES ('c1', 'l1', 'x', 'x')", &[]).expect("inserted");
    let mut pending =
        store.write(&schema, write("lists", WriteKind::Delete { id: "l1".into(), if_match: None }, json!({})));
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        matches!(pending.try_recv(), Err(tokio::sync::oneshot::error::TryRecvError::Empty)),
        "the delete waits for the write holding its record"
    );
    tx.commit().expect("the other node commits");
    let deleted = pending.blocking_recv().expect("answered").expect("deleted");
    assert_eq!(deleted.row["id"], json!("l1"));
    // The delete saw the card committed meanwhile and unlinked it.
    assert_eq!(store.get_many(&schema, "cards", &["c1".into()]).expect("read")[0]["list"], json!(""));
}

fn job(id: &str, created: &str) -> protocol::operation::Job {
    protocol::operation::Job {
        id: id.into(),
        operation: "export".into(),
        state: protocol::operation::JobState::Queued,
        progress: Default::default(),
        result: None,
        error: None,
        created_at: created.into(),
        updated_at: created.into(),
    }
}

#[test]
fn a_job_is_stored_whole_and_its_key_names_the_job_it_started() {
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let mut first = job("j1", "2026-09-21 14:13:20.000Z");
    a.create_job(&first, Some("op-key")).expect("stored");
    assert_eq!(b.job("j1").expect("read"), Some(first.clone()));
    let refused = b.create_job(&job("j2", "2026-09-21 14:13:21.000Z"), Some("op-key"));
    assert!(matches!(&refused, Err(StoreError::DuplicateRequest { id }) if id == "j1"), "{refused:?}");
    assert_eq!(b.job("j2").expect("read"), None, "nothing of the refused job stayed");
    // The same key on an entity is another scope.
    let mut keyed = create("lists", "l1", json!({"name": "Keyed"}));
    keyed.key = Some("op-key".into());
    run(&a, &schema, keyed).expect("a record write's key is its entity's");
    // A day later the key starts a new job.
    b.create_job(&job("j3", "2026-09-22 14:13:21.000Z"), Some("op-key")).expect("an expired key is free");
    first.state = protocol::operation::JobState::Succeeded;
    first.progress.done = 3;
    first.updated_at = "2026-09-21 14:13:30.000Z".into();
    a.put_job(&first).expect("replaced");
    assert_eq!(b.job("j1").expect("read"), Some(first));
    assert_eq!(a.job("nope").expect("read"), None);
}

#[test]
fn a_scheduled_runs_last_time_and_an_operations_audit_entry_are_kept() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    assert_eq!(store.last_run("nightly").expect("read"), None);
    let (day1, day2) = ("2026-09-21 00:00:00.000Z", "2026-09-22 00:00:00.000Z");
    assert!(store.claim_run("nightly", None, day1).expect("claimed"));
    assert!(!store.claim_run("nightly", None, day2).expect("judged"), "it ran since");
    // Two nodes claim the next slot at once: one does.
    let other = ready(&db, &schema);
    let claims: Vec<bool> = std::thread::scope(|s| {
        let runs: Vec<_> = [&store, &other, &store, &other]
            .into_iter()
            .map(|n| s.spawn(move || n.claim_run("nightly", Some(day1), day2).expect("judged")))
            .collect();
        runs.into_iter().map(|r| r.join().expect("no panic")).collect()
    });
    assert_eq!(claims.iter().filter(|c| **c).count(), 1, "{claims:?}");
    assert_eq!(store.last_run("nightly").expect("read").as_deref(), Some(day2));
    let receipt: protocol::receipt::Receipt = serde_json::from_value(json!({
        "text": "Ran export", "action": "run", "entity": "_ops/export", "id": "j1", "fields": {},
        "at": "2026-09-21 14:13:20.000Z", "caller": "agent"
    }))
    .expect("a receipt");
    store.audit(&receipt).expect("audited");
    let entries = store.receipts("2026-09-21 00:00:00.000Z", 10).expect("read");
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].receipt, receipt);
}

#[test]
fn an_approval_key_is_spent_once_for_its_call_even_by_two_nodes_at_once() {
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let call = crate::ApprovedCall {
        approver: "agent".into(),
        operation: "purge".into(),
        params: json!({"list": "l1"}).as_object().cloned().expect("an object"),
    };
    let approval = |key: &str, expires: &str| crate::Approval {
        key: key.into(),
        call: call.clone(),
        expires: expires.into(),
        used: false,
        consent: crate::Consent::Host,
        created: String::new(),
        agent: String::new(),
    };
    let now = "2026-09-21 14:00:00.000Z";
    a.issue_approval(&approval("k1", "2026-09-21 14:10:00.000Z"), now, 10).expect("issued");
    let mut other = call.clone();
    other.params.insert("list".into(), json!("l2"));
    assert_eq!(b.spend_approval("k1", &other, now).expect("judged"), Err(crate::Refusal::OtherCall("purge".into())));
    let spent: Vec<Result<(), crate::Refusal>> = std::thread::scope(|s| {
        let runs: Vec<_> = [&a, &b, &a, &b]
            .into_iter()
            .map(|n| s.spawn(|| n.spend_approval("k1", &call, now).expect("judged")))
            .collect();
        runs.into_iter().map(|r| r.join().expect("no panic")).collect()
    });
    assert_eq!(spent.iter().filter(|r| r.is_ok()).count(), 1, "{spent:?}");
    assert_eq!(spent.iter().filter(|r| **r == Err(crate::Refusal::Used)).count(), 3, "{spent:?}");
    assert_eq!(
        a.spend_approval("k1", &call, "2026-09-21 14:10:00.000Z").expect("judged"),
        Err(crate::Refusal::UnknownOrExpired)
    );
    // Past `max`, the keys expiring soonest make room.
    a.issue_approval(&approval("k2", "2026-09-21 14:20:00.000Z"), now, 2).expect("issued");
    a.issue_approval(&approval("k3", "2026-09-21 14:30:00.000Z"), now, 2).expect("issued");
    assert_eq!(a.spend_approval("k1", &call, now).expect("judged"), Err(crate::Refusal::UnknownOrExpired));
    assert_eq!(a.spend_approval("k3", &call, now).expect("judged"), Ok(()));
    assert_eq!(a.spend_approval("k2", &call, now).expect("judged"), Ok(()));
}

fn messages(batch: serde_json::Value) -> Vec<a2app_a2ui::Message> {
    a2app_a2ui::parse(
        &batch,
        &a2app_a2ui::Rules { actions: &["query", "get", "create", "update", "delete", "run_operation"] },
    )
    .expect("a valid batch")
}

fn surface(id: &str, title: &str) -> serde_json::Value {
    json!({"version": "v1.0", "createSurface": {
    "surfaceId": id, "catalogId": "urn:a2app:a2ui:catalog:v1",
    "dataModel": {"title": title},
    "components": [
        {"id": "root", "component": "Column", "children": ["title"]},
        {"id": "title", "component": "TextField", "label": "Title", "value": {"path": "/title"}}
    ]}})
}

fn model(id: &str, path: &str, value: serde_json::Value) -> serde_json::Value {
    json!({"version": "v1.0", "updateDataModel": {"surfaceId": id, "path": path, "value": value}})
}

#[test]
fn surfaces_are_kept_as_loro_snapshots_and_batches_from_two_nodes_lose_nothing() {
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let made = a.render_surfaces(&messages(json!([surface("form", "")])), "2026-09-21 14:00:00.000Z").expect("stored");
    let made = made.expect("a valid batch");
    assert_eq!(made.len(), 1);
    assert_eq!(made[0].0, "form");
    // Twenty batches at once from two nodes, each setting its own path: every one stays.
    std::thread::scope(|s| {
        for i in 0..20 {
            let node = if i % 2 == 0 { &a } else { &b };
            s.spawn(move || {
                let batch = messages(json!([model("form", &format!("/n{i}"), json!(i))]));
                node.render_surfaces(&batch, "2026-09-21 14:00:01.000Z").expect("stored").expect("valid");
            });
        }
    });
    let stored = b.surface("form").expect("read").expect("there");
    assert_eq!(stored.data_model["title"], json!(""));
    for i in 0..20 {
        assert_eq!(stored.data_model[format!("n{i}")], json!(i), "{}", stored.data_model);
    }
    assert_eq!(stored.components.len(), 2);
    assert_eq!(a.surfaces().expect("read"), [("form".to_owned(), "2026-09-21 14:00:01.000Z".to_owned())]);
    // A batch naming an unknown surface is refused whole.
    let refused = a
        .render_surfaces(&messages(json!([model("form", "/title", json!("x")), model("nope", "/a", json!(1))])), "t")
        .expect("judged");
    let problems = refused.expect_err("refused");
    assert_eq!(problems[0].code, ErrorCode::UnknownSurface);
    assert_eq!(a.surface("form").expect("read").expect("there").data_model["title"], json!(""));
    let gone = a
        .render_surfaces(&messages(json!([{"version": "v1.0", "deleteSurface": {"surfaceId": "form"}}])), "t")
        .expect("stored")
        .expect("valid");
    assert_eq!(gone, [("form".to_owned(), None)]);
    assert_eq!(b.surface("form").expect("read"), None);
    assert_eq!(b.surfaces().expect("read"), Vec::<(String, String)>::new());
}

#[test]
fn an_app_keeps_at_most_two_hundred_surfaces() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let many: Vec<serde_json::Value> = (0..100).map(|i| surface(&format!("s{i}"), "")).collect();
    store.render_surfaces(&messages(json!(many)), "t").expect("stored").expect("valid");
    let more: Vec<serde_json::Value> = (100..200).map(|i| surface(&format!("s{i}"), "")).collect();
    store.render_surfaces(&messages(json!(more)), "t").expect("stored").expect("valid");
    let over = store.render_surfaces(&messages(json!([surface("s200", "")])), "t").expect("judged");
    assert_eq!(over.expect_err("refused")[0].code, ErrorCode::OutOfRange);
    assert_eq!(store.surfaces().expect("read").len(), 200);
}

fn receipt(action: &str, id: &str) -> protocol::receipt::Receipt {
    serde_json::from_value(json!({
        "text": action, "action": action, "entity": "_requests", "id": id, "fields": {},
        "at": "2026-09-21 14:13:20.000Z", "caller": "agent"
    }))
    .expect("a receipt")
}

fn request(id: &str, capability: &str, by: &str, created: &str) -> protocol::request::AgentRequest {
    protocol::request::AgentRequest {
        id: id.into(),
        capability: capability.into(),
        params: json!({"q": id}).as_object().cloned().expect("an object"),
        status: protocol::request::RequestStatus::Pending,
        requested_by: by.into(),
        created: created.into(),
        updated: created.into(),
        claimed_by: None,
        lease_until: None,
        result: None,
        failure: None,
    }
}

#[test]
fn the_request_queue_bounds_askers_and_lists_claimable_requests_oldest_first() {
    use crate::RequestFilter;
    use protocol::request::RequestStatus;
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let asked = |r: &protocol::request::AgentRequest| store.ask(r, 2, 10, &receipt("ask", &r.id)).expect("judged");
    assert!(asked(&request("r1", "summarize", "ann", "2026-09-21 10:00:00.000Z")));
    assert!(asked(&request("r2", "translate", "ann", "2026-09-21 11:00:00.000Z")));
    assert!(!asked(&request("r3", "summarize", "ann", "2026-09-21 12:00:00.000Z")), "ann has two open");
    assert!(asked(&request("r4", "summarize", "bo", "2026-09-21 13:00:00.000Z")), "bo has none");
    assert_eq!(store.request("r3").expect("read"), None);
    assert_eq!(store.request("r1").expect("read"), Some(request("r1", "summarize", "ann", "2026-09-21 10:00:00.000Z")));
    let ids = |f: RequestFilter| -> (Vec<String>, u64) {
        let (items, total) = store.requests(&f).expect("listed");
        (items.into_iter().map(|r| r.id).collect(), total)
    };
    assert_eq!(
        ids(RequestFilter { limit: 10, ..Default::default() }),
        (vec!["r4".into(), "r2".into(), "r1".into()], 3)
    );
    assert_eq!(ids(RequestFilter { limit: 1, offset: 1, ..Default::default() }), (vec!["r2".into()], 3));
    let summaries = RequestFilter { capability: Some("summarize".into()), limit: 10, ..Default::default() };
    assert_eq!(ids(summaries), (vec!["r4".into(), "r1".into()], 2));
    let covered = RequestFilter { capabilities: Some(vec!["translate".into()]), limit: 10, ..Default::default() };
    assert_eq!(ids(covered), (vec!["r2".into()], 1));
    let annes = RequestFilter {
        requested_by: Some("ann".into()),
        status: Some(RequestStatus::Pending),
        limit: 10,
        ..Default::default()
    };
    assert_eq!(ids(annes), (vec!["r2".into(), "r1".into()], 2));
    let claimable =
        RequestFilter { claimable_at: Some("2026-09-21 14:00:00.000Z".into()), limit: 10, ..Default::default() };
    assert_eq!(ids(claimable), (vec!["r1".into(), "r2".into(), "r4".into()], 3));
    assert_eq!(store.receipts("", 10).expect("read").len(), 3, "each stored ask is audited");
}

#[test]
fn two_agents_claiming_one_request_on_two_nodes_get_one_claim() {
    use crate::{RequestConflict, RequestStep};
    use protocol::request::RequestStatus;
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    assert!(
        a.ask(&request("r1", "summarize", "ann", "2026-09-21 10:00:00.000Z"), 5, 10, &receipt("ask", "r1"))
            .expect("asked")
    );
    let now = "2026-09-21 10:01:00.000Z";
    let claim = |agent: usize| RequestStep::Claim {
        key_hash: format!("hash-{agent}"),
        agent: Some(format!("agent-{agent}")),
        lease_until: "2026-09-21 10:06:00.000Z".into(),
    };
    let outcomes: Vec<_> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..6)
            .map(|i| {
                let (node, step) = (if i % 2 == 0 { &a } else { &b }, claim(i));
                s.spawn(move || node.step_request("r1", &step, now, &receipt("claim", "r1")).expect("judged"))
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("no panic")).collect()
    });
    let won: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(won.len(), 1, "{outcomes:?}");
    let holder = won[0].claimed_by.clone().expect("claimed by someone");
    let hash = format!("hash-{}", holder.trim_start_matches("agent-"));
    for o in &outcomes {
        if let Err(conflict) = o {
            assert_eq!(*conflict, RequestConflict::Claimed("2026-09-21 10:06:00.000Z".into()));
        }
    }
    let wrong = RequestStep::Answer { key_hash: "hash-none".into(), outcome: Ok(Map::new()) };
    assert_eq!(
        b.step_request("r1", &wrong, now, &receipt("answer", "r1")).expect("judged"),
        Err(RequestConflict::WrongKey)
    );
    let others = RequestStep::Cancel { by: Some("bo".into()) };
    assert_eq!(
        a.step_request("r1", &others, now, &receipt("cancel", "r1")).expect("judged"),
        Err(RequestConflict::NotFound)
    );
    let answer = RequestStep::Answer {
        key_hash: hash,
        outcome: Ok(json!({"summary": "ok"}).as_object().cloned().expect("map")),
    };
    let done = b.step_request("r1", &answer, now, &receipt("answer", "r1")).expect("judged").expect("answered");
    assert_eq!(done.status, RequestStatus::Done);
    assert_eq!(done.result, json!({"summary": "ok"}).as_object().cloned());
    assert_eq!(a.request("r1").expect("read"), Some(done));
    let late = RequestStep::Cancel { by: None };
    assert_eq!(
        a.step_request("r1", &late, now, &receipt("cancel", "r1")).expect("judged"),
        Err(RequestConflict::Closed(RequestStatus::Done))
    );
    assert_eq!(
        a.step_request("nope", &late, now, &receipt("cancel", "nope")).expect("judged"),
        Err(RequestConflict::NotFound)
    );
}

fn grant(id: &str, fingerprint: &str, client: Option<&str>) -> protocol::grant::Grant {
    protocol::grant::Grant {
        id: id.into(),
        agent: "helper".into(),
        public_key: "pk".into(),
        fingerprint: fingerprint.into(),
        scopes: vec!["read:cards".into(), "write:cards".into()],
        status: protocol::grant::GrantStatus::Pending,
        acts_for: String::new(),
        created: "2026-09-21 10:00:00.000Z".into(),
        updated: "2026-09-21 10:00:00.000Z".into(),
        expires: "2026-09-21 11:00:00.000Z".into(),
        client: client.map(|c| protocol::grant::GrantClient {
            id: c.into(),
            name: "A client".into(),
            redirect_uri: "http://127.0.0.1:9/cb".into(),
        }),
        source: "203.0.113.7".into(),
    }
}

const LIMITS: crate::GrantLimits =
    crate::GrantLimits { pending: 3, pending_per_key: 2, pending_per_source: 100, keep: 10 };

#[test]
fn grants_are_asked_within_bounds_decided_once_and_revoking_ends_their_tokens() {
    use crate::{GrantConflict, GrantRoom, GrantStep, IssuedToken};
    use protocol::grant::GrantStatus;
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let ask = |node: &PostgresStore, g: &protocol::grant::Grant| {
        node.ask_grant(g, LIMITS, &receipt("ask", &g.id), None).expect("judged")
    };
    assert_eq!(ask(&a, &grant("g1", "fp-1", None)), GrantRoom::Asked);
    assert_eq!(ask(&b, &grant("g2", "fp-1", None)), GrantRoom::Asked);
    assert_eq!(ask(&a, &grant("g3", "fp-1", None)), GrantRoom::KeyFull);
    assert_eq!(ask(&b, &grant("g4", "fp-2", None)), GrantRoom::Asked);
    assert_eq!(ask(&a, &grant("g5", "fp-3", None)), GrantRoom::Full);
    // Sign-ins through OAuth have a pool of their own: a full pool of asks
    // with a key leaves them their room.
    assert_eq!(ask(&b, &grant("g6", "client-9", Some("client-9"))), GrantRoom::Asked);
    // One source holds at most its share, of both pools together.
    let tight = crate::GrantLimits { pending_per_source: 4, ..LIMITS };
    let g7 = grant("g7", "client-8", Some("client-8"));
    assert_eq!(a.ask_grant(&g7, tight, &receipt("ask", "g7"), None).expect("judged"), GrantRoom::SourceFull);
    let elsewhere = protocol::grant::Grant { source: "198.51.100.1".into(), ..g7 };
    assert_eq!(a.ask_grant(&elsewhere, tight, &receipt("ask", "g7"), None).expect("judged"), GrantRoom::Asked);
    let pending: Vec<String> = a.pending_grants(None, 10).expect("read").into_iter().map(|g| g.id).collect();
    assert_eq!(pending, ["g1", "g2", "g4", "g6", "g7"]);
    let from: Vec<String> =
        a.pending_grants(Some("198.51.100.1"), 10).expect("read").into_iter().map(|g| g.id).collect();
    assert_eq!(from, ["g7"]);
    assert_eq!(b.grant("g1").expect("read"), Some(grant("g1", "fp-1", None)));
    let now = "2026-09-21 10:05:00.000Z";
    let approve = GrantStep::Approve { acts_for: "ann".into(), scopes: vec!["read:cards".into()] };
    // Two nodes decide at once: one approval, one conflict naming the decision.
    let decided: Vec<_> = std::thread::scope(|s| {
        let one = s.spawn(|| a.step_grant("g1", &approve, now, &receipt("approve", "g1")).expect("judged"));
        let two = s.spawn(|| b.step_grant("g1", &GrantStep::Deny, now, &receipt("deny", "g1")).expect("judged"));
        vec![one.join().expect("no panic"), two.join().expect("no panic")]
    });
    assert_eq!(decided.iter().filter(|d| d.is_ok()).count(), 1, "{decided:?}");
    let status = b.grant("g1").expect("read").expect("there").status;
    let expected = if status == GrantStatus::Active { GrantStatus::Active } else { GrantStatus::Denied };
    assert!(decided.contains(&Err(GrantConflict::Decided(expected))), "{decided:?}");
    // Make sure g2 is active whatever happened to g1.
    b.step_grant("g2", &approve, now, &receipt("approve", "g2")).expect("judged").expect("approved");
    let token = |n: &str| IssuedToken {
        grant_id: "g2".into(),
        hash: format!("hash-{n}"),
        expires: "2026-09-21 11:05:00.000Z".into(),
        nonce: format!("nonce-{n}"),
        nonce_expires: "2026-09-21 10:10:00.000Z".into(),
    };
    assert_eq!(a.issue_grant_token(&token("1"), now, 5).expect("judged"), Ok(()));
    let mut replay = token("2");
    replay.nonce = "nonce-1".into();
    assert_eq!(b.issue_grant_token(&replay, now, 5).expect("judged"), Err(GrantConflict::Replayed));
    let found = b.grant_by_token("hash-1", now).expect("read").expect("a live token");
    assert_eq!((found.grant.id.as_str(), found.grant.acts_for.as_str(), found.audience), ("g2", "ann", None));
    assert_eq!(found.grant.scopes, ["read:cards"]);
    assert_eq!(b.grant_by_token("hash-1", "2026-09-21 11:05:00.000Z").expect("read"), None, "expired");
    let someone_else = GrantStep::Revoke { acts_for: Some("bo".into()) };
    assert_eq!(
        a.step_grant("g2", &someone_else, now, &receipt("revoke", "g2")).expect("judged"),
        Err(GrantConflict::NotFound)
    );
    let revoked =
        a.step_grant("g2", &GrantStep::Revoke { acts_for: Some("ann".into()) }, now, &receipt("revoke", "g2"));
    assert_eq!(revoked.expect("judged").expect("revoked").status, GrantStatus::Revoked);
    assert_eq!(b.grant_by_token("hash-1", now).expect("read"), None, "its token ended with it");
    assert_eq!(b.token_grant("hash-1").expect("read"), None);
    assert_eq!(
        a.issue_grant_token(&token("3"), now, 5).expect("judged"),
        Err(GrantConflict::Decided(GrantStatus::Revoked))
    );
    // Unanswered past its expiry, a pending grant expires.
    let late = "2026-09-21 12:00:00.000Z";
    let expired = a.step_grant("g4", &approve, late, &receipt("approve", "g4")).expect("judged");
    assert_eq!(expired, Err(GrantConflict::Decided(GrantStatus::Expired)));
    let listed: Vec<String> = a.grants(None, 10).expect("read").into_iter().map(|g| g.id).collect();
    assert_eq!(listed, ["g7", "g6", "g4", "g2", "g1"]);
    assert_eq!(a.grants(Some("ann"), 10).expect("read").iter().filter(|g| g.id == "g2").count(), 1);
}

#[test]
fn an_oauth_code_is_spent_once_and_a_refresh_token_presented_twice_ends_its_grant() {
    use crate::{AuthRequest, CodeUse, GrantConflict, GrantRoom, GrantStep, OAuthClient, OAuthTokens};
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let client = OAuthClient {
        id: "client-1".into(),
        name: "A client".into(),
        redirect_uris: vec!["http://127.0.0.1:9/cb".into()],
        used: "2026-09-21 09:00:00.000Z".into(),
    };
    a.register_client(&client, 10).expect("registered");
    assert_eq!(b.oauth_client("client-1").expect("read"), Some(client.clone()));
    let request = AuthRequest {
        grant_id: "g1".into(),
        client_id: "client-1".into(),
        redirect_uri: "http://127.0.0.1:9/cb".into(),
        challenge: "challenge".into(),
        state: Some("xyz".into()),
        audience: "http://127.0.0.1:8090/mcp".into(),
    };
    let g = grant("g1", "client-1", Some("client-1"));
    assert_eq!(a.ask_grant(&g, LIMITS, &receipt("ask", "g1"), Some(&request)).expect("judged"), GrantRoom::Asked);
    assert_eq!(b.auth_request("g1").expect("read"), Some(request.clone()));
    assert_eq!(b.grant("g1").expect("read").expect("there").client, g.client);
    let now = "2026-09-21 10:05:00.000Z";
    let approve = GrantStep::Approve { acts_for: "ann".into(), scopes: vec!["read:cards".into()] };
    a.step_grant("g1", &approve, now, &receipt("approve", "g1")).expect("judged").expect("approved");
    a.set_auth_code("g1", "code-hash", "2026-09-21 10:06:00.000Z").expect("stored");
    // Four trades of one code at once on two nodes: one gets the request.
    let uses: Vec<CodeUse> = std::thread::scope(|s| {
        let runs: Vec<_> = [&a, &b, &a, &b]
            .into_iter()
            .map(|n| s.spawn(|| n.take_auth_code("code-hash", now).expect("judged")))
            .collect();
        runs.into_iter().map(|r| r.join().expect("no panic")).collect()
    });
    assert_eq!(uses.iter().filter(|u| **u == CodeUse::Live(request.clone())).count(), 1, "{uses:?}");
    assert_eq!(uses.iter().filter(|u| **u == CodeUse::Replayed("g1".into())).count(), 3, "{uses:?}");
    assert_eq!(a.take_auth_code("code-hash", "2026-09-21 10:06:00.000Z").expect("judged"), CodeUse::Unknown);
    assert_eq!(a.take_auth_code("other", now).expect("judged"), CodeUse::Unknown);
    let tokens = |n: &str| OAuthTokens {
        grant_id: "g1".into(),
        audience: "http://127.0.0.1:8090/mcp".into(),
        access_hash: format!("access-{n}"),
        access_expires: "2026-09-21 11:05:00.000Z".into(),
        refresh_hash: format!("refresh-{n}"),
        refresh_expires: "2026-10-21 10:05:00.000Z".into(),
    };
    assert_eq!(a.issue_oauth_tokens(&tokens("1"), None, now, 5).expect("judged"), Ok(()));
    let live = b.grant_by_token("access-1", now).expect("read").expect("live");
    assert_eq!(live.audience.as_deref(), Some("http://127.0.0.1:8090/mcp"));
    assert_eq!(
        b.refresh_grant("refresh-1", now).expect("read"),
        Some(("g1".to_owned(), "http://127.0.0.1:8090/mcp".to_owned()))
    );
    assert_eq!(b.issue_oauth_tokens(&tokens("2"), Some("refresh-1"), now, 5).expect("judged"), Ok(()));
    assert_eq!(a.token_grant("refresh-1").expect("read").as_deref(), Some("g1"), "a used one is still known");
    assert_eq!(a.issue_oauth_tokens(&tokens("3"), Some("nope"), now, 5).expect("judged"), Err(GrantConflict::NotFound));
    // The rotated-out refresh token again: a sign it was stolen; every token ends.
    assert_eq!(
        a.issue_oauth_tokens(&tokens("4"), Some("refresh-1"), now, 5).expect("judged"),
        Err(GrantConflict::Replayed)
    );
    assert_eq!(b.grant_by_token("access-2", now).expect("read"), None);
    assert_eq!(b.refresh_grant("refresh-2", now).expect("read"), None);
    assert_eq!(b.token_grant("access-2").expect("read"), None);
}

/// Collects what a listener delivers.
fn listening(store: &PostgresStore) -> (Listener, std::sync::mpsc::Receiver<StoredChange>) {
    let (sent, heard) = std::sync::mpsc::channel();
    let listener = store
        .listen(move |change| {
            let _ = sent.send(change);
        })
        .expect("listening");
    (listener, heard)
}

fn next_change(heard: &std::sync::mpsc::Receiver<StoredChange>) -> StoredChange {
    heard.recv_timeout(std::time::Duration::from_secs(10)).expect("a change within 10 s")
}

#[test]
fn every_node_hears_each_committed_change_in_commit_order_and_no_refused_one() {
    use crate::realtime::Action;
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let (_listener, heard) = listening(&b);
    list(&a, &schema, "l1", "Todo");
    let refused = run(&a, &schema, create("lists", "l1", json!({"name": "Again"})));
    assert!(matches!(refused, Err(StoreError::DuplicateId)));
    let big = "x".repeat(20_000);
    run(&a, &schema, create("cards", "c1", json!({"title": "Big", "list": "l1", "extra": {"blob": big}})))
        .expect("stored");
    run(&a, &schema, write("lists", WriteKind::Update { id: "l1".into(), if_match: None }, json!({"name": "Doing"})))
        .expect("updated");
    run(&a, &schema, write("lists", WriteKind::Delete { id: "l1".into(), if_match: None }, json!({})))
        .expect("deleted");
    let got: Vec<StoredChange> = (0..4).map(|_| next_change(&heard)).collect();
    let summary: Vec<(Action, &str, &str)> =
        got.iter().map(|c| (c.action, c.entity.as_str(), c.record["id"].as_str().unwrap_or_default())).collect();
    assert_eq!(
        summary,
        [
            (Action::Create, "lists", "l1"),
            (Action::Create, "cards", "c1"),
            (Action::Update, "lists", "l1"),
            (Action::Delete, "lists", "l1")
        ]
    );
    assert_eq!(got[0].record["name"], json!("Todo"));
    assert_eq!(got[1].record["extra"]["blob"].as_str().map(str::len), Some(20_000), "past NOTIFY's 8000 bytes");
    assert_eq!(got[2].record["name"], json!("Doing"));
    assert_eq!(got[3].record["name"], json!("Doing"), "a delete carries the record as it was");
    assert!(got.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(heard.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "the refused write was not heard");
}

#[test]
fn a_listener_that_lost_its_connection_catches_up_on_what_it_missed() {
    let db = Database::new();
    let schema = board();
    let writer = ready(&db, &schema);
    let (node, name) = db.named_node("listener");
    let (_listener, heard) = listening(&node);
    list(&writer, &schema, "l1", "Before");
    assert_eq!(next_change(&heard).record["id"], json!("l1"));
    // The server ends the listener's connection; writes go on meanwhile.
    assert_eq!(db.cut(&format!("{name} change listener")), 1);
    list(&writer, &schema, "l2", "While away");
    list(&writer, &schema, "l3", "While away too");
    let caught: Vec<serde_json::Value> = (0..2).map(|_| next_change(&heard).record["id"].clone()).collect();
    assert_eq!(caught, [json!("l2"), json!("l3")]);
    list(&writer, &schema, "l4", "After");
    assert_eq!(next_change(&heard).record["id"], json!("l4"));
    assert!(heard.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "nothing twice");
}

#[test]
fn a_starting_node_interrupts_the_jobs_of_gone_nodes_and_leaves_live_ones_running() {
    use protocol::operation::JobState;
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let running = |id: &str| {
        let mut j = job(id, "2026-09-21 14:13:20.000Z");
        j.state = JobState::Running;
        j
    };
    a.create_job(&running("ja"), None).expect("stored");
    b.put_job(&running("jb")).expect("stored");
    {
        let gone = ready(&db, &schema);
        gone.create_job(&running("jc"), None).expect("stored");
        gone.create_job(&job("jq", "2026-09-21 14:13:21.000Z"), None).expect("stored");
    }
    // A job stored with no node (by hand, or by a version before nodes).
    db.client()
        .execute(
            "INSERT INTO _a2app_jobs (id, operation, state, job, created, updated) VALUES ('jn', 'export', 'running', $1, 'x', 'x')",
            &[&serde_json::to_string(&running("jn")).expect("json")],
        )
        .expect("inserted");
    let starting = ready(&db, &schema);
    let now = "2026-09-21 15:00:00.000Z";
    // The gone node's connection ends as the server notices; give it a moment.
    let mut interrupted = 0;
    for _ in 0..50 {
        interrupted += starting.interrupt_jobs(now).expect("interrupted");
        if interrupted >= 3 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(interrupted, 3);
    for id in ["jc", "jq", "jn"] {
        let j = starting.job(id).expect("read").expect("there");
        assert_eq!((j.state, j.updated_at.as_str()), (JobState::Interrupted, now), "{id}");
    }
    for id in ["ja", "jb"] {
        assert_eq!(starting.job(id).expect("read").expect("there").state, JobState::Running, "{id} runs on");
    }
    assert_eq!(starting.interrupt_jobs(now).expect("none left"), 0);
}

#[test]
fn a_listener_cut_off_before_its_first_change_still_hears_what_was_written_meanwhile() {
    let db = Database::new();
    let schema = board();
    let writer = ready(&db, &schema);
    let (node, name) = db.named_node("early");
    let (_listener, heard) = listening(&node);
    assert_eq!(db.cut(&format!("{name} change listener")), 1);
    list(&writer, &schema, "l1", "While away");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    list(&writer, &schema, "l2", "Back");
    let ids: Vec<serde_json::Value> = (0..2).map(|_| next_change(&heard).record["id"].clone()).collect();
    assert_eq!(ids, [json!("l1"), json!("l2")]);
}

#[test]
fn changes_are_delivered_while_writes_keep_coming() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let (_listener, heard) = listening(&store);
    let done = std::thread::scope(|s| {
        let writes = s.spawn(|| {
            for i in 0..40 {
                list(&store, &schema, &format!("l{i:02}"), "Steady");
                std::thread::sleep(std::time::Duration::from_millis(30));
            }
            std::time::Instant::now()
        });
        let first = next_change(&heard);
        let first_at = std::time::Instant::now();
        assert_eq!(first.record["id"], json!("l00"));
        (first_at, writes.join().expect("no panic"))
    });
    let (first_heard, writes_done) = done;
    // A steady stream (one write every 30 ms or so, over a second) must not
    // hold the first change back until it pauses.
    assert!(first_heard < writes_done, "the first change came only after the 40 writes");
    let rest: Vec<String> =
        (1..40).map(|_| next_change(&heard).record["id"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(rest, (1..40).map(|i| format!("l{i:02}")).collect::<Vec<_>>());
}

#[test]
fn on_commit_sees_a_nodes_writes_in_the_order_they_committed() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let (_listener, heard) = listening(&store);
    let hooked = Arc::new(Mutex::new(Vec::<String>::new()));
    std::thread::scope(|s| {
        for t in 0..4 {
            let (store, schema, hooked) = (&store, &schema, Arc::clone(&hooked));
            s.spawn(move || {
                for i in 0..15 {
                    let mut w = create("lists", &format!("t{t}i{i:02}"), json!({"name": "Ordered"}));
                    let log = Arc::clone(&hooked);
                    w.on_commit = Some(crate::OnCommit(Arc::new(move |done: &Written| {
                        log.lock().expect("not poisoned").push(done.row["id"].as_str().unwrap_or_default().to_owned());
                    })));
                    run(store, schema, w).expect("stored");
                }
            });
        }
    });
    // The listener hears them in commit order; the hook saw the same order.
    let committed: Vec<String> =
        (0..60).map(|_| next_change(&heard).record["id"].as_str().unwrap_or_default().to_owned()).collect();
    assert_eq!(*hooked.lock().expect("not poisoned"), committed);
}

#[test]
fn a_live_node_that_lost_its_liveness_connection_takes_its_lock_again() {
    use protocol::operation::JobState;
    let db = Database::new();
    let schema = board();
    let (live, name) = db.named_node("live");
    live.migrate(&schema, false).expect("migrated");
    let mut running = job("jl", "2026-09-21 14:13:20.000Z");
    running.state = JobState::Running;
    live.create_job(&running, None).expect("stored");
    let holder = format!("{name} node");
    let pid = |client: &mut postgres::Client| -> Option<i32> {
        client
            .query_opt("SELECT pid FROM pg_stat_activity WHERE application_name = $1", &[&holder])
            .expect("read")
            .map(|r| r.get(0))
    };
    let mut admin = db.client();
    let before = pid(&mut admin).expect("the node holds its lock on a connection of its own");
    admin.execute("SELECT pg_terminate_backend($1)", &[&before]).expect("terminated");
    let mut again = None;
    for _ in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        again = pid(&mut admin).filter(|p| *p != before);
        if again.is_some() {
            break;
        }
    }
    assert!(again.is_some(), "the node took its lock again on a new connection");
    // Once it holds it again, a starting node leaves its job running.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let starting = ready(&db, &schema);
    assert_eq!(starting.interrupt_jobs("2026-09-21 15:00:00.000Z").expect("judged"), 0);
    assert_eq!(starting.job("jl").expect("read").expect("there").state, JobState::Running);
}

#[test]
fn updates_pointing_at_a_record_racing_its_delete_neither_deadlock_nor_dangle() {
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let deadlocks = |client: &mut postgres::Client| -> i64 {
        client
            .query_one("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()", &[])
            .expect("read")
            .get(0)
    };
    let mut admin = db.client();
    let before = deadlocks(&mut admin);
    for round in 0..20 {
        let (target, card) = (format!("t{round}"), format!("c{round}"));
        list(&a, &schema, &target, "Target");
        run(&a, &schema, create("cards", &card, json!({"title": "Card"}))).expect("stored");
        std::thread::scope(|s| {
            let update =
                write("cards", WriteKind::Update { id: card.clone(), if_match: None }, json!({"list": target}));
            let updating = s.spawn(|| run(&a, &schema, update));
            let deleting = s.spawn(|| {
                run(&b, &schema, write("lists", WriteKind::Delete { id: target.clone(), if_match: None }, json!({})))
            });
            let (updated, deleted) = (updating.join().expect("no panic"), deleting.join().expect("no panic"));
            assert!(deleted.is_ok(), "{deleted:?}");
            // Either the update came first (and the delete unlinked it) or it found the list gone.
            match updated {
                Ok(_) => {}
                Err(StoreError::MissingRefs(v)) => assert_eq!(v[0].code, ErrorCode::InvalidRef),
                Err(e) => panic!("round {round}: {e:?}"),
            }
        });
        let stored = &a.get_many(&schema, "cards", std::slice::from_ref(&card)).expect("read")[0];
        assert_eq!(stored["list"], json!(""), "round {round}: no ref to a deleted list");
    }
    assert_eq!(deadlocks(&mut admin) - before, 0, "no deadlock");
}

#[test]
fn the_approval_bound_holds_when_nodes_issue_at_once() {
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let call = crate::ApprovedCall { approver: "agent".into(), operation: "purge".into(), params: Map::new() };
    std::thread::scope(|s| {
        for i in 0..8 {
            let (node, call) = (if i % 2 == 0 { &a } else { &b }, call.clone());
            s.spawn(move || {
                let approval = crate::Approval {
                    key: format!("k{i}"),
                    call,
                    expires: format!("2026-09-21 14:{:02}:00.000Z", 10 + i),
                    used: false,
                    consent: crate::Consent::Host,
                    created: String::new(),
                    agent: String::new(),
                };
                node.issue_approval(&approval, "2026-09-21 14:00:00.000Z", 2).expect("issued");
            });
        }
    });
    let kept: i64 = db.client().query_one("SELECT COUNT(*) FROM _a2app_approvals", &[]).expect("count").get(0);
    assert_eq!(kept, 2);
}

#[test]
fn expired_idempotency_keys_are_purged_as_on_sqlite() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    for day in 0..3 {
        let mut w = create("lists", &format!("l{day}"), json!({"name": "Keyed"}));
        w.key = Some(format!("key-{day}"));
        w.now = at(day * 24 * 3600 + day);
        run(&store, &schema, w).expect("stored");
    }
    let keys: Vec<String> = db
        .client()
        .query("SELECT key FROM _a2app_keys ORDER BY key", &[])
        .expect("read")
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(keys, ["key-2"], "the keys of the days before are gone");
}

#[test]
fn emails_fold_ascii_letters_only_as_sqlite_nocase_does() {
    let db = Database::new();
    let schema = schema(json!({"entities": {"users": {"fields": {
        "email": {"type": "string"}, "emailVisibility": {"type": "boolean"}
    }}}}));
    let store = ready(&db, &schema);
    let mut upper = create("users", "u1", json!({"email": "Éva@Example.com"}));
    upper.password_hash = Some("h1".into());
    run(&store, &schema, upper).expect("stored");
    let mut lower = create("users", "u2", json!({"email": "éva@example.com"}));
    lower.password_hash = Some("h2".into());
    run(&store, &schema, lower).expect("another user: É and é are different letters to NOCASE");
    let found = |email: &str| store.credentials(&schema, email).expect("read").map(|c| c.user_id);
    assert_eq!(found("ÉVA@EXAMPLE.COM").as_deref(), Some("u1"));
    assert_eq!(found("éva@EXAMPLE.com").as_deref(), Some("u2"));
    let twin = run(&store, &schema, create("users", "u3", json!({"email": "ÉVA@example.COM"})));
    assert!(matches!(twin, Err(StoreError::NotUnique(_))), "{twin:?}");
}

#[test]
fn stored_values_count_as_data_by_their_type_when_a_type_changes() {
    let db = Database::new();
    let before = schema(json!({"entities": {"notes": {"fields": {
        "flag": {"type": "boolean"}, "doc": {"type": "json"}, "word": {"type": "string"},
        "n": {"type": "number"}, "zero_doc": {"type": "json"}, "zero_word": {"type": "string"}
    }}}}));
    let store = ready(&db, &before);
    run(
        &store,
        &before,
        create(
            "notes",
            "n1",
            json!({"flag": false, "doc": false, "word": "false", "n": 0, "zero_doc": 0, "zero_word": "0"}),
        ),
    )
    .expect("stored");
    let after = schema(json!({"entities": {"notes": {"fields": {
        "flag": {"type": "string"}, "doc": {"type": "string"}, "word": {"type": "number"},
        "n": {"type": "string"}, "zero_doc": {"type": "string"}, "zero_word": {"type": "number"}
    }}}}));
    let Err(StoreError::MigrationRefused(why)) = store.migrate(&after, false) else { panic!("refused") };
    assert_eq!(
        why,
        [
            "changing the type of notes.doc from json to string would reinterpret 1 stored values",
            "changing the type of notes.word from string to number would reinterpret 1 stored values",
        ],
        "a false boolean, a zero, a json 0 and the text \"0\" are empty; a json false and the text \"false\" are not"
    );
}

#[test]
fn a_text_with_u0000_is_refused_naming_its_field_and_nothing_is_written() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let refused = run(&store, &schema, create("lists", "l1", json!({"name": "a\u{0}b"})));
    let Err(StoreError::Unstorable(v)) = refused else { panic!("refused: {refused:?}") };
    assert_eq!(v.len(), 1);
    assert_eq!((v[0].code, v[0].field.as_deref()), (ErrorCode::InvalidString, Some("name")));
    assert_eq!(store.get_many(&schema, "lists", &["l1".into()]).expect("read").len(), 0);
    // Elsewhere (an OAuth client's name), PostgreSQL's refusal is the same error.
    let client = crate::OAuthClient {
        id: "c1".into(),
        name: "bad\u{0}name".into(),
        redirect_uris: vec![],
        used: "2026-09-21 14:00:00.000Z".into(),
    };
    let Err(StoreError::Unstorable(v)) = store.register_client(&client, 10) else { panic!("refused") };
    assert_eq!(v[0].code, ErrorCode::InvalidString);
}

#[test]
fn integers_are_kept_exactly_up_to_2_53_and_refused_beyond() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let written =
        run(&store, &schema, create("cards", "c1", json!({"points": 9_007_199_254_740_992_i64}))).expect("stored");
    assert_eq!(serde_json::to_string(&written.row["points"]).expect("text"), "9007199254740992");
    let beyond = run(&store, &schema, create("cards", "c2", json!({"points": 9_007_199_254_740_993_i64})));
    let Err(StoreError::Unstorable(v)) = beyond else { panic!("refused: {beyond:?}") };
    assert_eq!((v[0].code, v[0].field.as_deref()), (ErrorCode::InvalidNumber, Some("points")));
    assert_eq!(store.get_many(&schema, "cards", &["c2".into()]).expect("read").len(), 0);
}

#[test]
fn apps_in_other_schemas_of_the_database_are_not_heard() {
    let (mine, theirs) = (Database::new(), Database::new());
    let schema = board();
    let (a, b) = (ready(&mine, &schema), ready(&theirs, &schema));
    list(&a, &schema, "old", "Before the listener");
    let (_listener, heard) = listening(&a);
    list(&b, &schema, "theirs", "Another app");
    assert!(
        heard.recv_timeout(std::time::Duration::from_millis(500)).is_err(),
        "another app's write is not this app's news"
    );
    list(&a, &schema, "mine", "This app");
    assert_eq!(next_change(&heard).record["id"], json!("mine"));
    assert!(heard.recv_timeout(std::time::Duration::from_millis(300)).is_err());
}

#[test]
fn a_listener_started_before_the_migration_says_why_at_once() {
    let db = Database::new();
    let store = db.node();
    let started = std::time::Instant::now();
    let refused = store.listen(|_| {});
    let Err(StoreError::Internal(why)) = refused else { panic!("refused") };
    assert!(why.contains("_a2app_changes") && why.contains("42P01"), "{why}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn lookups_by_a_key_holding_u0000_find_nothing_as_on_sqlite() {
    let db = Database::new();
    let schema = schema(json!({"entities": {"users": {"fields": {
        "email": {"type": "string"}, "emailVisibility": {"type": "boolean"}
    }}}}));
    let store = ready(&db, &schema);
    let key = "a\u{0}b";
    assert_eq!(store.grant(key).expect("read"), None);
    assert_eq!(store.oauth_client(key).expect("read"), None);
    assert_eq!(store.credentials(&schema, key).expect("read"), None);
    assert_eq!(store.request(key).expect("read"), None);
    assert_eq!(store.surface(key).expect("read"), None);
    assert_eq!(store.job(key).expect("read"), None);
    assert_eq!(store.token_key(key).expect("read"), None);
    assert_eq!(store.auth_request(key).expect("read"), None);
    assert_eq!(store.get_many(&schema, "users", &[key.to_owned()]).expect("read"), Vec::<Row>::new());
}

#[test]
fn a_repeated_request_is_told_so_before_anything_else() {
    let db = Database::new();
    let schema = board();
    let store = ready(&db, &schema);
    let mut first = create("lists", "l1", json!({"name": "Keyed"}));
    first.key = Some("k".into());
    run(&store, &schema, first).expect("stored");
    let mut again = create("lists", "l2", json!({"name": "bad\u{0}"}));
    again.key = Some("k".into());
    let refused = run(&store, &schema, again);
    assert!(matches!(&refused, Err(StoreError::DuplicateRequest { id }) if id == "l1"), "{refused:?}");
}
#[test]
fn grant_asks_from_two_nodes_at_once_keep_the_pending_bounds() {
    use crate::GrantRoom;
    let db = Database::new();
    let schema = board();
    let (a, b) = (ready(&db, &schema), ready(&db, &schema));
    let rooms: Vec<GrantRoom> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..8)
            .map(|i| {
                let node = if i % 2 == 0 { &a } else { &b };
                s.spawn(move || {
                    let g = grant(&format!("g{i}"), "fp-same", None);
                    node.ask_grant(&g, LIMITS, &receipt("ask", &g.id), None).expect("judged")
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().expect("no panic")).collect()
    });
    assert_eq!(rooms.iter().filter(|r| **r == GrantRoom::Asked).count(), 2, "{rooms:?}");
    assert_eq!(rooms.iter().filter(|r| **r == GrantRoom::KeyFull).count(), 6, "{rooms:?}");
    assert_eq!(a.grants(None, 10).expect("read").len(), 2);
}
