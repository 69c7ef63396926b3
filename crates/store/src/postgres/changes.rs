//! The change feed across nodes (DESIGN section 8: realtime fan-out through
//! LISTEN/NOTIFY). Every committed record write is seen by every node's
//! listener, its own included, in commit order.
//!
//! A write stores its change (the record as stored, the deleted one for a
//! delete) in `_a2app_changes` and calls `pg_notify` with the change's
//! number, both in its own transaction: PostgreSQL delivers a notification
//! only when its transaction commits, and delivers them in commit order. The
//! record travels in the table, not in the notification, whose payload
//! PostgreSQL caps at 8000 bytes. The channel is the schema's own
//! (`a2app_changes_` and the MD5 of the schema's name), since notifications
//! reach the whole database and apps may share one in schemas of their own.
//!
//! A listener that lost its connection listens again and then reads the
//! changes stored since the ones it knows, skipping those it already
//! delivered (in number order: two writes committing together may then come
//! in the order they began). Changes are kept ten minutes, as long as a
//! listener may take to come back.

use super::Tx;
use super::{Fail, describe};
use crate::StoreError;
use crate::realtime::Action;
use postgres::NoTls;
use postgres::fallible_iterator::FallibleIterator;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The schema's channel, in SQL.
const CHANNEL_SQL: &str = "'a2app_changes_' || md5(current_schema())";
/// How long a change is kept for listeners catching up.
const KEEP: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);
/// How many changes a listener remembers, so a catch-up never delivers one
/// twice; a catch-up reads this far back from the newest it knows.
const REMEMBERED: usize = 4096;
/// How often a listener looks up from waiting, to see whether it should stop.
const TICK: Duration = Duration::from_millis(200);
/// A quiet listener asks its connection after this long, so one cut without
/// a word (a crashed server, a NAT's idle timeout) is noticed; the
/// connection's TCP settings (see `connection_config`) bound the answer's wait.
const PROBE: Duration = Duration::from_secs(5);

/// One committed change, as every node's listener receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredChange {
    /// Its number, in the order the writes stored their changes.
    pub seq: i64,
    pub action: Action,
    pub entity: String,
    pub record: Map<String, Value>,
}

/// The minute (of the app's clock) old changes were last purged.
static LAST_PURGE: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// Stores a write's change and announces it, in the write's transaction.
pub(super) fn record(
    tx: &mut Tx<'_>,
    now: jiff::Timestamp,
    action: &str,
    entity: &str,
    row: &Map<String, Value>,
) -> Result<(), Fail> {
    let minute = now.as_second() / 60;
    if LAST_PURGE.swap(minute, Ordering::Relaxed) != minute {
        let cutoff = a2app_definition::datetime::format(now.checked_sub(KEEP).unwrap_or(now));
        tx.execute("DELETE FROM _a2app_changes WHERE at < $1", &[&cutoff])?;
    }
    let record = serde_json::to_string(row).map_err(|e| StoreError::Internal(e.to_string()))?;
    let seq: i64 = tx
        .query_one(
            "INSERT INTO _a2app_changes (at, entity, action, record) VALUES ($1, $2, $3, $4) RETURNING seq",
            &[&a2app_definition::datetime::format(now), &entity, &action, &record],
        )?
        .get(0);
    tx.execute(&format!("SELECT pg_notify({CHANNEL_SQL}, $1)"), &[&seq.to_string()])?;
    Ok(())
}

/// A stored change; `None` for a row this version cannot read.
fn read(row: &postgres::Row) -> Option<StoredChange> {
    let action = match row.try_get::<_, &str>(2).ok()? {
        "create" => Action::Create,
        "update" => Action::Update,
        "delete" => Action::Delete,
        _ => return None,
    };
    let record = serde_json::from_str(row.try_get::<_, &str>(3).ok()?).ok()?;
    Some(StoredChange { seq: row.try_get(0).ok()?, entity: row.try_get(1).ok()?, action, record })
}

