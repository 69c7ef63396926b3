//! Crawls and rechecks against publisher sites over HTTPS: the proof
//! sources, foreign copies, `noindex`, removal, unreachable catalogs,
//! robots.txt, redirects, sizes, time, private addresses and politeness.

use crate::sites::{App, Names, Page, Web, catalog, test_only};
use a2app_index::clock::Clock;
use a2app_index::crawl::{Config, Crawler, Outcome, Report};
use a2app_index::entry::{REMOVE_AFTER_FAILURES, REMOVE_AFTER_SECS};
use a2app_index::store::Store;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

const T0: i64 = 1_800_000_000;
const HOUR: i64 = 60 * 60;

#[derive(Default)]
struct TestClock(AtomicI64);

impl Clock for TestClock {
    fn now(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Publisher sites, the names they resolve by, an index and a crawler.
pub struct World {
    pub web: Web,
    pub names: Names,
    pub store: Arc<Store>,
    clock: Arc<TestClock>,
    crawler: Crawler,
}

impl World {
    pub async fn new() -> World {
        World::with(|_| {}).await
    }

    /// With the test's changes to the crawler's configuration.
    pub async fn with(tune: impl FnOnce(&mut Config)) -> World {
        let web = Web::start().await;
        let names = Names::default();
        let store = Arc::new(Store::in_memory().unwrap());
        let clock = Arc::new(TestClock(AtomicI64::new(T0)));
        let mut config = Config::new();
        config.rules.test_only = Some(test_only());
        config.rules.lookup = Some(Arc::new(names.clone()));
        config.rules.timeout = Duration::from_secs(2);
        config.min_delay = Duration::from_millis(1);
        tune(&mut config);
        let crawler = Crawler::new(config, store.clone(), clock.clone()).unwrap();
        World { web, names, store, clock, crawler }
    }

    pub fn url(&self, host: &str, path: &str) -> String {
        self.web.url(host, path)
    }

    pub async fn crawl(&self, seeds: &[&str]) -> Report {
        let seeds: Vec<String> = seeds.iter().map(|s| s.to_string()).collect();
        self.crawler.crawl(&seeds).await.unwrap()
    }

    pub async fn recheck(&self) -> Report {
        self.crawler.recheck().await.unwrap()
    }

    fn advance(&self, secs: i64) {
        self.clock.0.fetch_add(secs, Ordering::SeqCst);
    }

    /// The whole index, one line an entry: card, proof source, proof
    /// catalog, failed checks.
    pub fn index(&self) -> Vec<String> {
        self.store
            .all()
            .unwrap()
            .into_iter()
            .map(|e| {
                format!("{} {} {} failures={}", e.card_url, e.proof.source.as_str(), e.proof.catalog, e.failures.count)
            })
            .collect()
    }

    /// `card source catalog failures=n` for an expected entry.
    pub fn line(&self, host: &str, card: &str, source: &str, catalog: (&str, &str), failures: u32) -> String {
        format!("{} {source} {} failures={failures}", self.url(host, card), self.url(catalog.0, catalog.1))
    }
}

const WELL_KNOWN: &str = "/.well-known/ai-catalog.json";

fn outcome<'a>(report: &'a Report, card: &str) -> &'a Outcome {
    &report.cards.iter().find(|c| c.card == card).unwrap_or_else(|| panic!("{card} not in {report:#?}")).outcome
}

fn why(report: &Report, card: &str) -> String {
    match outcome(report, card) {
        Outcome::Skipped { why } | Outcome::Removed { why } | Outcome::Kept { why, .. } => why.clone(),
        other => panic!("{card}: {other:?}"),
    }
}

