//! A crawl: seeds (domains, pages, catalogs, cards) become candidate cards,
//! and each candidate is checked (`check`): fetched, read, its publisher's
//! proof sought, and the store brought in line with the answer. A recheck
//! checks every entry the same way.
//!
//! The outcome of one check, by what the publisher's documents answered:
//! proven, the entry is written (fresh proof time, failures cleared); a
//! definite no (not listed, `noindex`, gone, no card, robots.txt disallows),
//! the entry goes at once; no answer (timeout, DNS, 5xx, robots.txt
//! unreadable), the entry stays and the failure is counted, and it goes only
//! after `entry::REMOVE_AFTER_FAILURES` failed checks spanning at least
//! `entry::REMOVE_AFTER_SECS`. A card never indexed is indexed only on proof.
//!
//! Candidates are grouped by host: one worker per host checks its cards in
//! turn, and up to `hosts_at_once` hosts are worked on at a time.

use crate::Error;
use crate::card;
use crate::catalog;
use crate::clock::Clock;
use crate::entry::{Entry, Failures, Proof, Source};
use crate::hosts::{self, Hosts, Refusal};
use crate::proof::{self, Verdict};
use crate::robots;
use crate::store::Store;
use a2app_client::discovery::{self, Doc, Fetcher, Rules};
use reqwest::Url;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a crawler is allowed and how polite it is.
#[derive(Clone)]
pub struct Config {
    /// The fetch rules: https only, the limits, the User-Agent. Production
    /// code takes [`Config::new`]'s; only a test harness adds
    /// `rules.test_only` or a `rules.lookup`.
    pub rules: Rules,
    /// The least pause between two requests to one host.
    pub min_delay: Duration,
    /// A host asking (`Crawl-delay`) for a longer pause is not crawled.
    pub max_delay: Duration,
    pub hosts_at_once: usize,
}

impl Config {
    /// The production crawler: public addresses over https, 1 MiB, 10 s, 5
    /// redirects, `OpenBot/<version> (+contact)`, one second between two
    /// requests to a host at least, sixteen hosts at once.
    pub fn new() -> Config {
        Config {
            rules: Rules { https_only: true, user_agent: crate::user_agent(crate::CONTACT), ..Rules::default() },
            min_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
            hosts_at_once: 16,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config::new()
    }
}

/// What one crawl or recheck did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub seeds: Vec<SeedReport>,
    pub cards: Vec<CardReport>,
    pub requests: u64,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedReport {
    pub seed: String,
    /// The cards it led to.
    pub cards: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CardReport {
    pub card: String,
    #[serde(flatten)]
    pub outcome: Outcome,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
pub enum Outcome {
    /// Proven and written (new, or its proof renewed).
    Indexed { source: Source, catalog: String, new: bool },
    /// Not in the index, and not put there: why.
    Skipped { why: String },
    /// In the index, taken out: why.
    Removed { why: String },
    /// In the index, left there though the publisher could not be reached.
    Kept { why: String, failures: u32 },
}

pub struct Crawler {
    hosts: Hosts,
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    hosts_at_once: usize,
}

/// The documents fetched in one run, each once (a catalog listing many
/// cards, or a seed that is also a card's proof, is fetched one time).
pub struct Run<'a> {
    hosts: &'a Hosts,
    docs: Mutex<HashMap<String, DocCell>>,
}

type DocCell = Arc<tokio::sync::OnceCell<Result<Arc<Doc>, Refusal>>>;

impl Run<'_> {
    pub async fn doc(&self, url: &Url, accept: &str) -> Result<Arc<Doc>, Refusal> {
        let cell = {
            let mut docs = self.docs.lock().unwrap_or_else(|p| p.into_inner());
            docs.entry(url.to_string()).or_default().clone()
        };
        cell.get_or_init(|| async { self.hosts.get(url, accept).await.map(Arc::new) }).await.clone()
    }
}

/// What a card URL is fetched as.
const CARD_ACCEPT: &str = "application/mcp-server-card+json, application/json;q=0.9";
/// What a seed is fetched as: any of the documents.
const SEED_ACCEPT: &str =
    "application/ai-catalog+json, application/mcp-server-card+json, application/json;q=0.9, text/html;q=0.8";

impl Crawler {
    pub fn new(config: Config, store: Arc<Store>, clock: Arc<dyn Clock>) -> Result<Crawler, Error> {
        // Whatever the caller built, the crawler reads https only.
        let rules = Rules { https_only: true, ..config.rules };
        let fetcher = Fetcher::with_rules(rules).map_err(|e| Error::Setup(e.to_string()))?;
        let hosts = Hosts::new(fetcher, clock.clone(), config.min_delay, config.max_delay);
        Ok(Crawler { hosts, store, clock, hosts_at_once: config.hosts_at_once.max(1) })
    }

