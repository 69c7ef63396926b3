//! Operations and jobs: list the verbs, run one, follow a job.
//!
//! A destructive operation is answered 428 `approval_required` by the app. The
//! client then shows what would run and repeats the call with the approval
//! key only when the user passed `--yes`; the key itself is never printed,
//! so approving stays the user's act, not something an agent can copy.

use super::Ctx;
use super::output::{Failure, OK, REFUSED, cell, table};
use a2app_client::api::CallError;
use a2app_client::coerce::{Assignment, Input};
use a2app_client::operations::{Job, Outcome};
use protocol::ErrorCode;
use protocol::describe::DescribedOperation;
use serde_json::{Map, Value, json};
use std::io::Write;

/// `GET /api/_ops`, or describe's list when the app has no `_ops` route yet.
async fn declared(ctx: &mut Ctx<'_>) -> Result<Vec<DescribedOperation>, Failure> {
    match ctx.session.api.operations().await {
        Ok(ops) => Ok(ops),
        Err(CallError::App(body)) if body.code == ErrorCode::NotFound => {
            Ok(ctx.session.describe().await?.operations.clone())
        }
        Err(CallError::Unexpected { status: 404, .. }) => Ok(ctx.session.describe().await?.operations.clone()),
        Err(e) => Err(e.into()),
    }
}

pub async fn list(ctx: &mut Ctx<'_>) -> Result<u8, Failure> {
    let ops = declared(ctx).await?;
    let mut rows = Vec::new();
    for op in &ops {
        let params: Vec<String> = op
            .params
            .iter()
            .map(|(n, p)| if p.required { format!("{n}=<{}>", p.kind) } else { format!("[{n}=<{}>]", p.kind) })
            .collect();
        rows.push(vec![
            op.name.clone(),
            params.join(" "),
            format!("{}{}", op.description, if op.destructive { " (destructive)" } else { "" }),
        ]);
    }
    let text = if ops.is_empty() {
        "this app declares no operations".to_owned()
    } else {
        format!("{}\nrun one: {}", table(&rows), ctx.hint(&format!("run {} …", ops[0].name)))
    };
    ctx.out.done(json!({"ok": true, "operations": ops}), &text);
    Ok(OK)
}

