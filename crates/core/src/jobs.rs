//! Background jobs: an operation that answers with a job id at once while its
//! work runs on the runtime, reporting progress.
//!
//! A job's state is persisted on every change (queued → running → succeeded
//! or failed, with each progress report), so `GET /api/_jobs/{id}` answers from
//! storage and a restart finds it. A job that was queued or running when the
//! server stopped is marked `interrupted` at the next start, with its last
//! progress, and is never re-run by itself: its side effects may be partial,
//! and only a person or agent who reads its state should decide to run it again.

use crate::app::App;
use crate::handlers::{Context, Progress};
use crate::records;
use a2app_access::caller::Caller;
use a2app_definition::error::Error;
use a2app_definition::operations::{JobRun, JobSpec, Operation};
use a2app_store::QueryContext;
use protocol::operation::{Job, JobError, JobStarted, JobState};
use serde_json::{Map, Value, json};
use std::sync::Arc;
use tokio::sync::Mutex;

async fn persist(app: &Arc<App>, job: Job) -> Result<(), Error> {
    let store = Arc::clone(&app.store);
    a2app_store::blocking(move || Ok(store.put_job(&job)?)).await
}

/// Persists a queued job and starts its work in the background.
pub async fn start(
    app: &Arc<App>,
    caller: &Caller,
    op: &Operation,
    spec: &JobSpec,
    params: Map<String, Value>,
    key: Option<String>,
) -> Result<JobStarted, Error> {
    records::check_key(key.as_deref())?;
    let now = a2app_definition::datetime::format(app.clock.now());
    let job = Job {
        id: a2app_definition::id::ordered(),
        operation: op.name.clone(),
        state: JobState::Queued,
        progress: Default::default(),
        result: None,
        error: None,
        created_at: now.clone(),
        updated_at: now,
    };
    {
        let store = Arc::clone(&app.store);
        let (job, key) = (job.clone(), key.as_deref().map(|key| records::stored_key(caller, key)));
        a2app_store::blocking(move || Ok(store.create_job(&job, key.as_deref())?)).await?;
    }
    let started = JobStarted {
        ok: true,
        operation: op.name.clone(),
        job_id: job.id.clone(),
        status: format!("/api/_jobs/{}", job.id),
    };
    let progress = Progress { app: Arc::clone(app), job: Arc::new(Mutex::new(job)) };
    let ctx = Context { app: Arc::clone(app), caller: caller.clone(), operation: op.name.clone(), params, key };
    let spec = spec.clone();
    tokio::spawn(run(ctx, spec, progress));
    Ok(started)
}

async fn run(ctx: Context, spec: JobSpec, progress: Progress) {
    let app = Arc::clone(&ctx.app);
    let running = {
        let mut job = progress.job.lock().await;
        job.state = JobState::Running;
        job.updated_at = a2app_definition::datetime::format(app.clock.now());
        job.clone()
    };
    if let Err(e) = persist(&app, running).await {
        // Not started, and it will not start: said so rather than left
        // `queued` for its poller until the next restart interrupts it.
        tracing::error!(error = %e, "cannot start a job");
        let failed = {
            let mut job = progress.job.lock().await;
            let refusal = Error::Internal(format!("cannot store the job's start: {e}"));
            job.state = JobState::Failed;
            job.error = Some(JobError { code: refusal.code(), message: refusal.to_body().message });
            job.clone()
        };
        if let Err(e) = persist(&app, failed).await {
            tracing::error!(error = %e, "cannot record that a job could not start");
        }
        return;
    }
    let work = {
        let (app, progress, ctx) = (Arc::clone(&app), progress.clone(), ctx.clone());
        async move {
            match spec.run {
                JobRun::Export => export(&app, &progress, spec.pace).await,
                JobRun::Native => match app.operations.registry().job_handler(&ctx.operation) {
                    Some(handler) => handler(ctx.clone(), progress.clone()).await,
                    None => Err(Error::Internal(format!("no job handler registered for {}", ctx.operation))),
                },
            }
        }
    };
    // On its own task, so a panicking handler fails the job instead of leaving it running.
    let outcome = tokio::spawn(work).await.unwrap_or_else(|e| Err(Error::Internal(format!("the job panicked: {e}"))));
    let finished = {
        let mut job = progress.job.lock().await;
        match outcome {
            Ok(result) => {
                job.state = JobState::Succeeded;
                job.result = Some(result);
            }
            Err(e) => {
                if let Error::Internal(detail) = &e {
                    // Logged once, with detail; the job shows the generic message.
                    tracing::error!(job = %job.id, %detail, "job failed");
                }
                job.state = JobState::Failed;
                job.error = Some(JobError { code: e.code(), message: e.to_body().message });
            }
        }
        job.updated_at = a2app_definition::datetime::format(app.clock.now());
        job.clone()
    };
    if let Err(e) = persist(&app, finished).await {
        tracing::error!(error = %e, "cannot record the end of a job");
    }
}