    /// Follows each seed to the cards it leads to and checks each.
    pub async fn crawl(&self, seeds: &[String]) -> Result<Report, Error> {
        let run = Run { hosts: &self.hosts, docs: Mutex::default() };
        // Seeds too are worked on `hosts_at_once` at a time: a long seed list
        // opens no more connections than a recheck.
        let gate = tokio::sync::Semaphore::new(self.hosts_at_once);
        let expanded = futures_util::future::join_all(seeds.iter().map(|s| async {
            let _permit = gate.acquire().await;
            self.expand(&run, s).await
        }))
        .await;
        let mut report = Report::default();
        let mut candidates = BTreeSet::new();
        for (seed, found) in seeds.iter().zip(expanded) {
            match found {
                Ok(cards) => {
                    candidates.extend(cards.iter().cloned());
                    report.seeds.push(SeedReport { seed: seed.clone(), cards, error: None });
                }
                Err(e) => report.seeds.push(SeedReport { seed: seed.clone(), cards: vec![], error: Some(e) }),
            }
        }
        report.cards = self.check_all(&run, candidates).await?;
        report.requests = self.hosts.requests();
        Ok(report)
    }

    /// Checks every entry of the index again.
    pub async fn recheck(&self) -> Result<Report, Error> {
        let run = Run { hosts: &self.hosts, docs: Mutex::default() };
        let store = self.store.clone();
        let entries = blocking(move || store.all()).await?;
        let cards = self.check_all(&run, entries.into_iter().map(|e| e.card_url).collect()).await?;
        Ok(Report { seeds: vec![], cards, requests: self.hosts.requests() })
    }

    /// A seed's cards: a domain is its well-known catalog; a page, the
    /// catalog it links statically; a catalog, every card it lists (each
    /// only a candidate: listing is proof only from the card's publisher);
    /// a card, itself.
    async fn expand(&self, run: &Run<'_>, seed: &str) -> Result<Vec<String>, String> {
        let url = discovery::start_url(seed, false).map_err(|e| e.to_string())?;
        if url.scheme() != "https" {
            return Err(format!("{seed}: the crawler reads https only"));
        }
        let doc = run.doc(&url, SEED_ACCEPT).await.map_err(|r| r.message)?;
        let doc = if doc.is_html() {
            let catalog = doc.catalog_link().ok_or_else(|| format!("{} links no AI catalog", doc.url))?;
            run.doc(&catalog, catalog::ACCEPT).await.map_err(|r| r.message)?
        } else {
            doc
        };
        let json: serde_json::Value =
            serde_json::from_slice(&doc.body).map_err(|_| format!("{} is not JSON", doc.url))?;
        if doc.is_catalog(&json) {
            return catalog::cards(&doc);
        }
        if doc.is_card(&json) {
            return Ok(vec![url.to_string()]);
        }
        Err(format!("{} is no page, AI catalog or MCP server card", doc.url))
    }

