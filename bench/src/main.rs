//! `bench`: our server against a real PocketBase 0.40.6, side by side, in one run.
//!
//! `cargo run --release -p bench` seeds both servers with the same records,
//! drives the same workloads at the same concurrency from one load generator,
//! alternating the servers round by round, and writes the table to
//! `docs/PERFORMANCE.md`. `cargo run -p bench -- --smoke` does the same with
//! tiny sizes in seconds and exits non-zero unless both servers started and
//! every workload answered without an error (the test suite runs it).
//!
//! Both servers (and the fan-out's floor, `floor`) are child processes on
//! loopback (ports 18690-18699), so each one's memory is its own; the
//! children are stopped on every exit path.
//! The benchmark reads and writes our app only through `a2app_core` and HTTP,
//! never behind the store's back.

mod baseline;
mod dataset;
mod fanout;
mod floor;
mod http1;
mod load;
mod ours;
mod peer;
mod pocketbase;
mod report;
mod workload;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};
use dataset::Rng;
use load::{MakeRequest, Sample};
use report::{Growth, Report, Row};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use workload::{Target, create, filter, list, view, write_request};

/// The same allocator as `agent-app`: the `serve` mode is its server.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "bench", about = "Benchmark our server against a real PocketBase 0.40.6")]
#[command(args_conflicts_with_subcommands = true)]
struct Cli {
    #[command(subcommand)]
    internal: Option<Internal>,
    /// A few seconds: both servers start and every workload answers without errors.
    #[arg(long)]
    smoke: bool,
    /// Card counts at which both servers are compared (view, list, filter; the
    /// largest also create and realtime). Default 5000,100000.
    #[arg(long, value_delimiter = ',')]
    sizes: Option<Vec<u64>>,
    /// Card counts at which ours alone is measured (view, indexed filter).
    /// Default 10000,100000,1000000.
    #[arg(long, value_delimiter = ',')]
    growth: Option<Vec<u64>>,
    /// Seconds per round (one server, one workload). Default 5.
    #[arg(long)]
    duration: Option<f64>,
    /// Rounds per server and workload, alternating the servers. Default 2.
    #[arg(long)]
    rounds: Option<u32>,
    /// Concurrent requests of the load generator.
    #[arg(long, default_value_t = 32)]
    concurrency: usize,
    /// Realtime subscribers of the fan-out workload.
    #[arg(long, default_value_t = 100)]
    subscribers: usize,
    /// Timed creates per round and server in the fan-out workload (and as many
    /// again seen by a single subscriber, the reference, and as many with no
    /// pause between them; the floor gets the spaced and the no-pause sets).
    /// Default 20.
    #[arg(long)]
    fanout_reps: Option<usize>,
    /// Where to write the markdown report (default: docs/PERFORMANCE.md, not in --smoke).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the report only; write no file.
    #[arg(long)]
    no_write: bool,
    /// A line shown at the top of the report (e.g. the conditions of the run).
    #[arg(long)]
    note: Option<String>,
    /// Keep the work directory (databases, logs) after the run.
    #[arg(long)]
    keep: bool,
}

#[derive(Subcommand)]
enum Internal {
    /// Serve an app as `agent-app serve` does; stops on EOF on stdin.
    #[command(hide = true)]
    Serve { dir: PathBuf, addr: String },
    /// Seed an app from FROM to TO cards through `a2app_core`.
    #[command(hide = true)]
    Seed { dir: PathBuf, from: u64, to: u64 },
    /// The fan-out's floor: a minimal broadcaster (see `floor`); stops on EOF on stdin.
    #[command(hide = true)]
    Floor { addr: String },
}

/// Resolved settings of a run.
struct Config {
    smoke: bool,
    sizes: Vec<u64>,
    growth: Vec<u64>,
    duration: Duration,
    warmup: Duration,
    rounds: u32,
    concurrency: usize,
    subscribers: usize,
    fanout_reps: usize,
    /// Ours, PocketBase, the fan-out floor.
    ports: (u16, u16, u16),
    out: Option<PathBuf>,
    note: Option<String>,
    keep: bool,
}

