//! `a2app index …`: the public App Index (`a2app_index`) from the shell:
//! `crawl SEED…`, `recheck`, `search QUERY`, `list`, `serve [ADDR]`.
//!
//! The index is its own file in the client's config directory, beside the
//! person's connections and never mixed with them: nothing here reads or
//! writes a connection, a credential or a pin, and nothing that reaches an
//! added app reads the index. Text from the index is fenced as untrusted
//! data (`display::fence`) before it is printed.

use super::output::{Failure, NOTHING_FOUND, OK, Out, REFUSED, UNREACHABLE};
use a2app_client::config::ConfigDir;
use a2app_client::discovery::TestOnlyLoopback;
use a2app_index::clock::SystemClock;
use a2app_index::crawl::{Config, Crawler, Outcome, Report};
use a2app_index::store::Store;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

/// The one switch that lets the crawler reach loopback publishers, named so
/// no one takes it for a setting: the path of a test harness's CA. Read
/// here, by the binary, and nowhere else; no file or flag sets it.
const TEST_ONLY_CA: &str = "A2APP_TEST_ONLY_LOOPBACK_CA";

const USAGE: &str = "a2app index crawl SEED… | recheck | search QUERY [--json] | list [--json] | serve [ADDR]";

pub async fn run(out: Out, config: &ConfigDir, words: &[String]) -> Result<u8, Failure> {
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match words.as_slice() {
        ["crawl", seeds @ ..] if !seeds.is_empty() => {
            let crawler = crawler(config)?;
            let seeds: Vec<String> = seeds.iter().map(|s| (*s).to_owned()).collect();
            let report = crawler.crawl(&seeds).await.map_err(store_failure)?;
            Ok(reported(out, &report))
        }
        ["recheck"] => {
            let report = crawler(config)?.recheck().await.map_err(store_failure)?;
            Ok(reported(out, &report))
        }
        ["search", query @ ..] if !query.is_empty() => search(out, config, &query.join(" ")).await,
        ["list"] => list(out, config),
        ["serve"] => serve(out, config, "127.0.0.1:8790").await,
        ["serve", addr] => serve(out, config, addr).await,
        _ => Err(Failure::new(REFUSED, "invalid_command", "a2app index takes one of its commands").fix(USAGE)),
    }
}

fn path(config: &ConfigDir) -> PathBuf {
    config.path().join(a2app_index::FILE)
}

fn open(config: &ConfigDir) -> Result<Arc<Store>, Failure> {
    Store::open(&path(config)).map(Arc::new).map_err(store_failure)
}

fn crawler(config: &ConfigDir) -> Result<Crawler, Failure> {
    let mut settings = Config::new();
    settings.rules.test_only = test_only()?;
    Crawler::new(settings, open(config)?, Arc::new(SystemClock)).map_err(store_failure)
}

/// The test harness's allowance, when it set one.
fn test_only() -> Result<Option<TestOnlyLoopback>, Failure> {
    let Some(path) = std::env::var_os(TEST_ONLY_CA).filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let ca_pem = std::fs::read(&path).map_err(|e| {
        Failure::new(REFUSED, "config", format!("{TEST_ONLY_CA}: {}: {e}", PathBuf::from(&path).display()))
            .fix(format!("unset {TEST_ONLY_CA}: only test harnesses set it"))
    })?;
    Ok(Some(TestOnlyLoopback { ca_pem }))
}

fn store_failure(e: a2app_index::Error) -> Failure {
    Failure::new(REFUSED, "index", e.to_string())
        .fix("check the index file in the config directory, or remove it and crawl again")
}

