//! The runner of scheduled operations the server starts: every few seconds it
//! asks the definition's pure `schedule::decide` whether a slot passed since
//! each operation's stored last run, claims the run in the store (so one
//! server of several runs it) and invokes it as the scheduler.

use crate::app::App;
use a2app_access::caller::Caller;
use a2app_definition::schedule::{Decision, decide, parse};
use jiff::tz::TimeZone;
use std::sync::Arc;

/// The agent name scheduled runs are attributed to.
pub const AGENT: &str = "a2app-scheduler";

/// How often the runner looks at the clock.
pub const POLL: std::time::Duration = std::time::Duration::from_secs(5);

/// Looks at every scheduled operation once and runs those that are due.
/// Returns the names run. The last run is stored before the run starts, so a
/// crash during a run does not repeat it (at most once, like jobs).
pub async fn tick(app: &Arc<App>) -> Vec<String> {
    let tz = TimeZone::get(&app.definition.config.timezone).unwrap_or(TimeZone::UTC);
    let now = app.clock.now();
    let mut ran = Vec::new();
    for op in &app.definition.operations {
        let Some(schedule) = op.schedule.as_deref().and_then(|s| parse(s).ok()) else { continue };
        let store = Arc::clone(&app.store);
        let name = op.name.clone();
        let seen = match a2app_store::blocking(move || Ok(store.last_run(&name)?)).await {
            Ok(seen) => seen,
            Err(e) => {
                tracing::error!(operation = %op.name, error = %e, "cannot read the last run");
                continue;
            }
        };
        let last = seen.as_deref().and_then(a2app_definition::datetime::parse);
        let decision = decide(schedule, last, now, &tz);
        if matches!(decision, Decision::Wait(_)) {
            continue;
        }
        let store = Arc::clone(&app.store);
        let (name, at) = (op.name.clone(), a2app_definition::datetime::format(now));
        match a2app_store::blocking(move || Ok(store.claim_run(&name, seen.as_deref(), &at)?)).await {
            Ok(true) => {}
            // Another server node sharing the store claimed this slot.
            Ok(false) => continue,
            Err(e) => {
                tracing::error!(operation = %op.name, error = %e, "cannot record the run");
                continue;
            }
        }
        if decision == Decision::Baseline {
            continue;
        }
        let caller = Caller::agent(Some(AGENT.to_owned()));
        let invocation = crate::operations::Invocation::scheduled();
        match crate::operations::invoke(app, &caller, &op.name, invocation).await {
            Ok(_) => tracing::info!(operation = %op.name, "scheduled run"),
            Err(e) => tracing::error!(operation = %op.name, error = %e, "scheduled run failed"),
        }
        ran.push(op.name.clone());
    }
    ran
}

/// Ticks until `shutdown` resolves.
pub async fn run(app: Arc<App>, shutdown: impl std::future::Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        tick(&app).await;
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}
