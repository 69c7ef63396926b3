//! Child processes under test: started, timed to their first answer, measured
//! (`/proc/PID/status`), and always stopped, on every exit path including a
//! panic, by the [`Child`] guard.

use anyhow::{Context, Result, bail};
use std::fs::OpenOptions;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child is asked to stop before it is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Close its stdin: our server in `serve` mode shuts down on EOF (and so
    /// also when the benchmark dies, whatever the cause).
    CloseStdin,
    /// SIGTERM (PocketBase shuts down gracefully on it).
    Terminate,
}

/// A running child process; dropping it stops it (gracefully, then SIGKILL).
pub struct Child {
    name: String,
    inner: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stop: Stop,
    pub started: Instant,
}

impl Child {
    /// Spawns `cmd` with stdout and stderr appended to `log`.
    ///
    /// A `Terminate` child is started through `setpriv --pdeathsig KILL` when
    /// it is installed: setpriv execs the program (same pid), and the kernel
    /// kills it if the benchmark dies without running its guards (SIGKILL).
    /// The signal follows the spawning *thread*, so long-lived children must be
    /// spawned from a thread that outlives them: the run is driven by
    /// `block_on` on the main thread, and short ones are waited for by their
    /// spawning thread (`run_to_end`).
    pub fn spawn(name: &str, cmd: Command, log: &Path, stop: Stop) -> Result<Child> {
        let mut cmd = if stop == Stop::Terminate { killed_with_parent(cmd) } else { cmd };
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("cannot open {}", log.display()))?;
        let err = out.try_clone()?;
        cmd.stdout(Stdio::from(out)).stderr(Stdio::from(err));
        cmd.stdin(if stop == Stop::CloseStdin { Stdio::piped() } else { Stdio::null() });
        let started = Instant::now();
        let mut inner = cmd.spawn().with_context(|| format!("cannot start {name}"))?;
        let stdin = inner.stdin.take();
        Ok(Child { name: name.to_owned(), inner, stdin, stop, started })
    }

    pub fn pid(&self) -> u32 {
        self.inner.id()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `Some(status)` when the child has exited.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.inner.try_wait().ok().flatten()
    }

    /// Stops the child: the graceful way first, SIGKILL after `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if self.exited().is_some() {
            return;
        }
        match self.stop {
            Stop::CloseStdin => drop(self.stdin.take()),
            Stop::Terminate => {
                let _ = Command::new("kill")
                    .args(["-TERM", &self.pid().to_string()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("bench: {} did not stop within {grace:?}; killing it", self.name);
        let _ = self.inner.kill();
        let _ = self.inner.wait();
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(5));
    }
}

/// `cmd` under `setpriv --pdeathsig KILL`, or `cmd` itself without setpriv.
fn killed_with_parent(cmd: Command) -> Command {
    let Some(setpriv) = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .map(|dir| dir.join("setpriv"))
        .find(|p| p.is_file())
    else {
        return cmd;
    };
    let mut wrapped = Command::new(setpriv);
    wrapped.args(["--pdeathsig", "KILL", "--"]).arg(cmd.get_program()).args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapped.env(key, v),
            None => wrapped.env_remove(key),
        };
    }
    wrapped
}

/// Runs a command to completion within `timeout`, output appended to `log`;
/// fails on a non-zero exit or a timeout (the command is then killed).
pub fn run_to_end(name: &str, cmd: Command, log: &Path, timeout: Duration) -> Result<()> {
    let mut child = Child::spawn(name, cmd, log, Stop::Terminate)?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.exited() {
            if status.success() {
                return Ok(());
            }
            bail!("{name} failed ({status}); see {}", log.display());
        }
        if Instant::now() >= deadline {
            bail!("{name} did not finish within {timeout:?}; see {}", log.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Resident memory of a process, from `/proc/PID/status`, in KiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: the peak resident size since the process started.
    pub peak_kib: u64,
}

pub fn memory(pid: u32) -> Result<Memory> {
    let path = format!("/proc/{pid}/status");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    let field = |name: &str| -> Option<u64> {
        let line = text.lines().find(|l| l.starts_with(name))?;
        line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()
    };
    match (field("VmRSS:"), field("VmHWM:")) {
        (Some(rss_kib), Some(peak_kib)) => Ok(Memory { rss_kib, peak_kib }),
        _ => bail!("{path} has no VmRSS/VmHWM"),
    }
}

/// A child serving HTTP on loopback, once it answered.
pub struct Server {
    pub child: Child,
    pub url: String,
    /// From spawning the child to its first answer.
    pub startup: Duration,
}

/// Spawns `cmd`, which serves HTTP on `127.0.0.1:port`, and waits for its
/// first answer on `/api/health` (every child under test has one).
pub async fn serve(
    client: &reqwest::Client,
    name: &str,
    cmd: Command,
    port: u16,
    log: &Path,
    stop: Stop,
) -> Result<Server> {
    ensure_port_free(port)?;
    let mut child = Child::spawn(name, cmd, log, stop)?;
    let url = format!("http://127.0.0.1:{port}");
    let startup = first_answer(client, &mut child, &format!("{url}/api/health"), Duration::from_secs(60)).await?;
    Ok(Server { child, url, startup })
}

/// The child's side of [`Stop::CloseStdin`]: resolves once stdin reaches EOF
/// (the benchmark closed it, or is gone whatever the cause).
pub fn stdin_closed() -> tokio::sync::oneshot::Receiver<()> {
    let (closed, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut sink = [0u8; 64];
        while matches!(std::io::Read::read(&mut std::io::stdin(), &mut sink), Ok(n) if n > 0) {}
        let _ = closed.send(());
    });
    rx
}

/// Polls `url` until it answers 2xx; returns the time from the child's spawn
/// to that first answer. Fails when the child exits or `timeout` passes.
pub async fn first_answer(
    client: &reqwest::Client,
    child: &mut Child,
    url: &str,
    timeout: Duration,
) -> Result<Duration> {
    let deadline = Instant::now() + timeout;
    loop {
        let attempt = client.get(url).timeout(Duration::from_millis(500)).send().await;
        if let Ok(resp) = attempt
            && resp.status().is_success()
        {
            return Ok(child.started.elapsed());
        }
        if let Some(status) = child.exited() {
            bail!("{} exited ({status}) before answering {url}", child.name());
        }
        if Instant::now() >= deadline {
            bail!("{} did not answer {url} within {timeout:?}", child.name());
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Fails when something already listens on `port` (a leftover server would
/// otherwise be measured instead of the one just started).
pub fn ensure_port_free(port: u16) -> Result<()> {
    std::net::TcpListener::bind(("127.0.0.1", port))
        .map(drop)
        .with_context(|| format!("port 127.0.0.1:{port} is in use (a leftover server?); the benchmark needs it"))
}

/// Runs a command within `timeout` and returns its stdout (killed on timeout).
pub fn output_within(mut cmd: Command, timeout: Duration) -> Result<String> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().context("cannot start the command")?;
    let deadline = Instant::now() + timeout;
    loop {
        if child.try_wait()?.is_some() {
            let mut out = String::new();
            if let Some(mut stdout) = child.stdout.take() {
                std::io::Read::read_to_string(&mut stdout, &mut out)?;
            }
            return Ok(out);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("the command did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
