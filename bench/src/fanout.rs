//! Realtime fan-out: N subscribers on `cards/*` through PocketBase's realtime
//! protocol (`GET /api/realtime`, the `PB_CONNECT` event, `POST /api/realtime`
//! with the subscriptions), then one create at a time; the sample is the time
//! from sending the create to the moment the last subscriber saw it.
//!
//! The subscribers' side is kept light, since it shares the machine with the
//! server under test: each reads only the record id out of an event and counts
//! itself in a shared tally; only the last one wakes the timing task.

use crate::dataset::Rng;
use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Value, json};
use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
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
    Ok(Subscribers { readers, shared, failed })
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

/// `GET /api/realtime` on a plain socket: HTTP/1.1 with the chunked transfer
/// coding both servers use for the stream. A hundred of these share the
/// machine with the server under test, so each does one `read` per arrival
/// and no more: no client library's connection task and body channel.
struct EventStream {
    socket: TcpStream,
    /// Bytes read and not yet decoded.
    raw: Vec<u8>,
    chunked: bool,
}

impl EventStream {
    async fn open(url: &str) -> Result<EventStream> {
        let host = url.strip_prefix("http://").context("the realtime URL is not http://")?.trim_end_matches('/');
        let socket = TcpStream::connect(host).await.with_context(|| format!("cannot connect to {host}"))?;
        socket.set_nodelay(true)?;
        let mut stream = EventStream { socket, raw: Vec::with_capacity(8192), chunked: false };
        let request = format!("GET /api/realtime HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n");
        stream.socket.write_all(request.as_bytes()).await?;
        let end = loop {
            if let Some(i) = find(&stream.raw, b"\r\n\r\n") {
                break i;
            }
            stream.fill().await?;
        };
        let head = String::from_utf8_lossy(&stream.raw[..end]).to_ascii_lowercase();
        if !head.starts_with("http/1.1 200") {
            bail!("GET /api/realtime answered {}", head.lines().next().unwrap_or(""));
        }
        stream.chunked = head.lines().any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
        stream.raw.drain(..end + 4);
        Ok(stream)
    }

    /// Reads more bytes from the socket.
    async fn fill(&mut self) -> Result<()> {
        let mut block = [0u8; 8192];
        let n = self.socket.read(&mut block).await?;
        if n == 0 {
            bail!("the realtime stream closed");
        }
        self.raw.extend_from_slice(&block[..n]);
        Ok(())
    }

    /// The next piece of the response body (one chunk when chunked).
    async fn next_body(&mut self) -> Result<Vec<u8>> {
        loop {
            if !self.chunked {
                if !self.raw.is_empty() {
                    return Ok(std::mem::take(&mut self.raw));
                }
            } else if let Some(line) = find(&self.raw, b"\r\n") {
                let size_text = String::from_utf8_lossy(&self.raw[..line]);
                let size_text = size_text.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size_text, 16)
                    .with_context(|| format!("a bad chunk size line: {size_text:?}"))?;
                if size == 0 {
                    bail!("the realtime stream ended");
                }
                let start = line + 2;
                if self.raw.len() >= start + size + 2 {
                    let body = self.raw[start..start + size].to_vec();
                    self.raw.drain(..start + size + 2);
                    return Ok(body);
                }
            }
            self.fill().await?;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
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
    pub async fn once(&mut self, create: reqwest::RequestBuilder, id: &str) -> Result<Duration> {
        *self.shared.tally() = Tally { id: id.to_owned(), seen: 0, last: None };
        let sent = Instant::now();
        let resp = create.timeout(STEP_TIMEOUT).send().await.context("the fan-out create failed")?;
        let status = resp.status();
        if !status.is_success() {
            bail!("the fan-out create answered {status}: {}", resp.text().await.unwrap_or_default());
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
