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
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc};

/// The create being timed and who has seen it so far.
#[derive(Default)]
struct Tally {
    id: String,
    seen: usize,
    last: Option<Instant>,
}

struct Shared {
    tally: Mutex<Tally>,
    count: usize,
    all_seen: Notify,
}

impl Shared {
    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Connected subscribers; dropping this closes every stream.
pub struct Subscribers {
    readers: tokio::task::JoinSet<()>,
    shared: Arc<Shared>,
    failed: mpsc::UnboundedReceiver<anyhow::Error>,
    /// The connection the timed creates go through.
    writes: Conn,
}

/// How long connecting, subscribing or one fan-out may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);

/// Opens `count` realtime streams on `url` and subscribes each to `cards/*`.
pub async fn subscribe(client: &reqwest::Client, url: &str, count: usize) -> Result<Subscribers> {
    let shared = Arc::new(Shared { tally: Mutex::default(), count, all_seen: Notify::new() });
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<Result<()>>();
    let (failed_tx, failed) = mpsc::unbounded_channel();
    let mut readers = tokio::task::JoinSet::new();
    for _ in 0..count {
        let (client, url, shared, ready, failed) =
            (client.clone(), url.to_owned(), Arc::clone(&shared), ready_tx.clone(), failed_tx.clone());
        readers.spawn(async move {
            if let Err(e) = listen(&client, &url, &shared, &ready).await {
                let _ = ready.send(Err(anyhow::anyhow!("{e:#}")));
                let _ = failed.send(e);
            }
        });
    }
    for _ in 0..count {
        match tokio::time::timeout(STEP_TIMEOUT, ready_rx.recv()).await {
            Ok(Some(Ok(()))) => {}
            Ok(Some(Err(e))) => return Err(e.context("a realtime subscriber failed to connect")),
            Ok(None) | Err(_) => bail!("realtime subscribers did not all connect within {STEP_TIMEOUT:?}"),
        }
    }
    let writes = Conn::open(url).await?;
    Ok(Subscribers { readers, shared, failed, writes })
}

/// The part of an event's data a subscriber reads: the record's id.
#[derive(Deserialize)]
struct EventData<'a> {
    #[serde(borrow)]
    record: RecordId<'a>,
}

#[derive(Deserialize)]
struct RecordId<'a> {
    #[serde(borrow)]
    id: Cow<'a, str>,
}

/// One subscriber: connect, subscribe, then count itself in for every create
/// being timed.
async fn listen(
    client: &reqwest::Client,
    url: &str,
    shared: &Shared,
    ready: &mpsc::UnboundedSender<Result<()>>,
) -> Result<()> {
    let mut stream = EventStream::open(url).await?;
    let mut buffer = String::new();
    let mut subscribed = false;
    // The last id this subscriber counted: a repeated event must not count twice.
    let mut counted = String::new();
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let (event, data) = parse_frame(&buffer[..end + 2]);
            if event == "PB_CONNECT" && !subscribed {
                let data: Value = serde_json::from_str(&data).context("PB_CONNECT data is not JSON")?;
                let id = data["clientId"].as_str().context("PB_CONNECT without a clientId")?;
                let body = json!({ "clientId": id, "subscriptions": ["cards/*"] });
                let answer = client.post(format!("{url}/api/realtime")).json(&body).send().await?;
                if !answer.status().is_success() {
                    bail!("POST /api/realtime answered {}", answer.status());
                }
                subscribed = true;
                let _ = ready.send(Ok(()));
            } else if event == "cards/*" {
                let at = Instant::now();
                let data: EventData<'_> = serde_json::from_str(&data).context("a realtime event is not JSON")?;
                let mut tally = shared.tally();
                if data.record.id == tally.id && counted != tally.id {
                    counted.clone_from(&tally.id);
                    tally.seen += 1;
                    if tally.seen == shared.count {
                        tally.last = Some(at);
                        shared.all_seen.notify_one();
                    }
                }
            }
            buffer.drain(..end + 2);
        }
        let body = stream.next_body().await?;
        let text = String::from_utf8_lossy(&body);
        if text.contains('\r') { buffer.push_str(&text.replace("\r\n", "\n")) } else { buffer.push_str(&text) }
    }
}

/// `GET /api/realtime` on a plain socket ([`http1`]): a hundred of these
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

    /// The next piece of the response body (one chunk when chunked).
    async fn next_body(&mut self) -> Result<Vec<u8>> {
        if !self.chunked {
            return self.conn.some().await;
        }
        self.conn.chunk().await?.context("the realtime stream ended")
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
    /// the time until every subscriber saw it.
    pub async fn once(&mut self, create: &Request, id: &str) -> Result<Duration> {
        *self.shared.tally() = Tally { id: id.to_owned(), seen: 0, last: None };
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
            let last = self.shared.tally().last;
            if let Some(last) = last {
                return Ok(last.duration_since(sent));
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

    /// Closes every stream.
    pub async fn close(mut self) {
        self.readers.abort_all();
        while self.readers.join_next().await.is_some() {}
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
