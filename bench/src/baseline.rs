//! The physical limit of a durable single-row commit on this disk: raw SQLite
//! (rusqlite, WAL, `synchronous = FULL`), one transaction per inserted row,
//! one thread, a card-shaped row. Our create rate is reported as a fraction
//! of it (group commit can take it above 1).

use crate::dataset;
use anyhow::Result;
use std::path::Path;
use std::time::{Duration, Instant};

/// What raw SQLite does on this disk.
pub struct Baseline {
    /// Single-row commits per second, back to back.
    pub rate: f64,
    /// The median time of one single-row commit made after [`IDLE_GAP`] of idle,
    /// the spacing of the fan-out workload's creates: the durable commit
    /// inside every fan-out sample of ours.
    pub idle_commit: Duration,
}

/// Commits after idle, for [`Baseline::idle_commit`].
pub const IDLE_COMMITS: u64 = 40;
/// The fan-out's spacing, so the idle commit is the one each fan-out sample pays.
const IDLE_GAP: Duration = crate::fanout::SPACING;

/// Inserts rows one commit at a time for `duration`, then [`IDLE_COMMITS`]
/// more each after [`IDLE_GAP`] of idle.
pub fn single_row_commits(dir: &Path, duration: Duration) -> Result<Baseline> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("raw.db");
    let _ = std::fs::remove_file(&path);
    let db = rusqlite::Connection::open(&path)?;
    let _mode: String = db.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    db.execute_batch(
        "PRAGMA synchronous = FULL;
         CREATE TABLE cards (id TEXT PRIMARY KEY NOT NULL, title TEXT NOT NULL, list TEXT NOT NULL,
                             priority TEXT NOT NULL, labels TEXT NOT NULL, created TEXT NOT NULL);
         CREATE INDEX cards_list ON cards (list);
         CREATE INDEX cards_created ON cards (created);",
    )?;
    let mut stmt =
        db.prepare("INSERT INTO cards (id, title, list, priority, labels, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
    let mut commit = |n: u64| -> Result<()> {
        let card = dataset::card(n);
        let text = |k: &str| card.get(k).map(|v| v.to_string()).unwrap_or_default();
        db.execute_batch("BEGIN IMMEDIATE")?;
        stmt.execute(rusqlite::params![
            dataset::card_id(n),
            text("title"),
            text("list"),
            text("priority"),
            text("labels"),
            a2app_core::datetime::format(jiff::Timestamp::now()),
        ])?;
        db.execute_batch("COMMIT")?;
        Ok(())
    };
    let started = Instant::now();
    let mut rows = 0u64;
    while started.elapsed() < duration {
        commit(rows)?;
        rows += 1;
    }
    let rate = rows as f64 / started.elapsed().as_secs_f64();
    let mut idle = Vec::new();
    for n in rows..rows + IDLE_COMMITS {
        std::thread::sleep(IDLE_GAP);
        let t = Instant::now();
        commit(n)?;
        idle.push(t.elapsed());
    }
    drop(stmt);
    drop(db);
    let _ = std::fs::remove_file(&path);
    Ok(Baseline { rate, idle_commit: crate::load::quantile(&idle, 0.5) })
}
