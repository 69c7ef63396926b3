//! `a2app`: the protocol client. Resolves the environment, then hands over to
//! `a2app_cli::a2app::run`; it never reads an app's files.

use a2app_cli::a2app::{Cli, Env, run};
use clap::Parser;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = Env {
        config: a2app_cli::config_dir(),
        token: std::env::var("A2APP_TOKEN").ok().filter(|t| !t.trim().is_empty()),
        agent: std::env::var("A2APP_AGENT").ok().filter(|a| !a.trim().is_empty()),
        fresh_key: a2app_cli::fresh_key(),
        terminal: std::io::stderr().is_terminal(),
        interactive: std::io::stdin().is_terminal(),
        poll: Duration::from_millis(std::env::var("A2APP_POLL_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(500)),
        world: a2app_client::grants::World { now: a2app_cli::unix_now, random: rand::random },
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    ExitCode::from(runtime.block_on(run(cli, env)))
}