/// `param=value` words read against declared params (an operation's, or a
/// request capability's result), every problem at once; `owner` names them.
pub(super) fn params(
    owner: &str,
    declared: &indexmap::IndexMap<String, protocol::describe::DescribedParam>,
    args: &[&str],
) -> Result<Map<String, Value>, Failure> {
    let mut out = Map::new();
    let mut problems = Vec::new();
    let problem = |code: ErrorCode, field: &str, message: String, fix: String| {
        a2app_client::coerce::Problem::new(code, message).field(field).fix(fix)
    };
    for arg in args {
        let a = match Assignment::parse(arg) {
            Some(Ok(a)) => a,
            Some(Err(p)) => {
                problems.push(p);
                continue;
            }
            None => {
                problems.push(problem(
                    ErrorCode::InvalidParam,
                    arg,
                    format!("\"{arg}\" is not param=value"),
                    "write param=value".into(),
                ));
                continue;
            }
        };
        let Some(spec) = declared.get(&a.field) else {
            let names: Vec<&str> = declared.keys().map(String::as_str).collect();
            problems.push(problem(
                ErrorCode::InvalidParam,
                &a.field,
                format!("{} has no parameter \"{}\"", owner, a.field),
                format!("parameters: {}", if names.is_empty() { "none".into() } else { names.join(", ") }),
            ));
            continue;
        };
        let value = match a.value {
            Input::Raw(v) => v,
            Input::Text(t) => match spec.kind.as_str() {
                // `inf`, `NaN` and `1e400` parse as floats JSON cannot hold:
                // sent, they would become null, which the app reads as absent.
                "number" => match a2app_client::coerce::number(&t) {
                    Ok(n) => n,
                    Err(why) => {
                        let message = match why {
                            a2app_client::coerce::NumberError::NotANumber => {
                                format!("{} must be a number, not \"{t}\"", a.field)
                            }
                            a2app_client::coerce::NumberError::Inexact => {
                                format!("{} must be {}, not \"{t}\"", a.field, a2app_client::coerce::INEXACT)
                            }
                        };
                        problems.push(problem(
                            ErrorCode::InvalidParam,
                            &a.field,
                            message,
                            format!("give {}=<number>", a.field),
                        ));
                        continue;
                    }
                },
                "boolean" => match t.trim().to_ascii_lowercase().as_str() {
                    "true" | "yes" | "1" => Value::Bool(true),
                    "false" | "no" | "0" => Value::Bool(false),
                    _ => {
                        problems.push(problem(
                            ErrorCode::InvalidParam,
                            &a.field,
                            format!("{} must be true or false, not \"{t}\"", a.field),
                            format!("give {}=true or {}=false", a.field, a.field),
                        ));
                        continue;
                    }
                },
                _ => Value::from(t),
            },
        };
        if !spec.choices.is_empty() && !spec.choices.contains(&value) {
            let choices: Vec<String> = spec.choices.iter().map(cell).collect();
            problems.push(problem(
                ErrorCode::InvalidParam,
                &a.field,
                format!("{} cannot be {}", a.field, cell(&value)),
                format!("use one of: {}", choices.join(", ")),
            ));
            continue;
        }
        out.insert(a.field, value);
    }
    for (name, spec) in declared {
        if spec.required && spec.default.is_none() && !out.contains_key(name) {
            problems.push(problem(
                ErrorCode::RequiredField,
                name,
                format!("{} needs {name}", owner),
                format!("add {name}=<{}>", spec.kind),
            ));
        }
    }
    if problems.is_empty() { Ok(out) } else { Err(Failure::problems(problems)) }
}