/// A running listener; dropping it stops it within a moment.
pub struct Listener {
    stop: Arc<AtomicBool>,
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Starts a thread that hands every committed change, on any node, to
/// `deliver`, from its own connection (LISTEN holds one for as long as it
/// runs). It returns once the thread listens, so no change committed after
/// it returned is missed; if the first attempt fails, with its reason.
pub(super) fn listen(
    config: postgres::Config,
    deliver: impl Fn(StoredChange) + Send + 'static,
) -> Result<Listener, StoreError> {
    // Named, so an operator tells it apart in `pg_stat_activity`.
    let mut config = config;
    let name = format!("{} change listener", config.get_application_name().unwrap_or("a2app"));
    config.application_name(&name);
    let stop = Arc::new(AtomicBool::new(false));
    let (ready, started) = std::sync::mpsc::channel::<Result<(), String>>();
    let flag = Arc::clone(&stop);
    std::thread::Builder::new()
        .name("a2app-pg-listener".into())
        .spawn(move || {
            let mut seen = Seen::default();
            let mut ready = Some(ready);
            while !flag.load(Ordering::Relaxed) {
                if let Err(e) = session(&config, &flag, &mut seen, &deliver, &mut ready) {
                    let e = describe(&e);
                    if let Some(tell) = ready.take() {
                        // The first attempt failed: `listen` answers with why, and this thread ends.
                        let _ = tell.send(Err(e));
                        return;
                    }
                    tracing::warn!("the PostgreSQL change listener lost its connection, listening again: {e}");
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
        })
        .map_err(|e| StoreError::Internal(format!("cannot start the change listener: {e}")))?;
    match started.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(())) => Ok(Listener { stop }),
        Ok(Err(why)) => Err(StoreError::Internal(format!("the change listener cannot listen: {why}"))),
        Err(_) => {
            stop.store(true, Ordering::Relaxed);
            Err(StoreError::Internal("the change listener did not start within 30 s".into()))
        }
    }
}

/// The changes a listener knows (delivered, or there before it first
/// listened), to skip on a catch-up.
#[derive(Default)]
struct Seen {
    set: BTreeSet<i64>,
    order: VecDeque<i64>,
    /// Whether it listened once already (then a session catches up).
    started: bool,
}

impl Seen {
    /// True the first time a change is offered.
    fn first(&mut self, seq: i64) -> bool {
        if !self.set.insert(seq) {
            return false;
        }
        self.order.push_back(seq);
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
        true
    }

    /// Where a catch-up reads from: far enough back from the newest change
    /// known to find one that committed after later-numbered ones.
    fn since(&self) -> i64 {
        self.set.last().map_or(0, |newest| newest - REMEMBERED as i64)
    }
}

/// One connection's life: LISTEN, catch up, then deliver as notified.
fn session(
    config: &postgres::Config,
    stop: &AtomicBool,
    seen: &mut Seen,
    deliver: &impl Fn(StoredChange),
    ready: &mut Option<std::sync::mpsc::Sender<Result<(), String>>>,
) -> Result<(), postgres::Error> {
    let mut client = config.connect(NoTls)?;
    let channel: String = client.query_one(&format!("SELECT {CHANNEL_SQL}"), &[])?.get(0);
    client.batch_execute(&format!("LISTEN {}", super::quote(&channel)))?;
    if seen.started {
        // Again after a lost connection: what was stored meanwhile.
        let missed = client.query(
            "SELECT seq, entity, action, record FROM _a2app_changes WHERE seq > $1 ORDER BY seq",
            &[&seen.since()],
        )?;
        for change in missed.iter().filter_map(read) {
            if seen.first(change.seq) {
                hand(deliver, change);
            }
        }
    } else {
        // The first time: the newest changes stored now are known, not news;
        // a change that commits from now on, whatever its number, is.
        let known = client.query(
            "SELECT seq FROM _a2app_changes WHERE seq > (SELECT COALESCE(max(seq), 0) FROM _a2app_changes) - $1",
            &[&(REMEMBERED as i64)],
        )?;
        for row in &known {
            seen.first(row.try_get(0)?);
        }
        seen.started = true;
    }
    if let Some(tell) = ready.take() {
        let _ = tell.send(Ok(()));
    }
    let mut probed = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let mut numbers = Vec::new();
        let waited = Instant::now();
        {
            // Waits for the first notification only (the waiting iterator
            // starts its time again at each one, so under steady writes it
            // would never end); then takes those already received.
            let mut notifications = client.notifications();
            let first = notifications.timeout_iter(TICK).next()?;
            if let Some(n) = first {
                numbers.extend(n.payload().parse::<i64>().ok());
                let mut received = notifications.iter();
                while numbers.len() < 256
                    && let Some(n) = received.next()?
                {
                    numbers.extend(n.payload().parse::<i64>().ok());
                }
            }
        }
        if numbers.is_empty() {
            // The wait ended early with nothing (the iterator cannot tell a
            // closed connection from a quiet moment), or it has been quiet a
            // while: ask. A dead connection fails with the reason, and the
            // caller listens again.
            if waited.elapsed() < TICK / 2 || probed.elapsed() > PROBE {
                client.batch_execute("SELECT 1")?;
                probed = Instant::now();
            }
            continue;
        }
        probed = Instant::now();
        let rows =
            client.query("SELECT seq, entity, action, record FROM _a2app_changes WHERE seq = ANY($1)", &[&numbers])?;
        let mut found: Vec<StoredChange> = rows.iter().filter_map(read).collect();
        // In the order the notifications came: commit order.
        found.sort_by_key(|c| numbers.iter().position(|n| *n == c.seq));
        for change in found {
            if seen.first(change.seq) {
                hand(deliver, change);
            }
        }
    }
    Ok(())
}

/// Hands a change on; a receiver that panics loses that change, not the listener.
fn hand(deliver: &impl Fn(StoredChange), change: StoredChange) {
    let seq = change.seq;
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| deliver(change))).is_err() {
        tracing::error!(seq, "a change listener's receiver panicked; it goes on with the next change");
    }
}
