//! The crawler's manners toward each host: robots.txt read (and cached, at
//! most 24 hours) before every request, redirects followed one hop at a
//! time (each hop's host paced, its robots.txt obeyed, its address checked by
//! `a2app_client::discovery`), one request at a time per host with a pause
//! after each (the host's `Crawl-delay`, never less than the crawler's
//! minimum). Different hosts proceed at once.

use crate::clock::Clock;
use crate::robots::{self, Robots};
use a2app_client::discovery::{DiscoveryError, Doc, Fetcher, Hop};
use reqwest::Url;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Why a document could not be had, and whether asking later may help.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The publisher could not be reached (timeout, DNS, a 5xx, robots.txt
    /// unreadable): no answer, so no decision. Otherwise the answer was no
    /// (a 404, robots.txt disallows it, too large, too many redirects).
    pub unreachable: bool,
    pub message: String,
}

impl Refusal {
    fn unreachable(message: String) -> Refusal {
        Refusal { unreachable: true, message }
    }

    fn refused(message: String) -> Refusal {
        Refusal { unreachable: false, message }
    }
}

impl From<DiscoveryError> for Refusal {
    fn from(e: DiscoveryError) -> Refusal {
        let message = e.to_string();
        match e {
            DiscoveryError::Unreachable { .. } | DiscoveryError::Blocked { .. } => Refusal::unreachable(message),
            DiscoveryError::Status { status, .. } if status >= 500 || status == 429 => Refusal::unreachable(message),
            _ => Refusal::refused(message),
        }
    }
}

/// A robots.txt as fetched: the rules, why it could not be read (if so), when.
#[derive(Clone)]
struct Fetched {
    robots: Robots,
    trouble: Option<String>,
    at: i64,
}

pub struct Hosts {
    fetcher: Fetcher,
    clock: Arc<dyn Clock>,
    min_delay: Duration,
    max_delay: Duration,
    max_redirects: usize,
    /// Per host name: when its next request may start.
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Instant>>>>>,
    /// Per origin: its robots.txt and when it was fetched.
    robots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Fetched>>>>>,
    requests: AtomicU64,
}

impl Hosts {
    pub fn new(fetcher: Fetcher, clock: Arc<dyn Clock>, min_delay: Duration, max_delay: Duration) -> Hosts {
        let max_redirects = fetcher.rules().max_redirects;
        Hosts {
            fetcher,
            clock,
            min_delay,
            max_delay,
            max_redirects,
            slots: Mutex::default(),
            robots: Mutex::default(),
            requests: AtomicU64::new(0),
        }
    }

    /// Requests sent so far (robots.txt included).
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// GET `url` as the crawler may, following redirects hop by hop.
    pub async fn get(&self, url: &Url, accept: &str) -> Result<Doc, Refusal> {
        let mut url = url.clone();
        for _ in 0..=self.max_redirects {
            if url.scheme() != "https" {
                return Err(Refusal::refused(format!("{url}: only https is read")));
            }
            let Fetched { robots, trouble, .. } = self.robots(&url).await;
            if robots.is_unreachable() {
                return Err(Refusal::unreachable(format!(
                    "robots.txt of {} could not be read, so nothing there is crawled ({})",
                    origin(&url),
                    trouble.unwrap_or_default()
                )));
            }
            if !robots.allowed(&path(&url)) {
                return Err(Refusal::refused(format!("robots.txt of {} disallows {url}", origin(&url))));
            }
            let delay = robots.crawl_delay().unwrap_or_default();
            if delay > self.max_delay {
                return Err(Refusal::unreachable(format!(
                    "{} asks for {} s between requests, more than the crawler's {} s",
                    origin(&url),
                    delay.as_secs(),
                    self.max_delay.as_secs()
                )));
            }
            let hop = self.paced(&url, delay.max(self.min_delay), self.fetcher.hop(&url, accept)).await?;
            match hop {
                Hop::Doc(doc) => return Ok(doc),
                Hop::Redirect(next) => url = next,
            }
        }
        Err(Refusal::refused(format!("{url} redirects more than {} times", self.max_redirects)))
    }

    /// The robots.txt rules for `url`'s origin, fetched unless a copy of
    /// less than a day is at hand.
    async fn robots(&self, url: &Url) -> Fetched {
        let key = origin(url);
        let cell = {
            let mut map = self.robots.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(key.clone()).or_default().clone()
        };
        // One fetch per origin: others asking meanwhile wait for it.
        let mut cached = cell.lock().await;
        let now = self.clock.now();
        if let Some(fetched) = cached.as_ref()
            && now.saturating_sub(fetched.at) < robots::MAX_AGE_SECS
        {
            return fetched.clone();
        }
        let (robots, trouble) = match self.fetch_robots(&key).await {
            Ok(robots) => (robots, None),
            Err(why) => (Robots::unreachable(), Some(why)),
        };
        let fetched = Fetched { robots, trouble, at: now };
        *cached = Some(fetched.clone());
        fetched
    }

    /// RFC 9309 2.3.1: a 2xx is the file; a 4xx, no file (all allowed); a
    /// 5xx or no answer, nothing allowed (429 counted with them: it asks us
    /// to come back later, not to come in); more than five redirects, no file.
    async fn fetch_robots(&self, origin: &str) -> Result<Robots, String> {
        let mut url = Url::parse(&format!("{origin}/robots.txt")).map_err(|e| e.to_string())?;
        for _ in 0..=self.max_redirects {
            let hop = self.fetcher.hop_prefix(&url, "text/plain", robots::PARSE_LIMIT);
            match self.paced(&url, self.min_delay, hop).await {
                Ok(Hop::Doc(doc)) => return Ok(Robots::parse(&doc.body, crate::TOKEN)),
                Ok(Hop::Redirect(next)) => url = next,
                Err(DiscoveryError::Status { status, .. }) if (400..500).contains(&status) && status != 429 => {
                    return Ok(Robots::allow_all());
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(Robots::allow_all())
    }

    /// Runs `request` when `url`'s host is free and its pause is over, then
    /// holds the host for `delay`.
    async fn paced<T>(&self, url: &Url, delay: Duration, request: impl Future<Output = T>) -> T {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        let slot = {
            let mut map = self.slots.lock().unwrap_or_else(|p| p.into_inner());
            map.entry(host).or_default().clone()
        };
        let mut next = slot.lock().await;
        if let Some(at) = *next {
            tokio::time::sleep_until(at).await;
        }
        self.requests.fetch_add(1, Ordering::Relaxed);
        let out = request.await;
        *next = Some(Instant::now() + delay);
        out
    }
}

/// `scheme://host[:port]`: robots.txt applies per origin.
pub fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// What robots.txt rules match: the path and the query, as sent.
fn path(url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_owned(),
    }
}
