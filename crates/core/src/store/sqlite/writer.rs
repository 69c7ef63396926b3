//! The single writer: one thread owns the write connection and commits in groups.
//!
//! Every write is a job run inside its own SAVEPOINT; the jobs waiting when a
//! transaction starts share it, and one COMMIT (one fsync of the WAL) makes
//! them all durable. A job's answer is released only after that COMMIT
//! returned, so an acknowledged write survives a crash. A failed job rolls
//! back to its savepoint and does not disturb its neighbours.

use rusqlite::Connection;
use std::sync::mpsc;
use std::thread;

/// Called after the group's COMMIT with whether it succeeded.
pub type Deferred = Box<dyn FnOnce(bool) + Send>;

/// A job reports whether its savepoint should be kept, and what to do after commit.
pub type Job = Box<dyn FnOnce(&Connection) -> (bool, Deferred) + Send>;

/// How many queued jobs one transaction may take.
const MAX_GROUP: usize = 128;

#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Job>,
}

impl Writer {
    /// Starts the writer thread on `conn`.
    pub fn start(conn: Connection) -> Writer {
        let (tx, rx) = mpsc::channel::<Job>();
        let spawned = thread::Builder::new().name("a2app-writer".into()).spawn(move || run(conn, rx));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the writer thread");
        }
        Writer { tx }
    }

    /// Queues a job. When the writer is gone the job is dropped unrun, and
    /// with it the sender its caller waits on.
    pub fn submit(&self, job: Job) {
        let _ = self.tx.send(job);
    }
}

fn run(conn: Connection, rx: mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        let mut deferred = Vec::with_capacity(group.len());
        if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
            tracing::error!(error = %e, "cannot begin a write transaction");
            // Run nothing; answer every job with a failure.
            for job in group {
                drop(job);
            }
            continue;
        }
        for job in group {
            if conn.execute_batch("SAVEPOINT job").is_err() {
                deferred.push(Box::new(|_| {}) as Deferred);
                continue;
            }
            let (keep, after) = job(&conn);
            let end = if keep { "RELEASE job" } else { "ROLLBACK TO job; RELEASE job" };
            if let Err(e) = conn.execute_batch(end) {
                tracing::error!(error = %e, "cannot close a savepoint");
            }
            deferred.push(after);
        }
        let committed = match conn.execute_batch("COMMIT") {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "commit failed");
                let _ = conn.execute_batch("ROLLBACK");
                false
            }
        };
        for after in deferred {
            after(committed);
        }
    }
}