/// Prints what a crawl did; a crawl that reached nothing it was given is unreachable.
fn reported(out: Out, report: &Report) -> u8 {
    let mut lines = Vec::new();
    for seed in &report.seeds {
        if let Some(e) = &seed.error {
            lines.push(format!("seed {}: {e}", seed.seed));
        }
    }
    for card in &report.cards {
        lines.push(match &card.outcome {
            Outcome::Indexed { source, catalog, new } => {
                format!(
                    "{} {} (listed by {catalog}, {})",
                    if *new { "indexed" } else { "renewed" },
                    card.card,
                    source.as_str()
                )
            }
            Outcome::Skipped { why } => format!("skipped {}: {why}", card.card),
            Outcome::Removed { why } => format!("removed {}: {why}", card.card),
            Outcome::Kept { why, failures } => format!("kept    {} ({failures} failed checks): {why}", card.card),
        });
    }
    let indexed = report.cards.iter().filter(|c| matches!(c.outcome, Outcome::Indexed { .. })).count();
    lines.push(format!("{indexed} of {} cards indexed, {} requests", report.cards.len(), report.requests));
    out.done(json!({"ok": true, "report": report}), &lines.join("\n"));
    let nothing_reached = !report.seeds.is_empty() && report.seeds.iter().all(|s| s.error.is_some());
    if nothing_reached { UNREACHABLE } else { OK }
}

async fn search(out: Out, config: &ConfigDir, query: &str) -> Result<u8, Failure> {
    let Some(store) = Store::open_existing(&path(config)).map_err(store_failure)? else {
        return Err(Failure::new(NOTHING_FOUND, "no_index", "there is no App Index here yet")
            .fix("build one: a2app index crawl DOMAIN|URL…"));
    };
    let limit = a2app_index::search::DEFAULT_LIMIT;
    let hits = store.search(query, limit).map_err(store_failure)?;
    let answer = a2app_index::search::answer(query, &hits);
    let text = format!(
        "{}\n{}",
        VERIFIED,
        a2app_client::display::fence(
            &a2app_index::search::text(query, &hits),
            "the App Index (publishers' own words)",
            rand::random
        )
    );
    out.done_fenced(answer, &text);
    Ok(if hits.is_empty() { NOTHING_FOUND } else { OK })
}

/// Said before the fenced results.
const VERIFIED: &str = "Origins, proofs and check times were verified by the crawler; names, descriptions and tools \
are the publishers' own words and no sign of trust. A person adds an app with: a2app add CARD_URL";

fn list(out: Out, config: &ConfigDir) -> Result<u8, Failure> {
    let entries = match Store::open_existing(&path(config)).map_err(store_failure)? {
        Some(store) => store.all().map_err(store_failure)?,
        None => Vec::new(),
    };
    let results: Vec<serde_json::Value> = entries.iter().map(a2app_index::search::result).collect();
    let lines: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "{} ({}, listed by {}, checked {}{})",
                e.card_url,
                e.proof.source.as_str(),
                e.proof.catalog,
                a2app_index::entry::time(e.proof.checked_at),
                if e.failures.count > 0 { format!(", {} failed checks", e.failures.count) } else { String::new() }
            )
        })
        .collect();
    let text = if lines.is_empty() { "the App Index is empty".to_owned() } else { lines.join("\n") };
    out.done(json!({"ok": true, "entries": results}), &text);
    Ok(OK)
}

async fn serve(out: Out, config: &ConfigDir, addr: &str) -> Result<u8, Failure> {
    let store = open(config)?;
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        Failure::new(UNREACHABLE, "bind", format!("cannot listen on {addr}: {e}"))
            .fix("give another ADDR: a2app index serve 127.0.0.1:PORT")
    })?;
    let local = listener.local_addr().map(|a| a.to_string()).unwrap_or_else(|_| addr.to_owned());
    out.note(&format!("serving the App Index at http://{local}/ (GET /search?q= for JSON); Ctrl-C stops it"));
    let stop = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    a2app_index::serve::run(store, listener, stop).await.map_err(|e| {
        Failure::new(UNREACHABLE, "serve", format!("the index service stopped: {e}")).fix("start it again")
    })?;
    Ok(OK)
}
