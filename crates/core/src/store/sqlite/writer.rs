//! The single writer: one thread owns the write connection and commits in groups.
//!
//! The jobs waiting when a transaction starts share it, and one COMMIT (one
//! fsync of the WAL) makes them all durable. A job's answer is released only
//! after that COMMIT returned, so an acknowledged write survives a crash.
//!
//! Jobs run back to back without savepoints: a savepoint per job made SQLite
//! copy every page a job touched that an earlier job had already dirtied (a
//! tenth of the writer's time, profiled). A job that fails without changing a
//! row (a used key, a missing ref, a duplicate id: the common failures, caught
//! before or by an aborted statement) leaves the transaction as it was. One
//! that fails after changing rows (a read-back mismatch, a rule refusing the
//! stored record) or that may change the schema rolls the whole transaction
//! back; the jobs that had succeeded before it are run again, so a failing
//! write never disturbs its neighbours. Jobs are therefore re-runnable.

use rusqlite::Connection;
use std::sync::mpsc;
use std::thread;

/// One queued write.
pub trait Job: Send {
    /// Runs the job's statements in the open transaction; false when it
    /// failed. May run again after a rollback, against the same state.
    fn run(&mut self, conn: &Connection) -> bool;

    /// Whether the job may change the schema: DDL is not counted as a row
    /// change, so such a job's failure always rolls back.
    fn changes_schema(&self) -> bool {
        false
    }

    /// Called once, after the group's COMMIT, with whether it succeeded.
    fn finish(self: Box<Self>, committed: bool);
}

/// How many queued jobs one transaction may take.
const MAX_GROUP: usize = 128;

#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Box<dyn Job>>,
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub fn start(conn: Connection) -> Writer {
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
        let spawned = thread::Builder::new().name("a2app-writer".into()).spawn(move || run(conn, rx));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the writer thread");
        }
        Writer { tx }
    }

    /// Queues a job. When the writer is gone the job is dropped unrun, and
    /// with it the sender its caller waits on.
    pub fn submit(&self, job: Box<dyn Job>) {
        let _ = self.tx.send(job);
    }
}

fn run(conn: Connection, rx: mpsc::Receiver<Box<dyn Job>>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        commit_group(&conn, group);
    }
}

/// Runs `group` in one transaction and finishes every job: the kept ones
/// with the COMMIT's outcome, the failed ones as not committed.
pub fn commit_group(conn: &Connection, group: Vec<Box<dyn Job>>) {
    let mut kept: Vec<Box<dyn Job>> = Vec::with_capacity(group.len());
    let mut failed: Vec<Box<dyn Job>> = Vec::new();
    if let Err(e) = control(conn, "BEGIN IMMEDIATE") {
        tracing::error!(error = %e, "cannot begin a write transaction");
        group.into_iter().for_each(|job| job.finish(false));
        return;
    }
    for mut job in group {
        let before = conn.total_changes();
        if job.run(conn) {
            kept.push(job);
            continue;
        }
        let untouched = conn.total_changes() == before && !job.changes_schema();
        failed.push(job);
        if !untouched && !redo(conn, &mut kept, &mut failed) {
            kept.into_iter().chain(failed).for_each(|job| job.finish(false));
            return;
        }
    }
    let committed = match control(conn, "COMMIT") {
        Ok(()) => true,
        Err(e) => {
            tracing::error!(error = %e, "commit failed");
            let _ = control(conn, "ROLLBACK");
            false
        }
    };
    // A failed job wrote nothing that stays: its answer is its error.
    failed.into_iter().for_each(|job| job.finish(false));
    kept.into_iter().for_each(|job| job.finish(committed));
}