impl Config {
    fn resolve(cli: Cli, root: &Path) -> Result<Config> {
        let smoke = cli.smoke;
        let sizes = cli.sizes.unwrap_or(if smoke { vec![200, 600] } else { vec![5_000, 100_000] });
        let growth = cli.growth.unwrap_or(if smoke { vec![200, 600] } else { vec![10_000, 100_000, 1_000_000] });
        if sizes.is_empty() || sizes.iter().chain(&growth).any(|&n| n < dataset::CARDS_PER_LIST) {
            bail!("--sizes needs at least one size, and every size must be at least {}", dataset::CARDS_PER_LIST);
        }
        let duration = Duration::from_secs_f64(cli.duration.unwrap_or(if smoke { 0.3 } else { 5.0 }));
        let rounds = cli.rounds.unwrap_or(2).max(1);
        let fanout_reps = cli.fanout_reps.unwrap_or(if smoke { 3 } else { 20 });
        if cli.concurrency == 0 || cli.subscribers == 0 || fanout_reps == 0 || duration.is_zero() {
            bail!("--concurrency, --subscribers, --fanout-reps and --duration must be positive");
        }
        let out = match (cli.no_write, cli.out) {
            (true, _) => None,
            (false, Some(p)) => Some(p),
            (false, None) if smoke => None,
            (false, None) => Some(root.join("docs/PERFORMANCE.md")),
        };
        Ok(Config {
            smoke,
            sizes,
            growth,
            duration,
            warmup: (duration / 4).min(Duration::from_secs(1)),
            rounds,
            concurrency: cli.concurrency,
            subscribers: cli.subscribers,
            fanout_reps,
            // The smoke run has its own ports, so it never meets a full run.
            ports: if smoke { (18692, 18693, 18695) } else { (18690, 18691, 18694) },
            out,
            note: cli.note,
            keep: cli.keep,
        })
    }
}