pub async fn run(ctx: &mut Ctx<'_>, name: &str, args: &[&str]) -> Result<u8, Failure> {
    let ops = declared(ctx).await?;
    let Some(op) = ops.iter().find(|o| o.name == name).cloned() else {
        let names: Vec<&str> = ops.iter().map(|o| o.name.as_str()).collect();
        return Err(Failure::new(REFUSED, "unknown_operation", format!("this app has no operation \"{name}\""))
            .fix(format!("operations: {}", if names.is_empty() { "none".into() } else { names.join(", ") })));
    };
    let params = params(&op.name, &op.params, args)?;
    let key = ctx.key();
    let answer = match ctx.session.api.run(&op, &params, ctx.cli.approval.as_deref(), &key).await {
        Err(CallError::App(body))
            if body.code == ErrorCode::ApprovalRequired
                && body.extra.get("consent").and_then(Value::as_str) == Some("person") =>
        {
            // The app's own person approves this call, on its page; --yes is
            // the host's yes and counts for nothing here.
            let approval = body.extra.get("approvalKey").and_then(Value::as_str).unwrap_or_default().to_owned();
            let page = body.extra.get("approvalUrl").and_then(Value::as_str).unwrap_or("/_/");
            let url = ctx.session.base.join(page).map(|u| u.to_string()).unwrap_or_else(|_| page.to_owned());
            return Err(Failure::new(
                REFUSED,
                "approval_required",
                format!("{name} is destructive, and this app lets it run only once a person of the app approved this call: {url}"),
            )
            .fix(format!(
                "ask them to approve it there, then repeat: {} --approval {approval}",
                ctx.hint(&format!("run {}", args_line(name, args)))
            ))
            .with("approvalKey", json!(approval))
            .with("approvalUrl", json!(url)));
        }
        Err(CallError::App(body)) if body.code == ErrorCode::ApprovalRequired => {
            let approval = body.extra.get("approvalKey").and_then(Value::as_str).unwrap_or_default().to_owned();
            let shown_params = body.extra.get("params").cloned().unwrap_or_else(|| Value::Object(params.clone()));
            let plan = format!(
                "{name} is destructive: {}\n  with {}",
                if op.description.is_empty() { "no description" } else { &op.description },
                shown_params
            );
            if !ctx.cli.yes {
                return Err(Failure::new(REFUSED, "approval_required", format!("the app asks for approval: {plan}"))
                    .fix(format!(
                        "if that is what you want, repeat with --yes: {} --yes",
                        ctx.hint(&format!("run {}", args_line(name, args)))
                    ))
                    .with("plan", json!({"operation": name, "description": op.description, "params": shown_params})));
            }
            ctx.out.note(&format!("approved with --yes: {plan}"));
            // A fresh key derived from the first: the refused call did nothing,
            // and repeating this whole command with the same --key stays idempotent.
            ctx.session.api.run(&op, &params, Some(&approval), &format!("{key}.approved")).await
        }
        other => other,
    };
    let value = match answer {
        Ok(v) => v,
        Err(CallError::App(body)) if body.code == ErrorCode::DuplicateRequest => {
            // The key is a job's: the first attempt started it, and how it
            // went is the job's state, not "done".
            if let Some(job_id) = body.extra.get("id").and_then(Value::as_str).filter(|_| op.executor == "job") {
                ctx.out.note(&format!(
                    "an earlier request with this Idempotency-Key ({key}) started job {job_id}; nothing ran again"
                ));
                return follow(ctx, job_id, "").await;
            }
            let text = format!(
                "✓ already done: an earlier request with this Idempotency-Key ({key}) ran {name}; nothing ran again"
            );
            ctx.out.done(json!({"ok": true, "operation": name, "alreadyDone": true, "idempotencyKey": key}), &text);
            return Ok(OK);
        }
        Err(e) => return Err(super::write::lost_run(e, &key, &op)),
    };
    match Outcome::from_answer(name, &value) {
        Outcome::Done { operation, result, receipts } => {
            let mut text = format!("✓ {operation} done");
            for r in &receipts {
                text.push_str(&format!("\n  {}", r.text));
            }
            if !result.is_null() {
                text.push_str(&format!("\n  result: {}", serde_json::to_string_pretty(&result).unwrap_or_default()));
            }
            ctx.out.done(
                json!({"ok": true, "operation": operation, "alreadyDone": false, "result": result, "receipts": receipts, "idempotencyKey": key}),
                &text,
            );
            Ok(OK)
        }
        Outcome::Job { operation, job_id, status } => {
            if ctx.cli.no_wait {
                let text =
                    format!("started job {job_id} ({operation})\n  follow it: {}", ctx.hint(&format!("job {job_id}")));
                ctx.out.done(
                    json!({"ok": true, "operation": operation, "jobId": job_id, "status": status, "job": null}),
                    &text,
                );
                return Ok(OK);
            }
            follow(ctx, &job_id, &status).await
        }
    }
}

fn args_line(name: &str, args: &[&str]) -> String {
    let mut line = name.to_owned();
    for a in args {
        if a.contains([' ', '"', '\'']) {
            line.push_str(&format!(" '{}'", a.replace('\'', "'\\''")));
        } else {
            line.push_str(&format!(" {a}"));
        }
    }
    line
}

