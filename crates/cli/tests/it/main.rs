//! Tests that run the real `agent-app` binary in temp directories.

#![allow(clippy::unwrap_used)] // test helpers panic on purpose: a panic is a failed test

mod add;
mod check;
mod client;
mod fence;
mod gateway;
mod grants;
mod index;
mod ops;
mod requests;
mod serve;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `agent-app`, registering (when it serves) into a test-wide temp config
/// directory, never the real home's.
pub fn bin() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_agent-app"));
    cmd.env("A2APP_CONFIG_DIR", shared_config());
    cmd
}

fn shared_config() -> &'static Path {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("temp dir")).path()
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("agent-app runs")
}

pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples").join(name)
}

/// Copies an app's definition files into a fresh temp dir.
pub fn copy_app(src: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for file in ["app.toml", "schema.json", "operations.json", "requests.json"] {
        if src.join(file).exists() {
            std::fs::copy(src.join(file), dir.path().join(file)).expect("copy");
        }
    }
    dir
}

/// A seeded fuzz run: the seed (`A2APP_FUZZ_SEED`, else `default_seed`), the
/// number of rounds (`A2APP_FUZZ_ROUNDS`, else 300) and the generator.
pub fn fuzz_run(default_seed: u64) -> (u64, usize, rand::rngs::StdRng) {
    use rand::SeedableRng;
    let seed = std::env::var("A2APP_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(default_seed);
    let rounds = std::env::var("A2APP_FUZZ_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(300usize);
    (seed, rounds, rand::rngs::StdRng::seed_from_u64(seed))
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("port")
}

/// A running `agent-app serve`, killed with SIGKILL when dropped.
pub struct Server {
    pub child: Child,
    pub url: String,
}

impl Server {
    pub fn start(dir: &Path, port: u16, extra: &[&str]) -> Server {
        Server::start_with(bin(), dir, port, extra)
    }

    /// Starts `cmd` (an `agent-app` command, with its environment set) serving `dir`.
    pub fn start_with(mut cmd: Command, dir: &Path, port: u16, extra: &[&str]) -> Server {
        cmd.arg("serve").arg(dir).args(["--http", &format!("127.0.0.1:{port}")]).args(extra);
        let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("serve starts");
        // From here on, Drop kills and waits for the child, even if this panics.
        let server = Server { child, url: format!("http://127.0.0.1:{port}") };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("agent-app serve did not listen on {port}");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client builder for tests. This workspace's reqwest has no built-in TLS
/// provider (see docs/decisions/0003): every process installs one first.
pub fn http() -> reqwest::ClientBuilder {
    a2app_client::install_tls_provider();
    reqwest::Client::builder()
}