#[tokio::test]
async fn each_of_the_three_proof_sources_is_accepted_and_nothing_else() {
    let w = World::new().await;
    // The well-known catalog at the card's origin.
    w.web.publish("alpha.example.test", &App::new("test.alpha/notes", "Alpha Notes", "Notes"));
    // A catalog elsewhere, named by the card's Link header.
    let bravo = App::new("test.bravo/tasks", "Bravo Tasks", "Tasks").at("/apps/tasks/card");
    let bravo_catalog = w.url("catalogs.example.test", "/bravo.json");
    w.web.set(
        "bravo.example.test",
        "/apps/tasks/card",
        bravo.page(&w.web, "bravo.example.test").header("link", &format!("<{bravo_catalog}>; rel=\"ai-catalog\"")),
    );
    w.web.set("catalogs.example.test", "/bravo.json", catalog(&[w.url("bravo.example.test", "/apps/tasks/card")]));
    // The catalog the page at websiteUrl links with a static tag.
    let mut charlie = App::new("test.charlie/maps", "Charlie Maps", "Maps");
    charlie.website = Some("/maps/".into());
    w.web.set("charlie.example.test", "/mcp/server-card", charlie.page(&w.web, "charlie.example.test"));
    w.web.set(
        "charlie.example.test",
        "/maps/",
        Page::html("<html><head><link rel=\"ai-catalog\" type=\"application/ai-catalog+json\" href=\"/cat/maps.json\"></head></html>"),
    );
    w.web.set("charlie.example.test", "/cat/maps.json", catalog(&[w.url("charlie.example.test", "/mcp/server-card")]));
    // A page whose only catalog link a script would write proves nothing.
    let mut delta = App::new("test.delta/x", "Delta", "X");
    delta.website = Some("/".into());
    w.web.set("delta.example.test", "/mcp/server-card", delta.page(&w.web, "delta.example.test"));
    w.web.set(
        "delta.example.test",
        "/",
        Page::html("<script>document.head.innerHTML += '<link rel=\"ai-catalog\" href=\"/c.json\">'</script>"),
    );
    w.web.set("delta.example.test", "/c.json", catalog(&[w.url("delta.example.test", "/mcp/server-card")]));

    let cards = [
        w.url("alpha.example.test", "/mcp/server-card"),
        w.url("bravo.example.test", "/apps/tasks/card"),
        w.url("charlie.example.test", "/mcp/server-card"),
        w.url("delta.example.test", "/mcp/server-card"),
    ];
    let report = w.crawl(&cards.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(
        w.index(),
        [
            w.line("alpha.example.test", "/mcp/server-card", "well-known", ("alpha.example.test", WELL_KNOWN), 0),
            w.line("bravo.example.test", "/apps/tasks/card", "card-link", ("catalogs.example.test", "/bravo.json"), 0),
            w.line(
                "charlie.example.test",
                "/mcp/server-card",
                "website-page",
                ("charlie.example.test", "/cat/maps.json"),
                0
            ),
        ]
    );
    assert!(why(&report, &cards[3]).contains("links no AI catalog"), "{report:#?}");
    assert!(w.web.paths("delta.example.test").iter().all(|p| p != "/c.json"), "a script's link is never followed");
    // What the publisher says is kept as its words, apart from the proof.
    let alpha = w.store.get(&cards[0]).unwrap().unwrap();
    assert_eq!(
        (alpha.card.title.as_deref(), alpha.origin.as_str()),
        (Some("Alpha Notes"), w.url("alpha.example.test", "").as_str())
    );
    assert_eq!(alpha.proof.checked_at, T0);
    // Every request said who it was.
    for seen in w.web.seen() {
        assert!(seen.user_agent.starts_with("OpenBot/") && seen.user_agent.contains("(+https://"), "{seen:?}");
    }
}

#[tokio::test]
async fn a_copy_in_someone_elses_catalog_is_a_hint_never_proof() {
    let w = World::new().await;
    w.web.publish("alpha.example.test", &App::new("test.alpha/notes", "Alpha Notes", "Notes"));
    // Bravo serves a card but lists it nowhere of its own.
    let bravo = App::new("test.bravo/tasks", "Bravo Tasks", "Tasks");
    w.web.set("bravo.example.test", "/mcp/server-card", bravo.page(&w.web, "bravo.example.test"));
    // Mallory's catalog lists both.
    let alpha_card = w.url("alpha.example.test", "/mcp/server-card");
    let bravo_card = w.url("bravo.example.test", "/mcp/server-card");
    w.web.set("mallory.example.test", WELL_KNOWN, catalog(&[alpha_card.clone(), bravo_card.clone()]));

    let report = w.crawl(&[&format!("mallory.example.test:{}", w.web.port)]).await;
    assert_eq!(report.seeds[0].cards, [alpha_card.clone(), bravo_card.clone()]);
    assert_eq!(
        w.index(),
        [w.line("alpha.example.test", "/mcp/server-card", "well-known", ("alpha.example.test", WELL_KNOWN), 0)]
    );
    assert!(why(&report, &bravo_card).contains("no catalog of its publisher lists it"), "{report:#?}");
}

#[tokio::test]
async fn seeds_of_every_kind_lead_to_the_cards() {
    let w = World::new().await;
    for host in ["a.example.test", "b.example.test", "c.example.test", "d.example.test", "f.example.test"] {
        w.web.publish(host, &App::new(&format!("test/{host}"), host, "An app"));
    }
    w.web.set("b.example.test", "/app", Page::html("<link rel=ai-catalog href=/.well-known/ai-catalog.json>"));
    w.web.set(
        "c.example.test",
        "/home",
        Page::html("<p>home</p>").header("link", "</.well-known/ai-catalog.json>; rel=\"ai-catalog\""),
    );
    let report = w
        .crawl(&[
            &w.url("a.example.test", WELL_KNOWN),
            &w.url("b.example.test", "/app"),
            &w.url("c.example.test", "/home"),
            &w.url("d.example.test", "/mcp/server-card"),
            "http://e.example.test/mcp/server-card",
            // A domain (here with the test server's port) is its well-known catalog.
            &format!("f.example.test:{}", w.web.port),
        ])
        .await;
    assert_eq!(report.seeds.iter().map(|s| s.cards.len()).collect::<Vec<_>>(), [1, 1, 1, 1, 0, 1]);
    assert!(report.seeds[4].error.as_deref().unwrap_or_default().contains("https"), "{report:#?}");
    let expected: Vec<String> = ["a", "b", "c", "d", "f"]
        .iter()
        .map(|h| {
            let host = format!("{h}.example.test");
            w.line(&host, "/mcp/server-card", "well-known", (&host, WELL_KNOWN), 0)
        })
        .collect();
    assert_eq!(w.index(), expected);
}

#[tokio::test]
async fn noindex_keeps_a_card_out_and_takes_it_out_on_recheck() {
    let w = World::new().await;
    let app = App::new("test.alpha/notes", "Alpha Notes", "Notes");
    w.web.publish("alpha.example.test", &app);
    let shy = App::new("test.alpha/shy", "Shy", "Shy").at("/shy/card");
    w.web.set(
        "alpha.example.test",
        "/shy/card",
        shy.page(&w.web, "alpha.example.test").header("x-robots-tag", "noindex"),
    );
    w.web.set(
        "alpha.example.test",
        "/other/card",
        shy.page(&w.web, "alpha.example.test").header("x-robots-tag", "OpenBot: none"),
    );
    w.web.set(
        "alpha.example.test",
        "/theirs/card",
        shy.page(&w.web, "alpha.example.test").header("x-robots-tag", "otherbot: noindex"),
    );
    let cards =
        ["/mcp/server-card", "/shy/card", "/other/card", "/theirs/card"].map(|p| w.url("alpha.example.test", p));
    w.web.set("alpha.example.test", WELL_KNOWN, catalog(&cards));
    let report = w.crawl(&[&w.url("alpha.example.test", WELL_KNOWN)]).await;
    assert_eq!(
        w.index(),
        [
            w.line("alpha.example.test", "/mcp/server-card", "well-known", ("alpha.example.test", WELL_KNOWN), 0),
            w.line("alpha.example.test", "/theirs/card", "well-known", ("alpha.example.test", WELL_KNOWN), 0),
        ]
    );
    assert!(why(&report, &cards[1]).contains("noindex"));

    // The publisher opts out: the next check takes it out.
    w.web.set(
        "alpha.example.test",
        "/mcp/server-card",
        app.page(&w.web, "alpha.example.test").header("x-robots-tag", "noindex, nofollow"),
    );
    let report = w.recheck().await;
    assert!(matches!(outcome(&report, &cards[0]), Outcome::Removed { .. }), "{report:#?}");
    assert_eq!(
        w.index(),
        [w.line("alpha.example.test", "/theirs/card", "well-known", ("alpha.example.test", WELL_KNOWN), 0)]
    );
}

#[tokio::test]
async fn a_card_its_publisher_drops_goes_at_the_next_check() {
    let w = World::new().await;
    let one = App::new("test/one", "One", "First").at("/one/card");
    let two = App::new("test/two", "Two", "Second").at("/two/card");
    let host = "alpha.example.test";
    w.web.set(host, "/one/card", one.page(&w.web, host));
    w.web.set(host, "/two/card", two.page(&w.web, host));
    let cards = [w.url(host, "/one/card"), w.url(host, "/two/card")];
    w.web.set(host, WELL_KNOWN, catalog(&cards));
    w.crawl(&[&w.url(host, WELL_KNOWN)]).await;
    assert_eq!(w.index().len(), 2);

    w.web.set(host, WELL_KNOWN, catalog(&cards[..1]));
    w.advance(HOUR);
    let report = w.recheck().await;
    assert!(why(&report, &cards[1]).contains("does not list it"), "{report:#?}");
    assert_eq!(w.index(), [w.line(host, "/one/card", "well-known", (host, WELL_KNOWN), 0)]);
    // The proof of the other was renewed.
    assert_eq!(w.store.get(&cards[0]).unwrap().unwrap().proof.checked_at, T0 + HOUR);
    assert_eq!(w.store.get(&cards[0]).unwrap().unwrap().indexed_at, T0);

    // A catalog gone altogether (404) is an answer too.
    w.web.remove(host, WELL_KNOWN);
    w.recheck().await;
    assert_eq!(w.index(), Vec::<String>::new());
}

#[tokio::test]
async fn an_unreachable_catalog_keeps_the_entry_until_the_documented_limit() {
    let w = World::with(|c| c.rules.timeout = Duration::from_millis(700)).await;
    let host = "alpha.example.test";
    let app = App::new("test.alpha/notes", "Alpha Notes", "Notes");
    w.web.publish(host, &app);
    let card = w.url(host, "/mcp/server-card");
    w.crawl(&[&card]).await;
    let listing = catalog(std::slice::from_ref(&card));

    // A 503, a DNS failure, a timeout: each a failed check, none a removal.
    let kept = |r: &Report| match outcome(r, &card) {
        Outcome::Kept { failures, .. } => *failures,
        other => panic!("{other:?}"),
    };
    w.web.set(host, WELL_KNOWN, Page::status(503));
    w.advance(HOUR);
    assert_eq!(kept(&w.recheck().await), 1);
    assert_eq!(w.index(), [w.line(host, "/mcp/server-card", "well-known", (host, WELL_KNOWN), 1)]);
    w.names.fail(host);
    w.advance(HOUR);
    assert_eq!(kept(&w.recheck().await), 2);
    w.names.heal(host);
    w.web.set(host, WELL_KNOWN, listing.clone().delay(Duration::from_millis(1500)));
    w.advance(HOUR);
    let report = w.recheck().await;
    assert_eq!(kept(&report), 3, "{report:#?}");
    let entry = w.store.get(&card).unwrap().unwrap();
    assert_eq!(entry.failures.since, Some(T0 + HOUR));
    assert!(entry.failures.last_error.unwrap_or_default().contains("could not be checked"));
    // The proof time is the last check that found it listed.
    assert_eq!(entry.proof.checked_at, T0);

    // Reached again: the failures are forgotten.
    w.web.set(host, WELL_KNOWN, listing.clone());
    w.advance(HOUR);
    w.recheck().await;
    assert_eq!(w.index(), [w.line(host, "/mcp/server-card", "well-known", (host, WELL_KNOWN), 0)]);

    // Down for good: kept through REMOVE_AFTER_FAILURES checks within the
    // window, removed at the first failed check past it.
    w.web.set(host, WELL_KNOWN, Page::status(500));
    for n in 1..=REMOVE_AFTER_FAILURES + 2 {
        w.advance(HOUR);
        assert_eq!(kept(&w.recheck().await), n);
    }
    let first_failure = T0 + 5 * HOUR;
    assert_eq!(w.store.get(&card).unwrap().unwrap().failures.since, Some(first_failure));
    w.clock.0.store(first_failure + REMOVE_AFTER_SECS - 1, Ordering::SeqCst);
    assert_eq!(kept(&w.recheck().await), REMOVE_AFTER_FAILURES + 3);
    w.clock.0.store(first_failure + REMOVE_AFTER_SECS, Ordering::SeqCst);
    let report = w.recheck().await;
    assert!(matches!(outcome(&report, &card), Outcome::Removed { .. }), "{report:#?}");
    assert_eq!(w.index(), Vec::<String>::new());

    // A card never indexed is not indexed while its catalog cannot be read.
    let report = w.crawl(&[&card]).await;
    assert!(why(&report, &card).contains("could not be checked"));
    assert_eq!(w.index(), Vec::<String>::new());
}

#[tokio::test]
async fn robots_txt_rules_of_every_kind_are_obeyed() {
    let w = World::new().await;
    let hosts = ["disallowed", "ours", "down", "absent", "moved", "wellknown", "anchored", "star"];
    for h in hosts {
        let host = format!("{h}.example.test");
        w.web.publish(&host, &App::new(&format!("test/{h}"), h, "An app"));
    }
    let robots = |h: &str, text: &str| w.web.set(&format!("{h}.example.test"), "/robots.txt", Page::text(text));
    robots("disallowed", "User-agent: *\nAllow: /\n\nUser-agent: OpenBot\nDisallow: /mcp/\n");
    robots("ours", "User-agent: *\nDisallow: /\n\nUser-agent: openbot/9\nAllow: /\n");
    w.web.set("down.example.test", "/robots.txt", Page::status(503));
    // absent: 404.
    w.web.set("moved.example.test", "/robots.txt", Page::redirect(&w.url("rules.example.test", "/moved.txt")));
    w.web.set("rules.example.test", "/moved.txt", Page::text("User-agent: *\nDisallow: /mcp/server-card\n"));
    robots("wellknown", "User-agent: OpenBot\nDisallow: /.well-known/\n");
    robots("anchored", "User-agent: *\nDisallow: /mcp/server-card$\n");
    robots("star", "User-agent: *\nDisallow: /*card\nAllow: /.well-known/*.json$\n");
    let card = |h: &str| w.url(&format!("{h}.example.test"), "/mcp/server-card");
    // A hub lists every card, so each is a candidate whatever its robots.txt says.
    let cards: Vec<String> = hosts.iter().map(|h| card(h)).collect();
    w.web.set("hub.example.test", "/all.json", catalog(&cards));
    let report = w.crawl(&[&w.url("hub.example.test", "/all.json")]).await;
    let line = |h: &str| {
        let host = format!("{h}.example.test");
        w.line(&host, "/mcp/server-card", "well-known", (&host, WELL_KNOWN), 0)
    };
    assert_eq!(w.index(), [line("absent"), line("ours")]);
    for h in ["disallowed", "moved", "anchored", "star"] {
        assert!(why(&report, &card(h)).contains("disallows"), "{h}: {report:#?}");
    }
    assert!(why(&report, &card("wellknown")).contains("disallows"), "{report:#?}");
    assert!(why(&report, &card("down")).contains("robots.txt of"), "{report:#?}");
    // A 5xx robots.txt: nothing else on that host was asked for.
    assert_eq!(w.web.paths("down.example.test"), ["/robots.txt"]);
    // Disallowed paths were never fetched; robots.txt was fetched once per host.
    assert_eq!(w.web.paths("disallowed.example.test"), ["/robots.txt"]);
    assert_eq!(w.web.paths("wellknown.example.test"), ["/robots.txt", "/mcp/server-card"]);
    assert_eq!(w.web.paths("moved.example.test"), ["/robots.txt"]);
    assert_eq!(w.web.paths("rules.example.test"), ["/moved.txt"]);
}

#[tokio::test]
async fn robots_txt_is_cached_for_a_day_at_most() {
    let w = World::new().await;
    let host = "alpha.example.test";
    w.web.publish(host, &App::new("test.alpha/notes", "Alpha Notes", "Notes"));
    w.web.set(host, "/robots.txt", Page::text("User-agent: *\nAllow: /\n"));
    let card = w.url(host, "/mcp/server-card");
    w.crawl(&[&card]).await;
    w.web.set(host, "/robots.txt", Page::text("User-agent: *\nDisallow: /\n"));
    w.advance(23 * HOUR);
    w.recheck().await;
    assert_eq!(w.index().len(), 1, "a copy of less than a day is used");
    assert_eq!(w.web.paths(host).iter().filter(|p| *p == "/robots.txt").count(), 1);
    w.advance(2 * HOUR);
    let report = w.recheck().await;
    assert!(matches!(outcome(&report, &card), Outcome::Removed { .. }), "{report:#?}");
    assert_eq!(w.index(), Vec::<String>::new());
    assert_eq!(w.web.paths(host).iter().filter(|p| *p == "/robots.txt").count(), 2);
}

#[tokio::test]
async fn redirects_are_followed_five_times_checked_each_time_and_no_more() {
    let w = World::new().await;
    let host = "alpha.example.test";
    let app = App::new("test.alpha/notes", "Alpha Notes", "Notes");
    w.web.set(host, "/card", app.page(&w.web, host));
    // /five/1 → … → /five/5 → /card: five redirects, across two hosts.
    for i in 1..=5 {
        let (next_host, next) =
            if i == 5 { (host, "/card".to_owned()) } else { ("hop.example.test", format!("/five/{}", i + 1)) };
        let this_host = if i == 1 { host } else { "hop.example.test" };
        w.web.set(this_host, &format!("/five/{i}"), Page::redirect(&w.url(next_host, &next)));
    }
    for i in 1..=6 {
        let next = if i == 6 { "/card".to_owned() } else { format!("/six/{}", i + 1) };
        w.web.set(host, &format!("/six/{i}"), Page::redirect(&w.url(host, &next)));
    }
    w.web.set(host, "/to-http", Page::redirect("http://alpha.example.test/card"));
    w.web.set(host, "/to-private", Page::redirect("https://10.0.0.9/card"));
    w.web.set(host, "/to-metadata", Page::redirect("https://169.254.169.254/latest/meta-data/"));
    w.names.set("inside.example.test", &["192.168.1.20".parse::<IpAddr>().unwrap()]);
    w.web.set(host, "/to-inside", Page::redirect("https://inside.example.test/card"));
    let cards: Vec<String> = ["/five/1", "/six/1", "/to-http", "/to-private", "/to-metadata", "/to-inside"]
        .iter()
        .map(|p| w.url(host, p))
        .collect();
    w.web.set(host, WELL_KNOWN, catalog(&cards));
    let report = w.crawl(&[&w.url(host, WELL_KNOWN)]).await;
    assert_eq!(w.index(), [w.line(host, "/five/1", "well-known", (host, WELL_KNOWN), 0)]);
    assert!(why(&report, &cards[1]).contains("redirects more than 5 times"), "{report:#?}");
    assert!(why(&report, &cards[2]).contains("only https"), "{report:#?}");
    assert!(why(&report, &cards[3]).contains("loopback or private"), "{report:#?}");
    assert!(why(&report, &cards[4]).contains("link-local or cloud-metadata"), "{report:#?}");
    assert!(why(&report, &cards[5]).contains("loopback or private"), "{report:#?}");
    // Each redirect's host read its robots.txt and was paced like any other.
    assert_eq!(w.web.paths("hop.example.test")[0], "/robots.txt");
}

#[tokio::test]
async fn oversized_and_slow_answers_are_refused() {
    let w = World::with(|c| c.rules.timeout = Duration::from_millis(700)).await;
    let host = "alpha.example.test";
    let app = App::new("test.alpha/notes", "Alpha Notes", "Notes");
    let card = app.card(&w.web, host).to_string();
    let padded = |len: usize| {
        let mut body = card.clone().into_bytes();
        body.resize(len, b' ');
        Page::of("application/mcp-server-card+json", body)
    };
    w.web.set(host, "/exact", padded(1 << 20));
    w.web.set(host, "/over", padded((1 << 20) + 1));
    w.web.set(host, "/slow", app.page(&w.web, host).delay(Duration::from_millis(1500)));
    let cards: Vec<String> = ["/exact", "/over", "/slow"].iter().map(|p| w.url(host, p)).collect();
    w.web.set(host, WELL_KNOWN, catalog(&cards));
    let report = w.crawl(&[&w.url(host, WELL_KNOWN)]).await;
    assert_eq!(w.index(), [w.line(host, "/exact", "well-known", (host, WELL_KNOWN), 0)]);
    assert!(why(&report, &cards[1]).contains("larger than 1048576 bytes"), "{report:#?}");
    assert!(why(&report, &cards[2]).contains("cannot fetch"), "{report:#?}");

    // An indexed card that turns slow is kept, with the failure counted.
    w.web.set(host, "/exact", padded(1 << 20).delay(Duration::from_millis(1500)));
    let report = w.recheck().await;
    assert!(matches!(outcome(&report, &cards[0]), Outcome::Kept { failures: 1, .. }), "{report:#?}");
    assert_eq!(w.index(), [w.line(host, "/exact", "well-known", (host, WELL_KNOWN), 1)]);
    // One that turns oversized answered: it goes.
    w.web.set(host, "/exact", padded((1 << 20) + 1));
    w.recheck().await;
    assert_eq!(w.index(), Vec::<String>::new());
}

#[tokio::test]
async fn a_publisher_whose_name_resolves_to_a_private_address_is_refused() {
    let w = World::new().await;
    for (host, ip) in [
        ("private.example.test", "10.0.0.7"),
        ("metadata.example.test", "169.254.169.254"),
        ("v6.example.test", "fd00::7"),
    ] {
        w.names.set(host, &[ip.parse::<IpAddr>().unwrap()]);
        w.web.publish(host, &App::new("test/private", "Private", "Inside"));
    }
    let seeds: Vec<String> =
        ["private", "metadata", "v6"].iter().map(|h| w.url(&format!("{h}.example.test"), "/mcp/server-card")).collect();
    let report = w.crawl(&seeds.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(w.index(), Vec::<String>::new());
    let errors: Vec<String> = report.seeds.iter().map(|s| s.error.clone().unwrap_or_default()).collect();
    assert!(errors[0].contains("loopback or private"), "{errors:?}");
    assert!(errors[1].contains("link-local or cloud-metadata"), "{errors:?}");
    assert!(errors[2].contains("loopback or private"), "{errors:?}");
    // Not one request reached a server for these names.
    assert!(w.web.seen().is_empty(), "{:?}", w.web.seen());
    // A literal private address is refused before any lookup.
    let report = w.crawl(&["https://10.1.2.3/mcp/server-card"]).await;
    assert!(report.seeds[0].error.as_deref().unwrap_or_default().contains("loopback or private"));
    // Without the test-only allowance, loopback is refused like any local address.
    let strict = World::with(|c| c.rules.test_only = None).await;
    strict.web.publish("alpha.example.test", &App::new("test/a", "A", "A"));
    let report = strict.crawl(&[&strict.url("alpha.example.test", "/mcp/server-card")]).await;
    assert!(report.seeds[0].error.as_deref().unwrap_or_default().contains("loopback or private"), "{report:#?}");
    assert_eq!(strict.index(), Vec::<String>::new());
}

#[tokio::test]
async fn one_request_at_a_time_per_host_with_its_delay_and_hosts_at_once() {
    let w = World::with(|c| c.min_delay = Duration::from_millis(100)).await;
    for host in ["slow.example.test", "fast.example.test"] {
        let cards: Vec<String> = (0..4).map(|i| w.url(host, &format!("/apps/{i}/card"))).collect();
        for i in 0..4 {
            let app = App::new(&format!("test/{i}"), &format!("App {i}"), "An app").at(&format!("/apps/{i}/card"));
            w.web.set(host, &app.card_path, app.page(&w.web, host).delay(Duration::from_millis(20)));
        }
        w.web.set(host, WELL_KNOWN, catalog(&cards));
    }
    w.web.set("slow.example.test", "/robots.txt", Page::text("User-agent: *\nCrawl-delay: 0.3\n"));
    w.crawl(&[&w.url("slow.example.test", WELL_KNOWN), &w.url("fast.example.test", WELL_KNOWN)]).await;
    assert_eq!(w.index().len(), 8);
    let seen = w.web.seen();
    for (host, delay) in [("slow.example.test", 300), ("fast.example.test", 100)] {
        let mine: Vec<_> = seen.iter().filter(|s| s.host == host).collect();
        // robots, the catalog, four cards (the catalog is the proof: fetched once).
        assert_eq!(mine.len(), 6, "{host}: {mine:?}");
        for pair in mine.windows(2) {
            let gap = pair[1].start.saturating_duration_since(pair[0].end);
            assert!(pair[1].start >= pair[0].end, "{host}: two requests at once");
            // After robots.txt the pause is the host's own delay; before, the minimum.
            let least = if pair[0].path == "/robots.txt" { 100 } else { delay };
            assert!(gap >= Duration::from_millis(least - 5), "{host}: {gap:?} after {}", pair[0].path);
        }
    }
    // The two hosts were crawled at the same time, not one after the other.
    let span = |host: &str| {
        let mine: Vec<_> = seen.iter().filter(|s| s.host == host).collect();
        (mine[0].start, mine[mine.len() - 1].end)
    };
    let (slow, fast) = (span("slow.example.test"), span("fast.example.test"));
    assert!(fast.0 < slow.1 && slow.0 < fast.1, "the hosts' crawls overlap");
}
