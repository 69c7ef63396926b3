//! Realtime fan-out: N subscribers on `cards/*` through PocketBase's realtime
//! protocol (`GET /api/realtime`, the `PB_CONNECT` event, `POST /api/realtime`
//! with the subscriptions), then one create at a time; the sample is the time
//! from sending the create to the moment the last subscriber saw it.
//!
//! The subscribers' side is kept light, since it shares the machine with the
//! server under test: each reads only the record id out of an event and counts
//! itself in a shared tally; only the last one wakes the timing task.

use crate::dataset::Rng;
use crate::http1::{Conn, Framing, Request};
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};

/// The pause between two timed one-at-a-time creates (and between the raw
/// SQLite idle commits it is compared with, in `baseline`).
pub const SPACING: Duration = Duration::from_millis(20);

/// The create being timed and who has seen it so far.
#[derive(Default)]
struct Tally {
    id: String,
    seen: usize,
    first: Option<Instant>,
    last: Option<Instant>,
}

/// When the subscribers saw one timed create, counted from sending it.
#[derive(Debug, Clone, Copy)]
pub struct Arrivals {
    /// The first subscriber.
    pub first: Duration,
    /// The last one: the fan-out's sample.
    pub last: Duration,
}

struct Shared {
    tally: Mutex<Tally>,
    count: usize,
    all_seen: Notify,
    /// Events received by all subscribers together, since they subscribed.
    events: AtomicU64,
}

impl Shared {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Connected subscribers; dropping this closes every stream.
pub struct Subscribers {
    /// Ends the subscribers' thread (dropping it does too).
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    shared: Arc<Shared>,
    failed: mpsc::UnboundedReceiver<anyhow::Error>,
    /// The connection the timed creates go through.
    writes: Conn,
}

/// How long connecting, subscribing or one fan-out may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);

/// Opens `count` realtime streams on `url` and subscribes each to `cards/*`.
pub async fn subscribe(client: &reqwest::Client, url: &str, count: usize) -> Result<Subscribers> {
    let shared =
        Arc::new(Shared { tally: Mutex::default(), count, all_seen: Notify::new(), events: AtomicU64::new(0) });
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<Result<()>>();
    let (failed_tx, failed) = mpsc::unbounded_channel();
    // The subscribers run on their own thread, on a single-threaded runtime:
    // a burst of a hundred arrivals is read by one thread in turn, with no
    // worker handing tasks to another (in a multi-threaded runtime the
    // workers' wake-ups cost the load generator a fifth of its time here).
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (client, url_owned, tally) = (client.clone(), url.to_owned(), Arc::clone(&shared));
    let thread = std::thread::Builder::new().name("subscribers".into()).spawn(move || {
        runtime.block_on(async move {
            let mut readers = tokio::task::JoinSet::new();
            for _ in 0..count {
                let (client, url, shared, ready, failed) =
                    (client.clone(), url_owned.clone(), Arc::clone(&tally), ready_tx.clone(), failed_tx.clone());
                readers.spawn(async move {
                    if let Err(e) = listen(&client, &url, &shared, &ready).await {
                        let _ = ready.send(Err(anyhow::anyhow!("{e:#}")));
                        let _ = failed.send(e);
                    }
                });
            }
            // Until `close` (or the `Subscribers` are dropped).
            let _ = stopped.await;
            readers.abort_all();
            while readers.join_next().await.is_some() {}
        });
    })?;
    for _ in 0..count {
        match tokio::time::timeout(STEP_TIMEOUT, ready_rx.recv()).await {
            Ok(Some(Ok(()))) => {}
            Ok(Some(Err(e))) => return Err(e.context("a realtime subscriber failed to connect")),
            Ok(None) | Err(_) => bail!("realtime subscribers did not all connect within {STEP_TIMEOUT:?}"),
        }
    }
    let writes = Conn::open(url).await?;
    Ok(Subscribers { stop: Some(stop), thread: Some(thread), shared, failed, writes })
}

/// One subscriber: connect, subscribe, then count itself in for every create
/// being timed. An event is matched on its bytes: the one being timed holds
/// `"id":"<its id>"` (both servers write compact JSON), so no event is
/// decoded on the load generator's side.
async fn listen(
    client: &reqwest::Client,
    url: &str,
    shared: &Shared,
    ready: &mpsc::UnboundedSender<Result<()>>,
) -> Result<()> {
    let mut stream = EventStream::open(url).await?;
    let mut buffer = Vec::with_capacity(4096);
    let mut subscribed = false;
    // The create being matched and its needle, and the last id this
    // subscriber counted (a repeated event must not count twice).
    let (mut wanted, mut needle) = (String::new(), Vec::new());
    let mut counted = String::new();
    loop {
        let mut consumed = 0;
        while let Some(len) = memchr::memmem::find(&buffer[consumed..], b"\n\n") {
            let frame = &buffer[consumed..consumed + len + 2];
            consumed += len + 2;
            if !subscribed {
                let (event, data) = parse_frame(&String::from_utf8_lossy(frame));
                if event == "PB_CONNECT" {
                    let data: Value = serde_json::from_str(&data).context("PB_CONNECT data is not JSON")?;
                    let id = data["clientId"].as_str().context("PB_CONNECT without a clientId")?;
                    let body = json!({ "clientId": id, "subscriptions": ["cards/*"] });
                    let answer = client.post(format!("{url}/api/realtime")).json(&body).send().await?;
                    if !answer.status().is_success() {
                        bail!("POST /api/realtime answered {}", answer.status());
                    }
                    subscribed = true;
                    let _ = ready.send(Ok(()));
                }
                continue;
            }
            if memchr::memmem::find(frame, b"data:").is_some() {
                shared.events.fetch_add(1, Ordering::Relaxed);
            }
            let at = Instant::now();
            let mut tally = shared.tally();
            if wanted != tally.id {
                wanted.clone_from(&tally.id);
                needle = format!("\"id\":\"{wanted}\"").into_bytes();
            }
            if !wanted.is_empty() && counted != wanted && memchr::memmem::find(frame, &needle).is_some() {
                counted.clone_from(&wanted);
                tally.seen += 1;
                if tally.seen == 1 {
                    tally.first = Some(at);
                }
                if tally.seen == shared.count {
                    tally.last = Some(at);
                    shared.all_seen.notify_one();
                }
            }
        }
        buffer.drain(..consumed);
        stream.next_body(&mut buffer).await?;
        // SSE allows CRLF line ends (neither server sends them). The whole
        // buffer is checked: a pair may straddle two reads.
        if memchr::memchr(b'\r', &buffer).is_some() {
            buffer = String::from_utf8_lossy(&buffer).replace("\r\n", "\n").into_bytes();
        }
    }
}

/// `GET /api/realtime` on a plain socket ([`crate::http1`]): a hundred of these
/// share the machine with the server under test, so each does one `read` per
/// arrival and no more.
struct EventStream {
    conn: Conn,
    chunked: bool,
}

impl EventStream {
    async fn open(url: &str) -> Result<EventStream> {
        let mut conn = Conn::open(url).await?;
        conn.write(&Request::get("/api/realtime".into()).header("Accept", "text/event-stream")).await?;
        let (status, framing) = conn.head().await?;
        if status != 200 {
            bail!("GET /api/realtime answered {status}");
        }
        Ok(EventStream { conn, chunked: framing == Framing::Chunked })
    }