/// A job by id; an unknown id is `not_found`.
pub async fn get(app: &Arc<App>, id: &str) -> Result<Job, Error> {
    if !a2app_definition::id::is_valid(id) {
        return Err(Error::NotFound);
    }
    let store = Arc::clone(&app.store);
    let id = id.to_owned();
    a2app_store::blocking(move || Ok(store.job(&id)?)).await?.ok_or(Error::NotFound)
}

/// Where exports go, relative to the app directory.
pub const EXPORTS: &str = "data/exports";

/// The declarative `export` job: every entity's records into
/// `data/exports/<job id>.json`, one progress step per entity.
async fn export(app: &Arc<App>, progress: &Progress, pace: std::time::Duration) -> Result<Value, Error> {
    let names: Vec<String> = app.definition.schema.entities.keys().cloned().collect();
    let total = names.len() as u64;
    progress.report(0, total, "starting the export").await?;
    let mut entities = Map::new();
    let mut counts = Map::new();
    for (i, name) in names.iter().enumerate() {
        let rows = all_rows(app, name).await?;
        counts.insert(name.clone(), Value::from(rows.len()));
        entities.insert(
            name.clone(),
            Value::Array(rows.into_iter().map(|r| Value::Object(records::present(name, r))).collect()),
        );
        progress.report(i as u64 + 1, total, format!("exported {name}")).await?;
        if !pace.is_zero() && (i as u64 + 1) < total {
            tokio::time::sleep(pace).await;
        }
    }
    let id = progress.job_id().await;
    let document = json!({
        "app": app.definition.config.id,
        "schemaVersion": app.schema_version,
        "exportedAt": a2app_definition::datetime::format(app.clock.now()),
        "entities": entities,
    });
    let dir = app.definition.dir.join(EXPORTS);
    let file = format!("{EXPORTS}/{id}.json");
    a2app_store::blocking(move || {
        let io = |e: std::io::Error| Error::Internal(format!("export file: {e}"));
        std::fs::create_dir_all(&dir).map_err(io)?;
        // Written beside, then renamed: a reader never sees half a file.
        let partial = dir.join(format!("{id}.json.partial"));
        let bytes = serde_json::to_vec_pretty(&document).map_err(|e| Error::Internal(e.to_string()))?;
        std::fs::write(&partial, bytes).map_err(io)?;
        std::fs::rename(&partial, dir.join(format!("{id}.json"))).map_err(io)
    })
    .await?;
    Ok(json!({ "file": file, "records": counts }))
}

async fn all_rows(app: &Arc<App>, entity: &str) -> Result<Vec<a2app_store::Row>, Error> {
    let ctx = QueryContext { now: app.clock.now(), request: Default::default() };
    records::rows(app, entity, records::RowsQuery { filter: None, rule: None, sort: Vec::new(), ctx }).await
}
