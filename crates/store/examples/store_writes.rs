//! Creates through each store's full write path (key, refs, read-back,
//! audit, receipt; on PostgreSQL also the change and its notification), from
//! many submitters at once, and prints the rate of each side by side:
//!
//! ```sh
//! cargo run --release -p a2app-store --example store_writes -- [writes] [submitters]
//! ```
//!
//! PostgreSQL is the one `A2APP_TEST_POSTGRES` names (else the local default
//! the tests use); the example works in a schema of its own and drops it.
//! A figure for judging the PostgreSQL store's shape (one writer thread per
//! node, one notification lock per database), not a target.

use a2app_store::postgres::PostgresStore;
use a2app_store::sqlite::SqliteStore;
use a2app_store::{Records, Store, Write, WriteKind, Written};
use protocol::schema::Schema;
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let writes: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(4000);
    let submitters: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(32);
    let schema: Arc<Schema> = Arc::new(serde_json::from_value(serde_json::json!({"entities": {
        "lists": {"label": "name", "fields": {"name": {"type": "string"}}},
        "cards": {"fields": {"title": {"type": "string"}, "list": {"type": "ref", "entity": "lists"}}}
    }}))?);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;

    let dir = tempfile::tempdir()?;
    let sqlite = SqliteStore::open(&dir.path().join("data.db"))?;
    Store::migrate(&sqlite, &schema, false)?;
    let sqlite_rate = runtime.block_on(drive(writes, submitters, |w| Records::write(&sqlite, &schema, w)))?;

    let url = std::env::var("A2APP_TEST_POSTGRES")
        .unwrap_or_else(|_| "host=127.0.0.1 port=5432 user=postgres dbname=postgres".to_owned());
    let config: postgres::Config = url.parse()?;
    let name = format!("a2app_bench_{}", std::process::id());
    config.connect(postgres::NoTls)?.batch_execute(&format!("CREATE SCHEMA {name}"))?;
    let outcome = (|| -> Result<f64, Box<dyn std::error::Error>> {
        let mut scoped = config.clone();
        scoped.options(&format!("-c search_path={name}"));
        let store = PostgresStore::open(scoped)?;
        store.migrate(&schema, false)?;
        runtime.block_on(drive(writes, submitters, |w| store.write(&schema, w)))
    })();
    config.connect(postgres::NoTls)?.batch_execute(&format!("DROP SCHEMA {name} CASCADE"))?;
    let postgres_rate = outcome?;

    println!("{writes} creates from {submitters} submitters, each through the store's full write path");
    println!("| store | creates/s |");
    println!("|---|---:|");
    println!("| SQLite (WAL, synchronous = FULL, group commit) | {sqlite_rate:.0} |");
    println!("| PostgreSQL (one writer thread, change + NOTIFY per write) | {postgres_rate:.0} |");
    println!("PostgreSQL / SQLite: {:.2}", postgres_rate / sqlite_rate);
    Ok(())
}

/// Runs `writes` creates (a list, then cards pointing at it, each with a key)
/// from `submitters` tasks; the rate, creates per second.
async fn drive(
    writes: usize,
    submitters: usize,
    write: impl Fn(Write) -> a2app_store::Pending<Written> + Sync,
) -> Result<f64, Box<dyn std::error::Error>> {
    let create = |entity: &str, id: String, values: serde_json::Value, key: Option<String>| Write {
        entity: entity.into(),
        kind: WriteKind::Create { id },
        values: values.as_object().cloned().unwrap_or_default(),
        now: jiff::Timestamp::now(),
        key,
        agent: Some("bench".into()),
        caller: "agent".into(),
        labels_from: None,
        timezone: "UTC".into(),
        password_hash: None,
        rule: None,
        on_commit: None,
        modifiers: Vec::new(),
    };
    write(create("lists", "list0000000000".into(), serde_json::json!({"name": "Bench"}), None)).await??;
    let started = Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let each = |_: usize| async {
        loop {
            let n = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if n >= writes {
                return Ok::<_, Box<dyn std::error::Error>>(());
            }
            let values = serde_json::json!({"title": format!("Card {n}"), "list": "list0000000000"});
            write(create("cards", format!("c{n:014}"), values, Some(format!("key-{n}")))).await??;
        }
    };
    let all: Vec<_> = (0..submitters).map(each).collect();
    for outcome in futures_util::future::join_all(all).await {
        outcome?;
    }
    Ok(writes as f64 / started.elapsed().as_secs_f64())
}