/// Polls a job until it ends: a progress bar on a terminal, plain lines otherwise.
pub async fn follow(ctx: &mut Ctx<'_>, id: &str, status: &str) -> Result<u8, Failure> {
    let path = match status.find("/api/") {
        Some(i) => status[i..].to_owned(),
        None => format!("/api/_jobs/{id}"),
    };
    let mut last = String::new();
    let job: Job = loop {
        // The job runs on in the app whatever happens to this poll: a failed
        // poll names it, so it is followed again rather than started again.
        let job: Job = ctx.session.api.get_json(&path).await.map_err(|e| {
            let follow = ctx.hint(&format!("job {id}"));
            Failure::from(e)
                .fix(format!(
                    "job {id} goes on in the app: follow it again with {follow}, do not run the operation again"
                ))
                .with("jobId", json!(id))
        })?;
        let line = progress_line(&job);
        if ctx.env.terminal && !ctx.out.json {
            eprint!("\r\x1b[2K{}", a2app_client::display::printable(&bar(&job)));
            let _ = std::io::stderr().flush();
        } else if line != last {
            eprintln!("{}", a2app_client::display::printable(&line));
        }
        last = line;
        if job.is_finished() {
            if ctx.env.terminal && !ctx.out.json {
                eprintln!();
            }
            break job;
        }
        tokio::time::sleep(ctx.env.poll).await;
    };
    let doc = json!({"ok": job.state == "succeeded", "operation": job.operation, "jobId": job.id, "job": job});
    if job.state == "succeeded" {
        let mut text = format!("✓ job {} ({}) succeeded", job.id, job.operation);
        if let Some(r) = &job.result {
            text.push_str(&format!("\n  result: {}", serde_json::to_string_pretty(r).unwrap_or_default()));
        }
        ctx.out.done(doc, &text);
        return Ok(OK);
    }
    let message = job
        .error
        .as_ref()
        .map(|e| e.get("message").and_then(Value::as_str).map(str::to_owned).unwrap_or_else(|| e.to_string()))
        .unwrap_or_else(|| "no reason given".into());
    Err(Failure::new(
        REFUSED,
        &format!("job_{}", job.state),
        format!("job {} ({}) {}: {message}", job.id, job.operation, job.state),
    )
    .fix("see the job's error; run the operation again once the cause is fixed")
    .with("job", json!(job)))
}

fn progress_line(job: &Job) -> String {
    let p = &job.progress;
    let count = if p.total > 0 { format!(" {}/{}", p.done, p.total) } else { String::new() };
    let msg = if p.message.is_empty() { String::new() } else { format!(" {}", p.message) };
    format!("job {}: {}{count}{msg}", job.id, job.state)
}

fn bar(job: &Job) -> String {
    let p = &job.progress;
    let width: u64 = 30;
    // In u128: the counts come from the app, and `done * width` may not fit a u64.
    let filled =
        (u128::from(p.done.min(p.total)) * u128::from(width)).checked_div(u128::from(p.total)).unwrap_or(0) as usize;
    format!(
        "[{}{}] {}",
        "#".repeat(filled),
        "-".repeat(width as usize - filled),
        progress_line(job).trim_start_matches(&format!("job {}: ", job.id))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bar_fills_with_progress() {
        let job = |done, total| Job {
            id: "j".into(),
            operation: "reindex".into(),
            state: "running".into(),
            progress: a2app_client::operations::Progress { done, total, message: "rows".into() },
            result: None,
            error: None,
        };
        assert_eq!(bar(&job(0, 0)), format!("[{}] running rows", "-".repeat(30)));
        assert_eq!(bar(&job(1, 3)), format!("[{}{}] running 1/3 rows", "#".repeat(10), "-".repeat(20)));
        assert_eq!(bar(&job(5, 3)), format!("[{}] running 5/3 rows", "#".repeat(30)));
        let huge = u64::MAX - 1;
        assert_eq!(
            bar(&job(huge / 2, huge)),
            format!("[{}{}] running {}/{huge} rows", "#".repeat(15), "-".repeat(15), huge / 2)
        );
    }

    #[test]
    fn numbers_json_cannot_hold_are_refused_not_sent_as_null() {
        let spec: protocol::describe::DescribedParam = serde_json::from_value(json!({"type": "number"})).unwrap();
        let declared: indexmap::IndexMap<String, _> = [("days".to_owned(), spec)].into_iter().collect();
        for word in ["days=inf", "days=-inf", "days=NaN", "days=1e400"] {
            let failure = params("op", &declared, &[word]).expect_err(word);
            assert_eq!((failure.code.as_str(), failure.field.as_deref()), ("invalid_param", Some("days")), "{word}");
        }
        assert_eq!(params("op", &declared, &["days=2.5"]).unwrap()["days"], json!(2.5));
        assert_eq!(params("op", &declared, &["days=3"]).unwrap()["days"], json!(3));
    }
}
