//! The App Index's figures, printed: crawl rate against 1,000 published
//! apps on loopback, and search latency over 100,000 entries.
//!
//! `cargo run --release -p a2app-index --example bench [-- --quick]`
//!
//! The crawl: 100 publisher hosts (`hNNN.bench.test`, all on one HTTPS
//! server of the test harness, with its test-only CA) each listing 10 apps
//! in its well-known catalog; every card is fetched, its proof checked, its
//! entry written. A host costs robots.txt, its catalog and its ten cards:
//! twelve requests, and the pauses between them. The politeness bound is
//! what those pauses alone allow (see `crawl`); the crawl is bounded by
//! politeness when it comes close to that bound. It runs twice: with the production pause (one
//! second, sixteen hosts at once) and with a short one, to show how far
//! above the production rate the crawler itself could go.
//!
//! The search: 100,000 synthetic entries (names, descriptions, tools,
//! examples from a fixed vocabulary with a skewed word frequency), then
//! 2,000 queries of one to three words, each timed alone.

#![allow(clippy::unwrap_used)] // a benchmark: a failure is a crash with its message

#[path = "../tests/it/sites.rs"]
mod sites;

use a2app_index::card::{Card, Example, Tool};
use a2app_index::clock::SystemClock;
use a2app_index::crawl::{Config, Crawler, Outcome};
use a2app_index::entry::{Entry, Failures, Proof, Source};
use a2app_index::store::Store;
use sites::{App, Names, Web, catalog, test_only};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HOSTS: usize = 100;
const APPS_PER_HOST: usize = 10;
const ENTRIES: usize = 100_000;
const QUERIES: usize = 2_000;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    if std::env::args().any(|a| a == "--search") {
        search(ENTRIES);
        return;
    }
    let web = Web::start().await;
    let mut seeds = Vec::new();
    for h in 0..HOSTS {
        let host = format!("h{h:03}.bench.test");
        let mut cards = Vec::new();
        for a in 0..APPS_PER_HOST {
            let path = format!("/apps/{a}/mcp/server-card");
            let mut app = App::new(&format!("test.bench.h{h}/app{a}"), &format!("App {a} of {h}"), "A benchmark app");
            app.tools = vec![("do_thing".into(), "Does the thing".into())];
            app.card_path = path.clone();
            web.set(&host, &path, app.page(&web, &host));
            cards.push(web.url(&host, &path));
        }
        web.set(&host, "/.well-known/ai-catalog.json", catalog(&cards));
        seeds.push(format!("{host}:{}", web.port));
    }
    println!("App Index figures ({} apps on {HOSTS} hosts, {} entries searched)\n", HOSTS * APPS_PER_HOST, ENTRIES);
    println!("crawl                      apps   time      apps/s   politeness bound   of bound   requests");
    if !quick {
        crawl(&web, &seeds, "production: 1 s, 16 hosts", Duration::from_secs(1), 16).await;
    }
    crawl(&web, &seeds, "short: 50 ms, 100 hosts", Duration::from_millis(50), 100).await;
    crawl(&web, &seeds, "no pause, 100 hosts", Duration::ZERO, 100).await;
    search(if quick { ENTRIES / 10 } else { ENTRIES });
}

async fn crawl(web: &Web, seeds: &[String], label: &str, delay: Duration, hosts_at_once: usize) {
    let store = Arc::new(Store::in_memory().unwrap());
    let mut config = Config::new();
    config.rules.test_only = Some(test_only());
    config.rules.lookup = Some(Arc::new(Names::default()));
    config.min_delay = delay;
    config.hosts_at_once = hosts_at_once;
    let crawler = Crawler::new(config, store.clone(), Arc::new(SystemClock)).unwrap();
    web.forget_seen();
    let start = Instant::now();
    let report = crawler.crawl(seeds).await.unwrap();
    let took = start.elapsed();
    let indexed = report.cards.iter().filter(|c| matches!(c.outcome, Outcome::Indexed { .. })).count();
    assert_eq!(
        indexed,
        HOSTS * APPS_PER_HOST,
        "{:?}",
        report.cards.iter().find(|c| !matches!(c.outcome, Outcome::Indexed { .. }))
    );
    assert_eq!(store.count().unwrap() as usize, indexed);
    // The pauses alone: the seeds, `hosts_at_once` at a time, cost a pause
    // each (robots.txt, then the catalog); then each host's ten cards, nine
    // pauses apart, in as many waves. Ten pauses a wave: a floor the crawl
    // can only come near (it leaves out the requests' own time).
    let waves = HOSTS.div_ceil(hosts_at_once) as f64;
    let floor = waves * APPS_PER_HOST as f64 * delay.as_secs_f64();
    let rate = indexed as f64 / took.as_secs_f64();
    let (bound, of_bound) = if floor > 0.0 {
        let bound = indexed as f64 / floor;
        (format!("{bound:>10.1} apps/s"), format!("{:>7.0} %", 100.0 * rate / bound))
    } else {
        ("      (none)     ".to_owned(), "      -".to_owned())
    };
    println!(
        "{label:<26} {indexed:>5}  {:>6.2} s  {rate:>8.1}   {bound}   {of_bound}   {:>8}",
        took.as_secs_f64(),
        report.requests
    );
}

