//! The workloads as requests: what each one asks of a server, and a probe
//! that checks, before any load, that a server holds the seeded data and
//! answers each read in the expected shape.

use crate::dataset;
use crate::http1::Request;
use crate::load::MakeRequest;
use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A server as the load generator sees it: ours carries the agent token.
pub struct Target {
    pub url: String,
    pub token: Option<String>,
}

pub const CARDS: &str = "/api/collections/cards/records";

pub fn view(_: &Target, cards: u64) -> MakeRequest {
    Arc::new(move |rng, _| Request::get(format!("{CARDS}/{}", dataset::card_id(rng.below(cards)))))
}

pub fn list(_: &Target) -> MakeRequest {
    Arc::new(move |_, _| Request::get(format!("{CARDS}?perPage=20&sort=-created")))
}

pub fn filter(_: &Target, lists: u64) -> MakeRequest {
    Arc::new(move |rng, _| {
        let expr = format!("list = \"{}\"", dataset::list_id(rng.below(lists)));
        Request::get(format!("{CARDS}?perPage=20&filter={}", encode(&expr)))
    })
}

/// A create of `card`; ours also gets the agent token and a key never used
/// before in this run.
pub fn write_request(token: Option<&str>, key: u64, card: &Map<String, Value>) -> Request {
    let mut req = Request::post_json(CARDS.to_owned(), &Value::Object(card.clone()));
    if let Some(token) = token {
        req = req.header("X-LUI-Token", token).header("Idempotency-Key", format!("bench-{}-{key}", std::process::id()));
    }
    req
}

pub fn create(t: &Target, lists: u64, keys: &Arc<AtomicU64>) -> MakeRequest {
    let (token, keys) = (t.token.clone(), Arc::clone(keys));
    Arc::new(move |rng, _| {
        let key = keys.fetch_add(1, Ordering::Relaxed);
        write_request(token.as_deref(), key, &dataset::new_card(key, rng.below(lists)))
    })
}

/// Percent-encodes a query value (everything but RFC 3986's unreserved characters).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// One validated request of each read workload, before any load: the
/// servers hold the seeded data and answer in the expected shape.
pub async fn probe(client: &reqwest::Client, t: &Target, cards: u64, lists: u64) -> Result<()> {
    let get = |url: String| async move {
        let resp = client.get(&url).send().await.with_context(|| format!("GET {url}"))?;
        let status = resp.status();
        let body: Value = resp.json().await.with_context(|| format!("GET {url}: the body is not JSON"))?;
        if !status.is_success() {
            bail!("GET {url} answered {status}: {body}");
        }
        Ok::<Value, anyhow::Error>(body)
    };
    let last = dataset::card_id(cards - 1);
    let one = get(format!("{}{CARDS}/{last}", t.url)).await?;
    if one["id"] != last.as_str() || one["title"] != format!("Card {}", cards - 1).as_str() {
        bail!("{}: the seeded card {last} reads back as {one}", t.url);
    }
    let page = get(format!("{}{CARDS}?perPage=20&sort=-created", t.url)).await?;
    let total = page["totalItems"].as_u64().unwrap_or(0);
    if total < cards || page["items"].as_array().map_or(0, Vec::len) != 20 {
        bail!("{}: the list holds {total} cards (expected at least {cards}) or not 20 items", t.url);
    }
    let list = dataset::list_id(lists - 1);
    let page = get(format!("{}{CARDS}?perPage=20&filter={}", t.url, encode(&format!("list = \"{list}\"")))).await?;
    let items = page["items"].as_array().cloned().unwrap_or_default();
    if page["totalItems"].as_u64().unwrap_or(0) < dataset::CARDS_PER_LIST
        || items.len() != 20
        || items.iter().any(|c| c["list"] != list.as_str())
    {
        bail!("{}: the filter list = \"{list}\" answered {page}", t.url);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_percent_encoded() {
        assert_eq!(encode("list = \"abc\""), "list%20%3D%20%22abc%22");
    }
}
