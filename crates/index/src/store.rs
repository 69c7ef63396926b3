//! The index's own SQLite file, beside the client's connections and never
//! mixed with them: one row per entry, and an FTS5 table over the
//! publisher's words for search. It holds only public documents; losing it
//! loses nothing a crawl cannot bring back, so it syncs less than the app
//! stores do.

use crate::Error;
use crate::card::Card;
use crate::entry::{Entry, Failures, Proof, Source};
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// Search weights of the columns: name, description, tools, examples.
const RANK: &str = "bm25(10.0, 4.0, 2.0, 1.0)";

pub struct Store {
    conn: Mutex<Connection>,
}

/// A search result: the entry and its rank (lower is better).
#[derive(Debug, Clone)]
pub struct Hit {
    pub entry: Entry,
    pub rank: f64,
}

impl Store {
    /// Opens (creating) the index at `path`.
    pub fn open(path: &Path) -> Result<Store, Error> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::Io(format!("{}: {e}", dir.display())))?;
        }
        Store::setup(Connection::open(path)?)
    }

    /// Opens the index at `path` only if there is one: a reader (search)
    /// never creates an empty index where a person has none.
    pub fn open_existing(path: &Path) -> Result<Option<Store>, Error> {
        if !path.exists() {
            return Ok(None);
        }
        Store::open(path).map(Some)
    }

    pub fn in_memory() -> Result<Store, Error> {
        Store::setup(Connection::open_in_memory()?)
    }

    fn setup(conn: Connection) -> Result<Store, Error> {
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             PRAGMA busy_timeout = 5000;
             CREATE TABLE IF NOT EXISTS entries (
                 id INTEGER PRIMARY KEY,
                 card_url TEXT NOT NULL UNIQUE,
                 origin TEXT NOT NULL,
                 card TEXT NOT NULL,
                 proof_source TEXT NOT NULL,
                 proof_catalog TEXT NOT NULL,
                 checked_at INTEGER NOT NULL,
                 indexed_at INTEGER NOT NULL,
                 failures INTEGER NOT NULL DEFAULT 0,
                 failing_since INTEGER,
                 last_error TEXT
             );
             CREATE VIRTUAL TABLE IF NOT EXISTS entries_text USING fts5(
                 name, description, tools, examples, tokenize = 'unicode61 remove_diacritics 2',
                 prefix = '2 3 4 5 6'
             );
             INSERT INTO entries_text(entries_text, rank) VALUES ('rank', '{RANK}');"
        ))?;
        Ok(Store { conn: Mutex::new(conn) })
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic elsewhere while holding it left a connection, not a half write
        // (each write is one transaction): keep using it.
        self.conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds or replaces the entry of its card URL, its search text with it.
    pub fn put(&self, entry: &Entry) -> Result<(), Error> {
        self.put_all(std::slice::from_ref(entry))
    }

    /// [`Store::put`] for many entries, in one transaction.
    pub fn put_all(&self, entries: &[Entry]) -> Result<(), Error> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        for entry in entries {
            write(&tx, entry)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Records the failures of a check that could not reach the publisher.
    pub fn set_failures(&self, card_url: &str, failures: &Failures) -> Result<(), Error> {
        self.conn().execute(
            "UPDATE entries SET failures = ?2, failing_since = ?3, last_error = ?4 WHERE card_url = ?1",
            params![card_url, failures.count, failures.since, failures.last_error],
        )?;
        Ok(())
    }

    /// Removes the entry of `card_url`; true if there was one.
    pub fn remove(&self, card_url: &str) -> Result<bool, Error> {
        let mut conn = self.conn();
        let tx = conn.transaction()?;
        let id: Option<i64> =
            tx.query_row("SELECT id FROM entries WHERE card_url = ?1", [card_url], |r| r.get(0)).optional()?;
        if let Some(id) = id {
            tx.execute("DELETE FROM entries_text WHERE rowid = ?1", [id])?;
            tx.execute("DELETE FROM entries WHERE id = ?1", [id])?;
        }
        tx.commit()?;
        Ok(id.is_some())
    }

    pub fn get(&self, card_url: &str) -> Result<Option<Entry>, Error> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS}, 0.0 FROM entries e WHERE e.card_url = ?1"))?;
        let row = stmt.query_row([card_url], hit).optional()?;
        row.map(|r| r.map(|h| h.entry)).transpose()
    }

    /// Every entry, by card URL.
    pub fn all(&self) -> Result<Vec<Entry>, Error> {
        let conn = self.conn();
        let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS}, 0.0 FROM entries e ORDER BY e.card_url"))?;
        let rows = stmt.query_map([], hit)?;
        rows.map(|r| r?.map(|h| h.entry)).collect()
    }

    pub fn count(&self) -> Result<u64, Error> {
        let n: i64 = self.conn().query_row("SELECT count(*) FROM entries", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    /// The entries best matching the words of `query`: all of them, else
    /// (for several words) any of them; ranked by BM25 over the name, the
    /// description, the tools and the examples, in that order of weight.
    ///
    /// Kept fast at scale by two rules. A word in more than a twentieth of
    /// the entries (and more than [`COMMON`]) is left out when the query has
    /// rarer ones, as a stop word: it would rank almost nothing. And at most
    /// [`CANDIDATES`] matches are ranked: only a query of nothing but such
    /// words has more, and then any of them fits about as well.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, Error> {
        let terms = crate::search::terms(query);
        if terms.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let conn = self.conn();
        let entries: i64 = conn.query_row("SELECT coalesce(max(id), 0) FROM entries", [], |r| r.get(0))?;
        let common = COMMON.max(entries / 20);
        let mut rare = Vec::new();
        let last = terms.len() - 1;
        for (i, term) in terms.iter().enumerate() {
            // Counted only up to the line between rare and common: cheap
            // whatever the word.
            let mut stmt = conn.prepare_cached(
                "SELECT count(*) FROM (SELECT 1 FROM entries_text WHERE entries_text MATCH ?1 LIMIT ?2)",
            )?;
            let one = crate::search::expression(std::slice::from_ref(term), "");
            let one = if i == last { one } else { one.trim_end_matches('*').to_owned() };
            let docs: i64 = stmt.query_row(params![one, common + 1], |r| r.get(0))?;
            if docs <= common {
                rare.push(term.clone());
            }
        }
        let terms = if rare.is_empty() { terms } else { rare };
        let all = matching(&conn, &crate::search::expression(&terms, " AND "), limit)?;
        if !all.is_empty() || terms.len() == 1 {
            return Ok(all);
        }
        matching(&conn, &crate::search::expression(&terms, " OR "), limit)
    }
}