fn main() -> ExitCode {
    // The workspace's reqwest is built with TLS but no crypto provider of its
    // own (see docs/decisions/0003): building any client needs one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    let internal = match &cli.internal {
        Some(Internal::Serve { dir, addr }) => Some(ours::serve(dir, addr)),
        Some(Internal::Seed { dir, from, to }) => Some(ours::seed(dir, *from, *to)),
        Some(Internal::Floor { addr }) => Some(floor::serve(addr)),
        None => None,
    };
    if let Some(result) = internal {
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(2)
            }
        };
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap_or(Path::new(".")).to_path_buf();
    let config = match Config::resolve(cli, &root) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e:#}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // Every run is bounded; Ctrl-C and SIGTERM end it through the same path,
    // so the children's guards stop them.
    let limit = if config.smoke { Duration::from_secs(300) } else { Duration::from_secs(3 * 3600) };
    let outcome = runtime.block_on(async {
        tokio::select! {
            r = tokio::time::timeout(limit, run(&config, &root)) => {
                r.unwrap_or_else(|_| Err(anyhow::anyhow!("the benchmark did not finish within {limit:?}")))
            }
            _ = interrupted() => Err(anyhow::anyhow!("interrupted")),
        }
    });
    match outcome {
        Ok(report) if report.errors() == 0 => ExitCode::SUCCESS,
        Ok(report) => {
            eprintln!(
                "bench: {} requests failed; first: {}",
                report.errors(),
                report.first_error().unwrap_or_else(|| "(no message)".into())
            );
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("bench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Starts per server and table size; the start-up time reported is their
/// median. One start is too noisy to compare here: spawning any process on
/// this shared VM, even the floor, now and then takes 15 to 30 ms longer.
const STARTS: usize = 5;

/// Starts a server [`STARTS`] times, stopping each but the last, and returns
/// the last one with the median of the start-up times.
async fn started<S>(
    mut start: impl AsyncFnMut() -> Result<S>,
    startup: impl Fn(&S) -> Duration,
) -> Result<(S, Duration)> {
    let mut times = Vec::with_capacity(STARTS);
    loop {
        let server = start().await?;
        times.push(startup(&server));
        if times.len() == STARTS {
            return Ok((server, load::quantile(&times, 0.5)));
        }
        // A server's child stops, and is waited for, when it is dropped.
        tokio::task::block_in_place(|| drop(server));
    }
}

/// A progress line on stderr, with the time since the run started.
fn say(message: impl std::fmt::Display) {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let at = START.get_or_init(Instant::now).elapsed();
    eprintln!("bench [{:6.1} s] {message}", at.as_secs_f64());
}

async fn interrupted() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => drop(s.recv().await),
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
}

/// The run's scratch directory under the target directory (a real disk, not
/// a tmpfs, so commits pay for their fsync); removed unless kept.
struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if self.keep {
            eprintln!("bench: the work directory is kept: {}", self.path.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Both servers' state between checkpoints.
struct Peers {
    exe: PathBuf,
    ours_dir: PathBuf,
    pb: pocketbase::Instance,
    /// Seeded cards (not counting the create workloads' cards).
    ours_cards: u64,
    pb_cards: u64,
}

async fn run(config: &Config, root: &Path) -> Result<Report> {
    let exe = std::env::current_exe().context("cannot find the benchmark's own executable")?;
    // target/<profile>/bench → target/
    let target =
        exe.parent().and_then(Path::parent).context("the executable is not in a target directory")?.to_path_buf();
    let mut work = WorkDir { path: target.join("bench-work").join(format!("run-{}", std::process::id())), keep: true };
    let _ = std::fs::remove_dir_all(&work.path);
    std::fs::create_dir_all(&work.path)?;
    let result = run_in(config, root, &exe, &target, &work.path).await;
    work.keep = config.keep || result.is_err();
    result
}

async fn run_in(config: &Config, root: &Path, exe: &Path, target: &Path, work: &Path) -> Result<Report> {
    let started = Instant::now();
    let mut report = Report {
        title_note: config.note.clone(),
        date: jiff::Timestamp::now().strftime("%Y-%m-%d %H:%M UTC").to_string(),
        command: command_line(),
        machine: machine(),
        settings: format!(
            "concurrency {}, {} rounds of {:.1} s per server and workload (servers alternating), {} realtime subscribers",
            config.concurrency,
            config.rounds,
            config.duration.as_secs_f64(),
            config.subscribers
        ),
        ..Report::default()
    };
    say("preparing both servers");
    let example = root.join("examples/kanban");
    let pb_bin = tokio::task::block_in_place(|| pocketbase::ensure_binary(root, target, &work.join("pip.log")))?;
    // What a user installs: `agent-app` of this build's profile beside the
    // benchmark (the same code as the `serve` mode measured), and PocketBase's.
    let agent_app = exe.with_file_name("agent-app");
    report.machine.push(("agent-app binary".into(), binary_size(&agent_app)));
    report.machine.push(("PocketBase binary".into(), binary_size(&pb_bin)));
    let ours_dir = work.join("ours");
    ours::prepare_dir(&example, &ours_dir)?;
    let pb = tokio::task::block_in_place(|| {
        pocketbase::Instance::create(&pb_bin, &work.join("pocketbase"), &example.join("schema.json"))
    })?;
    let mut peers = Peers { exe: exe.to_path_buf(), ours_dir, pb, ours_cards: 0, pb_cards: 0 };
    let client = reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(config.concurrency * 2)
        .connect_timeout(Duration::from_secs(2))
        .timeout(load::REQUEST_TIMEOUT)
        .build()?;

    let mut checkpoints: Vec<u64> = config.sizes.iter().chain(&config.growth).copied().collect();
    checkpoints.sort_unstable();
    checkpoints.dedup();
    let largest = config.sizes.iter().copied().max().unwrap_or(0);
    for &n in &checkpoints {
        let at = Checkpoint { cards: n, compare: config.sizes.contains(&n), largest: n == largest };
        checkpoint(config, &client, &mut peers, &mut report, work, at).await?;
    }
    report.notes.push(format!(
        "Seeding: ours through `a2app_core::records::create` (the full write path: guard, ref checks, read-back, receipt, \
         audit), 256 concurrent tasks, before each start; PocketBase by writing its `pb_data/data.db` directly while \
         stopped (same ids and values). Each card belongs to a list of {} cards, so the indexed filter matches the same \
         number of records at every size.",
        dataset::CARDS_PER_LIST
    ));
    report.notes.push(
        "PocketBase gets the schema's indexes plus one on `created`, which our store creates for every entity, so both \
         sort by `created` through an index. PocketBase runs with its defaults (request logs on)."
            .into(),
    );
    report.notes.push(format!(
        "Ours writes with the agent token and a unique `Idempotency-Key` per create; PocketBase's rules are all \"\" \
         (anyone). The load generator runs on the same two cores: a minimal HTTP/1.1 client (`bench/src/http1.rs`), \
         one keep-alive connection per concurrent request, all on one thread (as `wrk -t1`); the fan-out's 100 \
         subscribers read the SSE stream from plain sockets, all on one thread of their own, and match events on \
         their bytes. The fan-out under load drives creates for a round's duration while the subscribers listen; \
         its time runs until every subscriber received every created record (a missing event is an error), so \
         its rate counts a create once all {} saw it. Total time of this run: {:.0} s.",
        config.subscribers,
        started.elapsed().as_secs_f64()
    ));
    report.machine.push(("load average at end".into(), loadavg()));
    let text = report.render();
    println!("{text}");
    if let Some(out) = &config.out {
        std::fs::write(out, &text).with_context(|| format!("cannot write {}", out.display()))?;
        eprintln!("bench: wrote {}", out.display());
    }
    Ok(report)
}

/// One table size of the run.
#[derive(Clone, Copy)]
struct Checkpoint {
    cards: u64,
    /// Both servers (else ours alone, for growth).
    compare: bool,
    /// The largest compared size: the write workloads run here.
    largest: bool,
}

/// Seeds the servers up to `at.cards` cards, starts them, measures, stops them.
async fn checkpoint(
    config: &Config,
    client: &reqwest::Client,
    peers: &mut Peers,
    report: &mut Report,
    work: &Path,
    at: Checkpoint,
) -> Result<()> {
    let Checkpoint { cards: n, compare, largest } = at;
    say(format!("{} cards{}", report::count(n), if compare { " (both servers)" } else { " (ours alone)" }));
    if peers.ours_cards < n {
        let new = n - peers.ours_cards;
        let timeout = Duration::from_secs(120) + Duration::from_millis(5 * new);
        let log = work.join("seed.log");
        let (exe, dir, from) = (peers.exe.clone(), peers.ours_dir.clone(), peers.ours_cards);
        let took = tokio::task::spawn_blocking(move || ours::run_seed(&exe, &dir, from, n, &log, timeout)).await??;
        say(format!(
            "  seeded ours {} → {} cards in {:.1} s ({:.0}/s)",
            report::count(from),
            report::count(n),
            took.as_secs_f64(),
            new as f64 / took.as_secs_f64()
        ));
        peers.ours_cards = n;
    }
    if compare && peers.pb_cards < n {
        let from = peers.pb_cards;
        tokio::task::block_in_place(|| peers.pb.seed(from, n))?;
        peers.pb_cards = n;
    }

    say("  starting the servers");
    let ours_log = work.join("ours.log");
    let (mut ours, ours_startup) = started(
        async || ours::start(client, &peers.exe, &peers.ours_dir, config.ports.0, &ours_log).await,
        |s| s.startup,
    )
    .await?;
    report.ours.startups.push((n, ours_startup));
    let mut pb = if compare {
        let (server, took) = started(async || peers.pb.start(client, config.ports.1).await, |s| s.startup).await?;
        report.pb.startups.push((n, took));
        Some(server)
    } else {
        None
    };
    tokio::time::sleep(if config.smoke { Duration::from_millis(200) } else { Duration::from_secs(1) }).await;
    if report.ours.idle_kib.is_none() {
        report.ours.idle_kib = Some((peer::memory(ours.child.pid())?.rss_kib, n));
    }
    if let Some(pb) = &pb
        && report.pb.idle_kib.is_none()
    {
        report.pb.idle_kib = Some((peer::memory(pb.child.pid())?.rss_kib, n));
    }

    let ours_t = Target { url: ours.url.clone(), token: Some(ours.token.clone()) };
    let pb_t = pb.as_ref().map(|s| Target { url: s.url.clone(), token: None });
    let targets: Vec<&Target> = std::iter::once(&ours_t).chain(pb_t.as_ref()).collect();
    let cards = n;
    let lists = dataset::full_lists(n);
    for t in &targets {
        workload::probe(client, t, cards, lists).await?;
    }
    say("  view, list, filter");
    let views = measure(config, &targets, |t| view(t, cards)).await;
    let lists_w = if compare { Some(measure(config, &targets, list).await) } else { None };
    let filters = measure(config, &targets, |t| filter(t, lists)).await;
    if config.growth.contains(&n) {
        report.growth.push(Growth {
            records: n,
            startup: ours_startup,
            view: views[0].clone(),
            filter: filters[0].clone(),
        });
    }
    if let [ours_s, pb_s] = &views[..] {
        report.rows.push(Row {
            label: format!("view one card by id ({} cards)", report::count(n)),
            fanout: false,
            ours: ours_s.clone(),
            pb: pb_s.clone(),
        });
    }
    if let Some([ours_s, pb_s]) = lists_w.as_deref() {
        report.rows.push(Row {
            label: format!("list perPage=20 sort=-created, with totals ({} cards)", report::count(n)),
            fanout: false,
            ours: ours_s.clone(),
            pb: pb_s.clone(),
        });
    }
    if let [ours_s, pb_s] = &filters[..] {
        report.rows.push(Row {
            label: format!(
                "list with indexed filter list=\"…\" ({} cards, {} per list)",
                report::count(n),
                dataset::CARDS_PER_LIST
            ),
            fanout: false,
            ours: ours_s.clone(),
            pb: pb_s.clone(),
        });
    }
    if compare && largest {
        say("  raw SQLite commits, then create");
        let raw_dir = work.join("raw-sqlite");
        let duration = config.duration * config.rounds;
        let raw = tokio::task::spawn_blocking(move || baseline::single_row_commits(&raw_dir, duration)).await??;
        let keys = Arc::new(AtomicU64::new(0));
        let before = card_counts(client, &targets).await?;
        let (mut creates, stored) = measure_counted(config, &targets, |t| create(t, lists, &keys)).await;
        // Every create answered 2xx must be a stored card, on both servers.
        for ((sample, (before, after)), answered) in
            creates.iter_mut().zip(before.iter().zip(card_counts(client, &targets).await?)).zip(stored)
        {
            let made = after.saturating_sub(*before);
            if made != answered {
                sample.fail(format!("{answered} creates answered 2xx, but {made} cards were stored"));
            }
        }
        if let [ours_s, pb_s] = &creates[..] {
            report.raw_sqlite = Some((raw.rate, ours_s.throughput()));
            report.idle_commit = Some(raw.idle_commit);
            report.rows.push(Row {
                label: "create a valid card (ours: token, Idempotency-Key, full write path)".into(),
                fanout: false,
                ours: ours_s.clone(),
                pb: pb_s.clone(),
            });
        }
        say("  realtime fan-out");
        let mut floor = floor::start(client, &peers.exe, config.ports.2, &work.join("floor.log")).await?;
        let floor_t = Target { url: floor.url.clone(), token: None };
        let fanout = fanout_rounds(config, &targets, &floor_t, lists, &keys).await;
        tokio::task::block_in_place(|| floor.child.stop(Duration::from_secs(10)));
        let Fanout { once: fan, firsts, alone, back_to_back, streamed, floor_spaced, floor_firsts, floor_back_to_back } =
            fanout?;
        // Each first arrival sits at the same index as its create's last one.
        let spread = |s: &Sample, f: &[Duration]| {
            let gaps: Vec<Duration> = s.latencies.iter().zip(f).map(|(l, f)| l.saturating_sub(*f)).collect();
            load::quantile(&gaps, 0.5)
        };
        let spaced_parts = (!floor_firsts.is_empty())
            .then(|| (load::quantile(&floor_firsts, 0.5), spread(&floor_spaced, &floor_firsts)));
        report.fanout_floor =
            Some(report::FanoutFloor { spaced: floor_spaced, back_to_back: floor_back_to_back, spaced_parts });
        if let ([ours_s, pb_s], [ours_f, pb_f], [ours_a, pb_a]) = (&fan[..], &firsts[..], &alone[..]) {
            report.fanout_detail = Some(report::FanoutDetail {
                first: (load::quantile(ours_f, 0.5), load::quantile(pb_f, 0.5)),
                spread: (spread(ours_s, ours_f), spread(pb_s, pb_f)),
                alone: (load::quantile(ours_a, 0.5), load::quantile(pb_a, 0.5)),
            });
        }
        if let ([ours_s, pb_s], [ours_b, pb_b]) = (&fan[..], &back_to_back[..]) {
            report.rows.push(Row {
                label: format!(
                    "realtime fan-out: {} subscribers on cards/* see one create ({} ms between creates)",
                    config.subscribers,
                    fanout::SPACING.as_millis()
                ),
                fanout: true,
                ours: ours_s.clone(),
                pb: pb_s.clone(),
            });
            report.rows.push(Row {
                label: format!(
                    "realtime fan-out: {} subscribers see one create (each sent once all saw the one before, no pause)",
                    config.subscribers
                ),
                fanout: true,
                ours: ours_b.clone(),
                pb: pb_b.clone(),
            });
        }
        if let [ours_s, pb_s] = &streamed[..] {
            report.rows.push(Row {
                label: format!(
                    "realtime fan-out under load: creates at concurrency {}, each seen by all {} subscribers",
                    config.concurrency, config.subscribers
                ),
                fanout: false,
                ours: ours_s.clone(),
                pb: pb_s.clone(),
            });
        }
    }

    report.ours.peak_kib = report.ours.peak_kib.max(peer::memory(ours.child.pid())?.peak_kib);
    if let Some(pb) = &pb {
        report.pb.peak_kib = report.pb.peak_kib.max(peer::memory(pb.child.pid())?.peak_kib);
    }
    say("  stopping the servers");
    let stop = |child: &mut peer::Child| tokio::task::block_in_place(|| child.stop(Duration::from_secs(10)));
    stop(&mut ours.child);
    if let Some(pb) = &mut pb {
        stop(&mut pb.child);
    }
    Ok(())
}

/// Runs one workload on every target: a warm-up each, then `rounds` rounds
/// alternating the targets. Returns one merged sample per target.
async fn measure(config: &Config, targets: &[&Target], make: impl Fn(&Target) -> MakeRequest) -> Vec<Sample> {
    measure_counted(config, targets, make).await.0
}

/// [`measure`], and per server how many requests were answered 2xx in all,
/// the warm-up's included (what a create workload must have stored).
async fn measure_counted(
    config: &Config,
    targets: &[&Target],
    make: impl Fn(&Target) -> MakeRequest,
) -> (Vec<Sample>, Vec<u64>) {
    let makers: Vec<MakeRequest> = targets.iter().map(|t| make(t)).collect();
    let succeeded = |s: &Sample| (s.latencies.len() as u64).saturating_sub(s.errors);
    let mut ok = vec![0; targets.len()];
    for (i, (t, m)) in targets.iter().zip(&makers).enumerate() {
        let warm = load::drive(&t.url, m, config.concurrency, config.warmup, 7 + i as u64).await;
        ok[i] += succeeded(&warm);
    }
    let mut out = vec![Sample::default(); targets.len()];
    for round in 0..config.rounds {
        for (i, (t, m)) in targets.iter().zip(&makers).enumerate() {
            // The same seed for every server: the same ids in the same order.
            let s = load::drive(&t.url, m, config.concurrency, config.duration, 1000 + u64::from(round)).await;
            ok[i] += succeeded(&s);
            out[i].merge(s);
        }
    }
    (out, ok)
}

/// The number of cards each server holds now.
async fn card_counts(client: &reqwest::Client, targets: &[&Target]) -> Result<Vec<u64>> {
    let mut counts = Vec::with_capacity(targets.len());
    for t in targets {
        let url = format!("{}{}?perPage=1", t.url, workload::CARDS);
        let page: serde_json::Value = client.get(&url).send().await?.error_for_status()?.json().await?;
        counts.push(page["totalItems"].as_u64().with_context(|| format!("{url}: no totalItems in {page}"))?);
    }
    Ok(counts)
}

/// The fan-out workload: per round and server, connect the subscribers, time
/// `fanout_reps` creates one at a time (the latency sample), then drive
/// creates at the load concurrency for the round's duration and wait until
/// every subscriber saw every one (the throughput sample: its elapsed time
/// runs to the last event received, so a create counts once all saw it; a
/// missing event is an error). Errors are counted, not fatal.
async fn fanout_rounds(
    config: &Config,
    targets: &[&Target],
    floor: &Target,
    lists: u64,
    keys: &Arc<AtomicU64>,
) -> Result<Fanout> {
    // Streams stay open for the whole round: no total timeout on this client;
    // every wait is bounded inside `fanout`.
    let sse =
        reqwest::Client::builder().no_proxy().tcp_nodelay(true).connect_timeout(Duration::from_secs(2)).build()?;
    let mut out = vec![Sample::default(); targets.len()];
    let mut firsts = vec![Vec::new(); targets.len()];
    let mut streamed = vec![Sample::default(); targets.len()];
    let makers: Vec<MakeRequest> = targets.iter().map(|t| create(t, lists, keys)).collect();
    let mut rng = Rng::new(99);
    let mut alone = vec![Vec::new(); targets.len()];
    let mut back_to_back = vec![Sample::default(); targets.len()];
    let (mut floor_spaced, mut floor_back_to_back) = (Sample::default(), Sample::default());
    let mut floor_firsts = Vec::new();
    let reps = config.fanout_reps;
    for _ in 0..config.rounds {
        for (i, t) in targets.iter().enumerate() {
            let creates = TimedCreate { target: t, lists, keys };
            // The reference of the timed creates below: the same kind of
            // create seen by one subscriber. Its failures count as the workload's.
            match fanout::subscribe(&sse, &t.url, 1).await {
                Ok(mut one) => {
                    let seen = timed_creates(&mut one, &creates, &mut rng, reps, fanout::SPACING, &mut out[i]).await;
                    alone[i].extend(seen.iter().map(|a| a.last));
                    one.close().await;
                }
                Err(e) => {
                    out[i].fail(format!("one subscriber: {e:#}"));
                }
            }
            let started = Instant::now();
            let mut subs = match fanout::subscribe(&sse, &t.url, config.subscribers).await {
                Ok(s) => s,
                Err(e) => {
                    out[i].fail(format!("{e:#}"));
                    continue;
                }
            };
            for seen in timed_creates(&mut subs, &creates, &mut rng, reps, fanout::SPACING, &mut out[i]).await {
                out[i].latencies.push(seen.last);
                firsts[i].push(seen.first);
            }
            // The one-at-a-time creates end here; the load phase has its own sample.
            out[i].elapsed += started.elapsed();
            // The same creates with no pause between them, a sample of its
            // own: no core idles, so the difference from the spaced sample is
            // what waking from idle costs on this machine.
            let started_b2b = Instant::now();
            let b2b = &mut back_to_back[i];
            let seen = timed_creates(&mut subs, &creates, &mut rng, reps, Duration::ZERO, b2b).await;
            b2b.latencies.extend(seen.iter().map(|a| a.last));
            b2b.elapsed += started_b2b.elapsed();
            let before = subs.events();
            let started_load = Instant::now();
            let mut load = load::drive(&t.url, &makers[i], config.concurrency, config.duration, 2000).await;
            let answered = load.latencies.len() as u64;
            let expected = answered.saturating_sub(load.errors) * config.subscribers as u64;
            let (seen, last) = subs.drain(before + expected).await;
            load.elapsed = last.max(started_load + load.elapsed).duration_since(started_load);
            let missing = (before + expected).saturating_sub(seen);
            if missing > 0 {
                load.errors += missing;
                load.first_error.get_or_insert(format!("{missing} of {expected} realtime events never arrived"));
            }
            streamed[i].merge(load);
            subs.close().await;
            say(format!("    {} fan-out round done in {:.1} s", t.url, started.elapsed().as_secs_f64()));
        }
        // The floor: the same subscribers and creates, spaced and back to back.
        let started = Instant::now();
        let creates = TimedCreate { target: floor, lists, keys };
        match fanout::subscribe(&sse, &floor.url, config.subscribers).await {
            Ok(mut subs) => {
                for (pause, sample) in [(fanout::SPACING, &mut floor_spaced), (Duration::ZERO, &mut floor_back_to_back)]
                {
                    let seen = timed_creates(&mut subs, &creates, &mut rng, reps, pause, sample).await;
                    sample.latencies.extend(seen.iter().map(|a| a.last));
                    if !pause.is_zero() {
                        floor_firsts.extend(seen.iter().map(|a| a.first));
                    }
                }
                subs.close().await;
            }
            Err(e) => floor_spaced.fail(format!("{e:#}")),
        }
        say(format!("    {} (the floor) fan-out round done in {:.1} s", floor.url, started.elapsed().as_secs_f64()));
    }
    Ok(Fanout { once: out, firsts, alone, back_to_back, streamed, floor_spaced, floor_firsts, floor_back_to_back })
}

/// `reps` timed creates seen by `subs`, one at a time with `pause` after
/// each; returns the arrivals of those that every subscriber saw. A failure
/// counts as an error in `errors` (the sample of the row it belongs to).
async fn timed_creates(
    subs: &mut fanout::Subscribers,
    creates: &TimedCreate<'_>,
    rng: &mut Rng,
    reps: usize,
    pause: Duration,
    errors: &mut Sample,
) -> Vec<fanout::Arrivals> {
    let mut seen = Vec::with_capacity(reps);
    for _ in 0..reps {
        let (create, id) = creates.next(rng);
        match subs.once(&create, &id).await {
            Ok(arrivals) => seen.push(arrivals),
            Err(e) => errors.fail(format!("{} subscriber(s): {e:#}", subs.count())),
        }
        if !pause.is_zero() {
            tokio::time::sleep(pause).await;
        }
    }
    seen
}

/// The creates of a fan-out's timed samples on one target.
struct TimedCreate<'a> {
    target: &'a Target,
    lists: u64,
    keys: &'a AtomicU64,
}

impl TimedCreate<'_> {
    /// The next create, with its id chosen by the client so the subscribers
    /// can recognise its event.
    fn next(&self, rng: &mut Rng) -> (http1::Request, String) {
        let id = fanout::card_id(rng);
        let key = self.keys.fetch_add(1, Ordering::Relaxed);
        let mut body = dataset::new_card(key, rng.below(self.lists));
        body.insert("id".into(), Value::String(id.clone()));
        (write_request(self.target.token.as_deref(), key, &body), id)
    }
}

/// What `fanout_rounds` measured, per target.
struct Fanout {
    /// One create at a time: the time until the last subscriber saw it.
    once: Vec<Sample>,
    /// The same creates, in the same order: until the first subscriber saw each.
    firsts: Vec<Vec<Duration>>,
    /// As many creates again, each seen by a single subscriber.
    alone: Vec<Vec<Duration>>,
    /// As many creates again to all subscribers, with no pause between them.
    back_to_back: Vec<Sample>,
    /// Creates under load, each counted once every subscriber saw it.
    streamed: Vec<Sample>,
    /// The floor (see `floor`): as `once` and `firsts`, then as `back_to_back`.
    floor_spaced: Sample,
    floor_firsts: Vec<Duration>,
    floor_back_to_back: Sample,
}

/// How this run was started, as a command to paste.
fn command_line() -> String {
    let args: Vec<String> =
        std::env::args()
            .skip(1)
            .map(|a| {
                if a.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,=/:".contains(c)) { a } else { format!("'{a}'") }
            })
            .collect();
    let profile = if cfg!(debug_assertions) { "" } else { " --release" };
    let args = if args.is_empty() { String::new() } else { format!(" -- {}", args.join(" ")) };
    format!("cargo run{profile} -p bench{args}")
}

/// A file's size in MB, or why there is none (`agent-app` is built by
/// `cargo build --release -p a2app-cli`, not by the benchmark's own build).
fn binary_size(path: &Path) -> String {
    match std::fs::metadata(path) {
        Ok(m) => format!("{:.1} MB", m.len() as f64 / 1e6),
        Err(_) => "not built".into(),
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// The machine: cores, CPU model, memory, the load when the run started.
fn machine() -> Vec<(String, String)> {
    let cpus = std::thread::available_parallelism().map(|n| n.get().to_string()).unwrap_or_else(|_| "?".into());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mem = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kib| kib.parse::<u64>().ok())
        .map(|kib| format!("{:.1} GiB", kib as f64 / 1024.0 / 1024.0))
        .unwrap_or_else(|| "unknown".into());
    vec![
        ("cores (nproc)".into(), cpus),
        ("CPU".into(), model),
        ("memory".into(), mem),
        ("build".into(), if cfg!(debug_assertions) { "debug".into() } else { "release".into() }),
        ("load average at start".into(), loadavg()),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_server_is_started_five_times_and_its_median_start_up_kept() {
        let times = [40, 9, 12, 7, 30].map(Duration::from_millis);
        let mut calls = 0;
        let (last, median) = started(
            async || {
                calls += 1;
                Ok(times[calls - 1])
            },
            |t| *t,
        )
        .await
        .expect("no start failed");
        assert_eq!(calls, STARTS);
        assert_eq!(last, Duration::from_millis(30), "the last start is the one kept");
        assert_eq!(median, Duration::from_millis(12));

        // A failed start ends the attempt with its error.
        let failed = started(async || Err::<Duration, _>(anyhow::anyhow!("port in use")), |t| *t).await;
        assert_eq!(failed.map(|_| ()).unwrap_err().to_string(), "port in use");
    }
}
