//! The single writer: one write connection, committed in groups by its own
//! thread, or by the caller of an isolated write (see `Writer::run_here`);
//! whoever commits holds the connection, so groups commit one at a time.
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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::thread;
use std::time::{Duration, Instant};
use tokio::runtime::{Handle, RuntimeFlavor};

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

/// How long the writer must have been idle for a write to run on its caller's
/// thread. Under load groups follow each other within a fraction of this, so
/// every write there joins a group on the writer thread.
const IDLE: Duration = Duration::from_millis(1);

#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Box<dyn Job>>,
    shared: Arc<Shared>,
}

/// What the writer thread and an isolated write's caller share.
struct Shared {
    /// The write connection: held by whoever commits a group.
    conn: Mutex<Connection>,
    /// Jobs sent to the writer thread and not yet taken into a group.
    queued: AtomicUsize,
    /// When the last group ended, in microseconds since `epoch`.
    last_commit: AtomicU64,
    epoch: Instant,
}

impl Shared {
    /// The connection, for the writer thread. Jobs do not panic (bad input
    /// is an error), but if one did while holding it, its transaction is
    /// rolled back here so that the next BEGIN finds none open.
    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.conn.lock().unwrap_or_else(|poisoned| {
            let conn = poisoned.into_inner();
            if !conn.is_autocommit()
                && let Err(e) = control(&conn, "ROLLBACK")
            {
                tracing::error!(error = %e, "cannot roll back after a panicked write");
            }
            self.conn.clear_poison();
            conn
        })
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Commits `group` on the calling thread, which holds `conn`.
    fn commit(&self, conn: &Connection, group: Vec<Box<dyn Job>>) {
        commit_group(conn, group);
        self.last_commit.store(self.now(), Ordering::Relaxed);
    }