/// Above this many entries holding a word, it may be a stop word.
const COMMON: i64 = 1_000;
/// At most this many matches of a query are ranked.
const CANDIDATES: i64 = 2_000;

fn matching(conn: &Connection, expression: &str, limit: usize) -> Result<Vec<Hit>, Error> {
    // Ranked from the FTS table alone; only the best rows are joined.
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS}, t.rank FROM
             (SELECT rowid, rank FROM
                 (SELECT rowid, rank FROM entries_text WHERE entries_text MATCH ?1 LIMIT {CANDIDATES})
              ORDER BY rank LIMIT ?2) t
         JOIN entries e ON e.id = t.rowid ORDER BY t.rank"
    ))?;
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let rows = stmt.query_map(params![expression, limit], hit)?;
    rows.map(|r| r?).collect()
}

fn write(tx: &rusqlite::Transaction<'_>, entry: &Entry) -> Result<(), Error> {
    let card = serde_json::to_string(&entry.card).map_err(|e| Error::Io(e.to_string()))?;
    let id: i64 = tx.query_row(
        "INSERT INTO entries (card_url, origin, card, proof_source, proof_catalog, checked_at, indexed_at,
                              failures, failing_since, last_error)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (card_url) DO UPDATE SET origin = ?2, card = ?3, proof_source = ?4, proof_catalog = ?5,
             checked_at = ?6, failures = ?8, failing_since = ?9, last_error = ?10
         RETURNING id",
        params![
            entry.card_url,
            entry.origin,
            card,
            entry.proof.source.as_str(),
            entry.proof.catalog,
            entry.proof.checked_at,
            entry.indexed_at,
            entry.failures.count,
            entry.failures.since,
            entry.failures.last_error,
        ],
        |row| row.get(0),
    )?;
    tx.execute("DELETE FROM entries_text WHERE rowid = ?1", [id])?;
    let [name, description, tools, examples] = text_of(&entry.card);
    tx.execute(
        "INSERT INTO entries_text (rowid, name, description, tools, examples) VALUES (?1, ?2, ?3, ?4, ?5)",
        params![id, name, description, tools, examples],
    )?;
    Ok(())
}

const COLUMNS: &str = "e.card_url, e.origin, e.card, e.proof_source, e.proof_catalog, e.checked_at, e.indexed_at, \
                       e.failures, e.failing_since, e.last_error";

/// A row as an entry; a row this code cannot read (written by another
/// version) is an error of its own, not a panic.
fn hit(row: &rusqlite::Row<'_>) -> rusqlite::Result<Result<Hit, Error>> {
    let card: String = row.get(2)?;
    let source: String = row.get(3)?;
    let entry = |card: Card, source: Source| -> rusqlite::Result<Entry> {
        Ok(Entry {
            card_url: row.get(0)?,
            origin: row.get(1)?,
            card,
            proof: Proof { source, catalog: row.get(4)?, checked_at: row.get(5)? },
            indexed_at: row.get(6)?,
            failures: Failures { count: row.get(7)?, since: row.get(8)?, last_error: row.get(9)? },
        })
    };
    let rank: f64 = row.get(10)?;
    let card = match serde_json::from_str::<Card>(&card) {
        Ok(c) => c,
        Err(e) => return Ok(Err(Error::Corrupt(format!("entry card: {e}")))),
    };
    let Some(source) = Source::parse(&source) else {
        return Ok(Err(Error::Corrupt(format!("proof source {source}"))));
    };
    Ok(Ok(Hit { entry: entry(card, source)?, rank }))
}

/// The searchable text of a card, per column.
fn text_of(card: &Card) -> [String; 4] {
    let name = format!("{} {}", card.title.as_deref().unwrap_or_default(), card.name);
    let tools = card.tools.iter().map(|t| format!("{} {}", t.name, t.description)).collect::<Vec<_>>().join("\n");
    let examples = card
        .examples
        .iter()
        .map(|e| format!("{} {} {}", e.title, e.prompt, e.description.as_deref().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("\n");
    [name, card.description.clone(), tools, examples]
}