    /// Checks `cards`, one worker per host, `hosts_at_once` at a time.
    async fn check_all(&self, run: &Run<'_>, cards: BTreeSet<String>) -> Result<Vec<CardReport>, Error> {
        let mut by_host: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for card in cards {
            let host = Url::parse(&card).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default();
            by_host.entry(host).or_default().push(card);
        }
        let gate = tokio::sync::Semaphore::new(self.hosts_at_once);
        let workers = by_host.into_values().map(|cards| async {
            let _permit = gate.acquire().await;
            let mut out = Vec::with_capacity(cards.len());
            for card in cards {
                out.push(self.check(run, &card).await);
            }
            out
        });
        let mut reports = Vec::new();
        for done in futures_util::future::join_all(workers).await {
            for report in done {
                reports.push(report?);
            }
        }
        reports.sort_by(|a, b| a.card.cmp(&b.card));
        Ok(reports)
    }

    /// Checks one card and brings its entry in line.
    async fn check(&self, run: &Run<'_>, card: &str) -> Result<CardReport, Error> {
        let store = self.store.clone();
        let key = card.to_owned();
        let existing = blocking(move || store.get(&key)).await?;
        let outcome = match self.verdict(run, card).await {
            Ok((proof, read)) => {
                let entry = Entry {
                    card_url: card.to_owned(),
                    origin: Url::parse(card).map(|u| hosts::origin(&u)).unwrap_or_default(),
                    card: read,
                    proof: proof.clone(),
                    indexed_at: existing.as_ref().map_or(proof.checked_at, |e| e.indexed_at),
                    failures: Failures::default(),
                };
                let store = self.store.clone();
                blocking(move || store.put(&entry)).await?;
                Outcome::Indexed { source: proof.source, catalog: proof.catalog, new: existing.is_none() }
            }
            Err(Refusal { unreachable: false, message }) => match existing {
                Some(_) => {
                    self.remove(card).await?;
                    Outcome::Removed { why: message }
                }
                None => Outcome::Skipped { why: message },
            },
            Err(Refusal { unreachable: true, message }) => match existing {
                None => Outcome::Skipped { why: message },
                Some(mut entry) => {
                    if entry.failures.add(self.clock.now(), &message) {
                        self.remove(card).await?;
                        let count = entry.failures.count;
                        Outcome::Removed { why: format!("unreachable for {count} checks in a row: {message}") }
                    } else {
                        let store = self.store.clone();
                        let failures = entry.failures.clone();
                        let key = card.to_owned();
                        blocking(move || store.set_failures(&key, &failures)).await?;
                        Outcome::Kept { why: message, failures: entry.failures.count }
                    }
                }
            },
        };
        Ok(CardReport { card: card.to_owned(), outcome })
    }

    async fn remove(&self, card: &str) -> Result<bool, Error> {
        let store = self.store.clone();
        let key = card.to_owned();
        blocking(move || store.remove(&key)).await
    }

    /// The proof for `card` and what it says, or why there is none.
    async fn verdict(&self, run: &Run<'_>, card: &str) -> Result<(Proof, card::Card), Refusal> {
        let no = |message: String| Refusal { unreachable: false, message };
        let url = Url::parse(card).map_err(|e| no(format!("{card} is no URL: {e}")))?;
        let answer = run.doc(&url, CARD_ACCEPT).await?;
        if robots::noindex(&answer.robots_tag, crate::TOKEN) {
            return Err(no(format!("{card} answers X-Robots-Tag: noindex")));
        }
        let json: serde_json::Value =
            serde_json::from_slice(&answer.body).map_err(|_| no(format!("{card} is not JSON")))?;
        let read = card::read(&url, &json).map_err(|e| no(format!("{card} is no MCP server card: {e}")))?;
        match proof::check(run, &url, &answer, &read).await {
            Verdict::Proven { source, catalog } => Ok((Proof { source, catalog, checked_at: self.clock.now() }, read)),
            Verdict::Unlisted(why) => Err(no(why)),
            Verdict::Unknown(why) => Err(Refusal { unreachable: true, message: why }),
        }
    }
}

/// Store work off the async threads.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, Error> + Send + 'static) -> Result<T, Error> {
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::Io(format!("a store task failed: {e}")))?
}
