//! Realtime fan-out: N subscribers on `cards/*` through PocketBase's realtime
//! protocol (`GET /api/realtime`, the `PB_CONNECT` event, `POST /api/realtime`
//! with the subscriptions), then one create at a time; the sample is the time
//! from sending the create to the moment the last subscriber saw it.

use crate::dataset::Rng;
use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What one subscriber saw: its index, the created record's id, when.
type Seen = (usize, String, Instant);

/// Connected subscribers; dropping this closes every stream.
pub struct Subscribers {
    readers: tokio::task::JoinSet<()>,
    seen: mpsc::UnboundedReceiver<Seen>,
    count: usize,
}

/// How long connecting, subscribing or one fan-out may take.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);

/// Opens `count` realtime streams on `url` and subscribes each to `cards/*`.
pub async fn subscribe(client: &reqwest::Client, url: &str, count: usize) -> Result<Subscribers> {
    let (tx, seen) = mpsc::unbounded_channel();
    let (ready_tx, mut ready_rx) = mpsc::unbounded_channel::<Result<()>>();
    let mut readers = tokio::task::JoinSet::new();
    for index in 0..count {
        let (client, url, tx, ready) = (client.clone(), url.to_owned(), tx.clone(), ready_tx.clone());
        readers.spawn(async move {
            if let Err(e) = listen(&client, &url, index, &tx, &ready).await {
                let _ = ready.send(Err(e));
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
    Ok(Subscribers { readers, seen, count })
}

/// One subscriber: connect, subscribe, then report every `cards/*` event.
async fn listen(
    client: &reqwest::Client,
    url: &str,
    index: usize,
    seen: &mpsc::UnboundedSender<Seen>,
    ready: &mpsc::UnboundedSender<Result<()>>,
) -> Result<()> {
    let mut resp = client.get(format!("{url}/api/realtime")).send().await?.error_for_status()?;
    let mut buffer = String::new();
    let mut subscribed = false;
    loop {
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let (event, data) = parse_frame(&frame);
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
                let data: Value = serde_json::from_str(&data).context("a realtime event is not JSON")?;
                if let Some(id) = data["record"]["id"].as_str() {
                    let _ = seen.send((index, id.to_owned(), at));
                }
            }
        }
        match resp.chunk().await? {
            Some(bytes) => buffer.push_str(&String::from_utf8_lossy(&bytes).replace("\r\n", "\n")),
            None => bail!("the realtime stream closed"),
        }
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
    pub async fn once(&mut self, create: reqwest::RequestBuilder, id: &str) -> Result<Duration> {
        while self.seen.try_recv().is_ok() {}
        let sent = Instant::now();
        let resp = create.timeout(STEP_TIMEOUT).send().await.context("the fan-out create failed")?;
        let status = resp.status();
        if !status.is_success() {
            bail!("the fan-out create answered {status}: {}", resp.text().await.unwrap_or_default());
        }
        let mut who = HashSet::new();
        let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
        while who.len() < self.count {
            match tokio::time::timeout_at(deadline, self.seen.recv()).await {
                Ok(Some((index, seen_id, at))) if seen_id == id => {
                    who.insert(index);
                    if who.len() == self.count {
                        return Ok(at.duration_since(sent));
                    }
                }
                Ok(Some(_)) => {}
                Ok(None) => bail!("every realtime subscriber stopped"),
                Err(_) => {
                    bail!("only {} of {} subscribers saw the create within {STEP_TIMEOUT:?}", who.len(), self.count)
                }
            }
        }
        Ok(sent.elapsed())
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