    fn idle(&self) -> bool {
        let since = self.now().saturating_sub(self.last_commit.load(Ordering::Relaxed));
        u128::from(since) >= IDLE.as_micros()
    }
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub fn start(conn: Connection) -> Writer {
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
        let shared = Arc::new(Shared {
            conn: Mutex::new(conn),
            queued: AtomicUsize::new(0),
            last_commit: AtomicU64::new(0),
            epoch: Instant::now(),
        });
        let on_thread = Arc::clone(&shared);
        let spawned = thread::Builder::new().name("a2app-writer".into()).spawn(move || run(&on_thread, rx));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the writer thread");
        }
        Writer { tx, shared }
    }

    /// Commits a job: on the calling thread when the writer is idle (see
    /// [`Self::run_here`]), else queued for the writer thread's next group.
    /// When the writer thread is gone a queued job is dropped unrun, and with
    /// it the sender its caller waits on.
    pub fn submit(&self, job: Box<dyn Job>) {
        let Some(job) = self.run_here(job) else { return };
        self.shared.queued.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(job).is_err() {
            self.shared.queued.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// An isolated write (nothing queued, no group for [`IDLE`]) commits as a
    /// group of one on the caller's thread: handing it to the sleeping writer
    /// thread cost a wake-up and a cold start there, 4 to 11 % of such a
    /// write's latency (measured; see docs/decisions/0010). The job is handed
    /// back when the writer is busy, or when the caller is the only thread of
    /// its runtime, which must not wait on a disk sync. On a runtime worker
    /// the wait runs in `block_in_place`, so the worker's other tasks move to
    /// another thread.
    fn run_here(&self, job: Box<dyn Job>) -> Option<Box<dyn Job>> {
        let on_worker = match Handle::try_current() {
            Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => true,
            Ok(_) => return Some(job),
            Err(_) => false,
        };
        if self.shared.queued.load(Ordering::SeqCst) != 0 || !self.shared.idle() {
            return Some(job);
        }
        let Ok(conn) = self.shared.conn.try_lock() else { return Some(job) };
        if on_worker {
            tokio::task::block_in_place(|| self.shared.commit(&conn, vec![job]));
        } else {
            self.shared.commit(&conn, vec![job]);
        }
        None
    }
}

fn run(shared: &Shared, rx: mpsc::Receiver<Box<dyn Job>>) {
    while let Ok(first) = rx.recv() {
        // Waits here while a caller commits an isolated write.
        let conn = shared.lock();
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        // Only now: until the queued jobs are in a group, no caller arriving
        // after they were counted commits ahead of them.
        shared.queued.fetch_sub(group.len(), Ordering::SeqCst);
        shared.commit(&conn, group);
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

    /// A job that notes the thread it ran on, optionally first saying so on
    /// `started` and waiting for `gate`, and reports its commit on `done`.
    struct Probe {
        value: i64,
        started: Option<mpsc::Sender<()>>,
        gate: Option<mpsc::Receiver<()>>,
        ran_on: Option<String>,
        done: mpsc::Sender<(i64, String, bool)>,
    }

    impl Job for Probe {
        fn run(&mut self, conn: &Connection) -> bool {
            if let Some(started) = &self.started {
                let _ = started.send(());
            }
            if let Some(gate) = &self.gate
                && gate.recv_timeout(Duration::from_secs(10)).is_err()
            {
                return false;
            }
            self.ran_on = Some(thread::current().name().unwrap_or("").to_owned());
            conn.execute("INSERT INTO t (v) VALUES (?1)", [self.value]).is_ok()
        }

        fn finish(self: Box<Self>, committed: bool) {
            let _ = self.done.send((self.value, self.ran_on.unwrap_or_default(), committed));
        }
    }

    fn probe(value: i64, done: &mpsc::Sender<(i64, String, bool)>) -> Box<Probe> {
        Box::new(Probe { value, started: None, gate: None, ran_on: None, done: done.clone() })
    }

    /// A probe that waits for the returned gate to open, and says on the
    /// returned receiver when it has started (holding the connection).
    fn gated(
        value: i64,
        done: &mpsc::Sender<(i64, String, bool)>,
    ) -> (Box<Probe>, mpsc::Sender<()>, mpsc::Receiver<()>) {
        let (open, gate) = mpsc::channel();
        let (started, running) = mpsc::channel();
        let job = Probe { value, started: Some(started), gate: Some(gate), ran_on: None, done: done.clone() };
        (Box::new(job), open, running)
    }

    /// Asserts that the next probe to finish is probe 1, committed on `thread`.
    fn assert_committed_on(results: &mpsc::Receiver<(i64, String, bool)>, thread: &str) {
        assert_eq!(results.recv_timeout(Duration::from_secs(10)), Ok((1, thread.to_owned(), true)));
    }

    /// A writer on a fresh database, idle long enough for a write to run on
    /// its caller's thread.
    fn idle_writer() -> Writer {
        let conn = Connection::open_in_memory().expect("database");
        conn.execute_batch("CREATE TABLE t (v INTEGER UNIQUE)").expect("table");
        let writer = Writer::start(conn);
        thread::sleep(IDLE * 3);
        writer
    }

    /// Submits `job` from a thread named `caller`, the name an inline commit reports.
    fn submit_from_caller(writer: &Writer, job: Box<dyn Job>) -> thread::JoinHandle<()> {
        let writer = writer.clone();
        thread::Builder::new().name("caller".into()).spawn(move || writer.submit(job)).expect("thread")
    }

    fn stored(writer: &Writer) -> Vec<i64> {
        let conn = writer.shared.lock();
        let mut stmt = conn.prepare("SELECT v FROM t ORDER BY v").expect("select");
        stmt.query_map([], |r| r.get(0)).expect("rows").collect::<Result<_, _>>().expect("values")
    }

    #[test]
    fn an_isolated_write_commits_on_its_callers_thread() {
        let writer = idle_writer();
        let (done, results) = mpsc::channel();
        submit_from_caller(&writer, probe(1, &done)).join().expect("caller");
        assert_committed_on(&results, "caller");
        assert_eq!(stored(&writer), vec![1]);
    }

    #[test]
    fn a_write_after_a_recent_group_joins_the_writer_thread() {
        let writer = idle_writer();
        // The last group ended "now": the writer is busy, as under load.
        writer.shared.last_commit.store(u64::MAX / 2, Ordering::Relaxed);
        let (done, results) = mpsc::channel();
        writer.submit(probe(1, &done));
        assert_committed_on(&results, "a2app-writer");
    }

    #[test]
    fn writes_arriving_during_an_isolated_commit_wait_and_follow_it() {
        let writer = idle_writer();
        let (done, results) = mpsc::channel();
        let (first, open, running) = gated(1, &done);
        let caller = submit_from_caller(&writer, first);
        // The first write holds the connection until the gate opens.
        running.recv_timeout(Duration::from_secs(10)).expect("the first write started");
        writer.submit(probe(2, &done));
        writer.submit(probe(3, &done));
        assert_eq!(writer.shared.queued.load(Ordering::SeqCst), 2, "both wait for the writer thread");
        open.send(()).expect("gate");
        caller.join().expect("caller");
        let got: Vec<_> = (0..3).map(|_| results.recv_timeout(Duration::from_secs(10)).expect("finished")).collect();
        assert_eq!(
            got,
            vec![(1, "caller".into(), true), (2, "a2app-writer".into(), true), (3, "a2app-writer".into(), true)]
        );
        assert_eq!(stored(&writer), vec![1, 2, 3]);
    }

    #[test]
    fn a_single_threaded_runtime_hands_every_write_to_the_writer_thread() {
        let writer = idle_writer();
        let (done, results) = mpsc::channel();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async { writer.submit(probe(1, &done)) });
        assert_committed_on(&results, "a2app-writer");
    }

    #[test]
    fn on_a_runtime_worker_other_tasks_run_while_an_isolated_write_waits() {
        let writer = idle_writer();
        let (done, results) = mpsc::channel();
        let (job, open, _running) = gated(1, &done);
        // One worker: had the write blocked it, the task opening the gate
        // could never run, and the job would fail after its timeout.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("worker")
            .build()
            .expect("runtime");
        let watched = writer.clone();
        let submitted = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = Arc::clone(&submitted);
        runtime.block_on(async {
            let opener = tokio::spawn(async move {
                // Opens the gate once the write holds the connection (or
                // has given up waiting for it).
                while watched.shared.conn.try_lock().is_ok() && !seen.load(Ordering::SeqCst) {
                    tokio::task::yield_now().await;
                }
                let _ = open.send(());
            });
            tokio::spawn(async move {
                writer.submit(job);
                submitted.store(true, Ordering::SeqCst);
            })
            .await
            .expect("submitting task");
            opener.await.expect("opener");
        });
        assert_committed_on(&results, "worker");
    }
}