/// Runs a transaction-control statement through the connection's statement
/// cache: `execute_batch` would parse it again for every group.
fn control(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// After a job failed with rows changed: rolls the transaction back and runs
/// the kept jobs again in a new one. A kept job that now fails moves to
/// `failed` and the redo starts over (each pass removes one job, so this
/// ends). False when no transaction could be opened.
fn redo(conn: &Connection, kept: &mut Vec<Box<dyn Job>>, failed: &mut Vec<Box<dyn Job>>) -> bool {
    loop {
        if let Err(e) = control(conn, "ROLLBACK").and_then(|()| control(conn, "BEGIN IMMEDIATE")) {
            tracing::error!(error = %e, "cannot restart a write transaction");
            return false;
        }
        let mut again = Vec::with_capacity(kept.len());
        let mut clean = true;
        for mut job in kept.drain(..) {
            if clean && job.run(conn) {
                again.push(job);
            } else if clean {
                clean = false;
                failed.push(job);
            } else {
                again.push(job);
            }
        }
        *kept = again;
        if clean {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A job inserting `value` into `t`, then failing when `fail` says so.
    struct Insert {
        value: i64,
        fail: Fail,
        runs: Arc<Mutex<Vec<(i64, usize)>>>,
        finished: Arc<Mutex<Vec<(i64, bool)>>>,
        count: usize,
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Fail {
        Never,
        /// Before changing anything (like a used Idempotency-Key).
        Early,
        /// After its INSERT (like a read-back mismatch).
        Late,
    }

    impl Job for Insert {
        fn run(&mut self, conn: &Connection) -> bool {
            self.count += 1;
            self.runs.lock().unwrap_or_else(|e| e.into_inner()).push((self.value, self.count));
            if self.fail == Fail::Early {
                return false;
            }
            if conn.execute("INSERT INTO t (v) VALUES (?1)", [self.value]).is_err() {
                return false;
            }
            self.fail != Fail::Late
        }

        fn finish(self: Box<Self>, committed: bool) {
            self.finished.lock().unwrap_or_else(|e| e.into_inner()).push((self.value, committed));
        }
    }

    /// What committing one group of `Insert` jobs left behind.
    struct Outcome {
        /// The values in `t` afterwards.
        stored: Vec<i64>,
        /// Each run as (value, nth run of that job).
        runs: Vec<(i64, usize)>,
        /// Each finish as (value, committed).
        finished: Vec<(i64, bool)>,
    }

    fn take<T>(log: &Mutex<Vec<T>>) -> Vec<T> {
        std::mem::take(&mut *log.lock().expect("log"))
    }

    /// Runs `specs` as one group through `commit_group` on a fresh database.
    fn commit(specs: &[(i64, Fail)]) -> Outcome {
        let conn = Connection::open_in_memory().expect("database");
        conn.execute_batch("CREATE TABLE t (v INTEGER UNIQUE)").expect("table");
        let runs = Arc::new(Mutex::new(Vec::new()));
        let finished = Arc::new(Mutex::new(Vec::new()));
        let jobs = specs
            .iter()
            .map(|&(value, fail)| {
                Box::new(Insert { value, fail, runs: Arc::clone(&runs), finished: Arc::clone(&finished), count: 0 })
                    as Box<dyn Job>
            })
            .collect();
        commit_group(&conn, jobs);
        let mut stmt = conn.prepare("SELECT v FROM t ORDER BY v").expect("select");
        let stored = stmt.query_map([], |r| r.get(0)).expect("rows").collect::<Result<_, _>>().expect("values");
        Outcome { stored, runs: take(&runs), finished: take(&finished) }
    }

    #[test]
    fn a_group_commits_once_and_runs_each_job_once() {
        let out = commit(&[(1, Fail::Never), (2, Fail::Never), (3, Fail::Never)]);
        assert_eq!(out.stored, vec![1, 2, 3]);
        assert_eq!(out.runs, vec![(1, 1), (2, 1), (3, 1)]);
        assert_eq!(out.finished, vec![(1, true), (2, true), (3, true)]);
    }

    #[test]
    fn a_failure_without_changes_disturbs_nobody_and_redoes_nothing() {
        let out = commit(&[(1, Fail::Never), (2, Fail::Early), (3, Fail::Never)]);
        assert_eq!(out.stored, vec![1, 3]);
        assert_eq!(out.runs, vec![(1, 1), (2, 1), (3, 1)]);
        assert_eq!(out.finished, vec![(2, false), (1, true), (3, true)]);
    }

    #[test]
    fn an_aborted_statement_counts_as_no_change() {
        // The second 1 breaks the UNIQUE constraint: its INSERT aborts, changing nothing.
        let out = commit(&[(1, Fail::Never), (1, Fail::Never), (3, Fail::Never)]);
        assert_eq!(out.stored, vec![1, 3]);
        assert_eq!(out.runs.len(), 3, "no redo");
        assert_eq!(out.finished, vec![(1, false), (1, true), (3, true)]);
    }

    #[test]
    fn a_failure_after_changes_rolls_back_and_redoes_only_its_predecessors() {
        let out = commit(&[(1, Fail::Never), (2, Fail::Never), (3, Fail::Late), (4, Fail::Never), (5, Fail::Late)]);
        assert_eq!(out.stored, vec![1, 2, 4], "nothing of the failed jobs stays");
        assert_eq!(out.runs, vec![(1, 1), (2, 1), (3, 1), (1, 2), (2, 2), (4, 1), (5, 1), (1, 3), (2, 3), (4, 2)]);
        assert_eq!(out.finished, vec![(3, false), (5, false), (1, true), (2, true), (4, true)]);
    }
}