/// A small deterministic generator (no dependency for a benchmark's words).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// A word index skewed toward the front (about Zipf's), of `n`.
    fn word(&mut self, n: usize) -> usize {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        ((n as f64).powf(u) as usize).saturating_sub(1).min(n - 1)
    }
}

fn vocabulary() -> Vec<String> {
    const SYLLABLES: [&str; 24] = [
        "ka", "lo", "mi", "ner", "to", "ban", "sel", "ri", "dak", "po", "vin", "ta", "gru", "fel", "ham", "os", "tre",
        "lu", "cor", "bi", "zan", "pe", "mur", "dy",
    ];
    let mut words = Vec::new();
    for a in SYLLABLES {
        for b in SYLLABLES {
            for c in ["", "s", "ing", "er"] {
                words.push(format!("{a}{b}{c}"));
            }
        }
    }
    words
}

fn search(entries: usize) {
    let words = vocabulary();
    let mut rng = Lcg(45);
    let sentence =
        |rng: &mut Lcg, n: usize| (0..n).map(|_| words[rng.word(words.len())].clone()).collect::<Vec<_>>().join(" ");
    let dir = tempfile_dir();
    let path = dir.join("bench-index.sqlite");
    let _ = std::fs::remove_file(&path);
    let store = Store::open(&path).unwrap();
    let start = Instant::now();
    for chunk in 0..entries.div_ceil(5_000) {
        let batch: Vec<Entry> = (chunk * 5_000..((chunk + 1) * 5_000).min(entries))
            .map(|i| {
                let tools = (0..(rng.next() % 5) as usize)
                    .map(|_| Tool { name: sentence(&mut rng, 2).replace(' ', "_"), description: sentence(&mut rng, 8) })
                    .collect();
                let examples = (0..(rng.next() % 3) as usize)
                    .map(|k| Example {
                        id: format!("e{k}"),
                        title: sentence(&mut rng, 3),
                        prompt: sentence(&mut rng, 12),
                        description: None,
                    })
                    .collect();
                Entry {
                    card_url: format!("https://p{i}.bench.test/mcp/server-card"),
                    origin: format!("https://p{i}.bench.test"),
                    card: Card {
                        name: format!("test.bench/p{i}"),
                        title: Some(sentence(&mut rng, 2)),
                        description: {
                            let n = 10 + (rng.next() % 20) as usize;
                            sentence(&mut rng, n)
                        },
                        remote: format!("https://p{i}.bench.test/mcp"),
                        tools,
                        examples,
                        ..Card::default()
                    },
                    proof: Proof {
                        source: Source::WellKnown,
                        catalog: format!("https://p{i}.bench.test/.well-known/ai-catalog.json"),
                        checked_at: 1_800_000_000,
                    },
                    indexed_at: 1_800_000_000,
                    failures: Failures::default(),
                }
            })
            .collect();
        store.put_all(&batch).unwrap();
    }
    let filled = start.elapsed();
    let mut times = Vec::with_capacity(QUERIES);
    let mut found = 0usize;
    for q in 0..QUERIES {
        let query = sentence(&mut rng, 1 + q % 3);
        let t = Instant::now();
        found += store.search(&query, 10).unwrap().len();
        times.push(t.elapsed());
    }
    times.sort();
    let pct = |p: f64| times[((times.len() as f64 * p) as usize).min(times.len() - 1)];
    println!(
        "\nsearch over {} entries (filled in {:.1} s; {QUERIES} queries of 1-3 words, {:.1} results each, limit 10)",
        store.count().unwrap(),
        filled.as_secs_f64(),
        found as f64 / QUERIES as f64
    );
    println!(
        "  p50 {:.2} ms   p95 {:.2} ms   p99 {:.2} ms   max {:.2} ms   (goal: p99 under 20 ms: {})",
        ms(pct(0.50)),
        ms(pct(0.95)),
        ms(pct(0.99)),
        ms(times[times.len() - 1]),
        if pct(0.99) < Duration::from_millis(20) { "met" } else { "missed" }
    );
    let _ = std::fs::remove_file(&path);
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("a2app-index-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