    /// Appends the next piece of the response body (one chunk when chunked) to `out`.
    async fn next_body(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if !self.chunked {
            return self.conn.some(out).await;
        }
        if !self.conn.chunk(out).await? {
            bail!("the realtime stream ended");
        }
        Ok(())
    }
}

/// The event name and the joined data lines of one SSE frame.
fn parse_frame(frame: &str) -> (String, String) {
    let mut event = String::from("message");
    let mut data = Vec::new();
    for line in frame.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => event = value.to_owned(),
            "data" => data.push(value),
            _ => {}
        }
    }
    (event, data.join("\n"))
}

impl Subscribers {
    /// Creates one card (through `create`, which must send `id`) and returns
    /// when the first and the last subscriber saw it.
    pub async fn once(&mut self, create: &Request, id: &str) -> Result<Arrivals> {
        *self.shared.tally() = Tally { id: id.to_owned(), seen: 0, first: None, last: None };
        let sent = Instant::now();
        let (status, body) = tokio::time::timeout(STEP_TIMEOUT, self.writes.send(create))
            .await
            .context("the fan-out create timed out")?
            .context("the fan-out create failed")?;
        if !(200..300).contains(&status) {
            bail!("the fan-out create answered {status}: {}", String::from_utf8_lossy(&body));
        }
        let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
        loop {
            // The guard is dropped before the wait below.
            let (first, last) = {
                let tally = self.shared.tally();
                (tally.first, tally.last)
            };
            if let (Some(first), Some(last)) = (first, last) {
                return Ok(Arrivals { first: first.duration_since(sent), last: last.duration_since(sent) });
            }
            tokio::select! {
                _ = self.shared.all_seen.notified() => {}
                Some(e) = self.failed.recv() => return Err(e.context("a realtime subscriber stopped")),
                _ = tokio::time::sleep_until(deadline) => {
                    let seen = self.shared.tally().seen;
                    bail!("only {seen} of {} subscribers saw the create within {STEP_TIMEOUT:?}", self.shared.count)
                }
            }
        }
    }

    /// How many subscribers listen.
    pub fn count(&self) -> usize {
        self.shared.count
    }

    /// Events received by all subscribers together so far.
    pub fn events(&self) -> u64 {
        self.shared.events.load(Ordering::Relaxed)
    }

    /// Waits until the subscribers together received `expected` events, or
    /// for at most [`STEP_TIMEOUT`]; returns how many they received and when
    /// the count was last seen to grow.
    pub async fn drain(&mut self, expected: u64) -> (u64, Instant) {
        let deadline = Instant::now() + STEP_TIMEOUT;
        let (mut seen, mut at) = (self.events(), Instant::now());
        while seen < expected && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_micros(200)).await;
            let now = self.events();
            if now != seen {
                (seen, at) = (now, Instant::now());
            }
        }
        (seen, at)
    }

    /// Closes every stream.
    pub async fn close(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// A fresh id for a fan-out card (the create carries it, so the subscribers'
/// events can be matched before the create's answer arrives).
pub fn card_id(rng: &mut Rng) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::from("f");
    id.extend((0..14).map(|_| ALPHABET[rng.below(ALPHABET.len() as u64) as usize] as char));
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_parse_with_and_without_a_space() {
        assert_eq!(
            parse_frame("id:x\nevent:PB_CONNECT\ndata:{\"a\":1}\n\n"),
            ("PB_CONNECT".into(), "{\"a\":1}".into())
        );
        assert_eq!(parse_frame("event: cards/*\ndata: {}\n\n"), ("cards/*".into(), "{}".into()));
        assert_eq!(parse_frame(": keep-alive\n\n").0, "message");
    }
}
