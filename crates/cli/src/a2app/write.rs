//! Writes: create, update and delete records from `field=value` arguments.
//!
//! Input is coerced and checked against the cached describe first; a label
//! lookup that is not exactly one record stops everything before any write.
//! Each write carries one Idempotency-Key (`--key`, or a fresh one), which the
//! client reuses if it must retry, so a 409 `duplicate_request` means the
//! write already happened and is reported as "already done".

use super::Ctx;
use super::output::{Failure, OK, REFUSED};
use a2app_client::api::{CallError, Written};
use a2app_client::coerce::{self, Action, Assignment};
use protocol::ErrorCode;
use serde_json::{Value, json};

fn assignments(args: &[&str]) -> Result<Vec<Assignment>, Failure> {
    let mut list = Vec::new();
    let mut problems = Vec::new();
    for arg in args {
        match Assignment::parse(arg) {
            Some(Ok(a)) => list.push(a),
            Some(Err(p)) => problems.push(p),
            None => problems.push(
                coerce::Problem::new(ErrorCode::InvalidParam, format!("\"{arg}\" is not field=value"))
                    .fix("write each value as field=value (quote it for the shell if it has spaces)"),
            ),
        }
    }
    if problems.is_empty() { Ok(list) } else { Err(Failure::problems(problems)) }
}

async fn draft(ctx: &mut Ctx<'_>, entity: &str, action: Action, args: &[&str]) -> Result<coerce::Draft, Failure> {
    let list = assignments(args)?;
    let clock = ctx.session.clock.ok_or_else(|| {
        Failure::new(
            REFUSED,
            "invalid_identity",
            "the app's clock (serverNow, serverTzOffsetMinutes) is not valid; relative dates cannot be resolved",
        )
    })?;
    let doc = ctx.session.describe().await?.clone();
    let draft = coerce::prepare(&doc, entity, action, &list, &clock).map_err(Failure::problems)?;
    coerce::resolve(&ctx.session.api, &doc, draft).await.map_err(Failure::unresolved)
}

pub async fn create(ctx: &mut Ctx<'_>, entity: &str, args: &[&str]) -> Result<u8, Failure> {
    let draft = draft(ctx, entity, Action::Create, args).await?;
    let key = ctx.key();
    let answer = ctx.session.api.create(entity, &draft.body, &key).await;
    finish(ctx, "create", entity, None, answer, &draft.notes, &key)
}

pub async fn update(ctx: &mut Ctx<'_>, entity: &str, id: &str, args: &[&str]) -> Result<u8, Failure> {
    if args.is_empty() {
        return Err(Failure::new(REFUSED, "invalid_param", "nothing to change").fix("add field=value arguments"));
    }
    let draft = draft(ctx, entity, Action::Update, args).await?;
    let key = ctx.key();
    let answer = ctx.session.api.update(entity, id, &draft.body, &key).await;
    finish(ctx, "update", entity, Some(id), answer, &draft.notes, &key)
}

fn finish(
    ctx: &Ctx<'_>,
    action: &str,
    entity: &str,
    target: Option<&str>,
    answer: Result<Written, CallError>,
    notes: &[String],
    key: &str,
) -> Result<u8, Failure> {
    let written = match answer {
        Ok(w) => w,
        Err(CallError::App(body)) if body.code == ErrorCode::DuplicateRequest => {
            let first = body.extra.get("id").and_then(Value::as_str).unwrap_or_default();
            return already_done(ctx, action, entity, first, target, key);
        }
        Err(e) => return Err(lost(e, key)),
    };
    let id = written.record.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
    let receipt_text =
        written.receipt.as_ref().map(|r| r.text.clone()).unwrap_or_else(|| format!("{action} {entity} {id}"));
    let mut text = format!("✓ {receipt_text}\n  {entity}/{id}");
    if !notes.is_empty() {
        text.push_str(&format!(" · read as: {}", notes.join("; ")));
    }
    text.push_str(&format!("\n  see it: {}", ctx.hint(&format!("{entity} {id}"))));
    ctx.out.done(
        json!({
            "ok": true, "action": action, "entity": entity, "id": id, "alreadyDone": false,
            "receipt": written.receipt, "record": written.record, "coerced": notes, "idempotencyKey": key,
        }),
        &text,
    );
    Ok(OK)
}

/// A replayed key: the first attempt did it. Not an error, and nothing new was
/// written; but a key the first attempt used on another record than this
/// command names did not do this command's write, and is refused.
fn already_done(
    ctx: &Ctx<'_>,
    action: &str,
    entity: &str,
    id: &str,
    target: Option<&str>,
    key: &str,
) -> Result<u8, Failure> {
    if let Some(target) = target.filter(|t| *t != id) {
        return Err(Failure::new(
            REFUSED,
            "duplicate_request",
            format!("the Idempotency-Key {key} was already used for {entity}/{id}, not {entity}/{target}: nothing was written"),
        )
        .fix("use another --key (or none) for this write")
        .with("id", json!(id)));
    }
    let text = format!(
        "✓ already done: an earlier request with this Idempotency-Key ({key}) did this {action}; the record is {entity}/{id}; nothing new was written\n  see it: {}",
        ctx.hint(&format!("{entity} {id}"))
    );
    ctx.out.done(
        json!({"ok": true, "action": action, "entity": entity, "id": id, "alreadyDone": true, "receipt": null, "idempotencyKey": key}),
        &text,
    );
    Ok(OK)
}

pub async fn delete(ctx: &mut Ctx<'_>, entity: &str, id: &str) -> Result<u8, Failure> {
    let doc = ctx.session.describe().await?.clone();
    let ent = coerce::entity(&doc, entity).map_err(|p| Failure::problems(vec![p]))?;
    let record = ctx.session.api.view(entity, id).await?;
    let label = ent
        .label
        .as_ref()
        .and_then(|l| record.get(l))
        .and_then(Value::as_str)
        .map(|l| format!("\"{l}\" "))
        .unwrap_or_default();
    let plan = format!("delete {label}({entity}/{id})");
    if !ctx.cli.yes {
        return Err(Failure::new(REFUSED, "approval_required", format!("this would {plan}; it cannot be undone"))
            .fix(format!("to do it, repeat with --yes: {}", ctx.hint(&format!("delete {entity} {id} --yes"))))
            .with("plan", json!({"action": "delete", "entity": entity, "id": id, "record": record})));
    }
    ctx.out.note(&format!("approved with --yes: {plan}"));
    let since = ctx.session.identity.server_now.clone();
    let key = ctx.key();
    match ctx.session.api.delete(entity, id, &key).await {
        Ok(()) => {}
        Err(CallError::App(body)) if body.code == ErrorCode::DuplicateRequest => {
            let first = body.extra.get("id").and_then(Value::as_str).unwrap_or_default();
            return already_done(ctx, "delete", entity, first, Some(id), &key);
        }
        Err(e) => return Err(lost(e, &key)),
    }
    let receipt = ctx.session.api.delete_receipt(&since, entity, id).await;
    let text = match &receipt {
        Some(r) => format!("✓ {}\n  {entity}/{id}", r.text),
        None => format!("✓ deleted {label}({entity}/{id})"),
    };
    ctx.out.done(
        json!({"ok": true, "action": "delete", "entity": entity, "id": id, "alreadyDone": false, "receipt": receipt, "idempotencyKey": key}),
        &text,
    );
    Ok(OK)
}

/// An operation's unknown outcome. Only a job's key is claimed by the app,
/// so only a job may be repeated with its key to learn whether it ran; any
/// other operation may run again on a repeat, and is checked first.
pub fn lost_run(e: CallError, key: &str, op: &protocol::describe::DescribedOperation) -> Failure {
    if op.executor == "job" || !matches!(e, CallError::OutcomeUnknown { .. }) {
        return lost(e, key);
    }
    Failure::from(e).fix(format!(
        "the operation may have run: check its effect (the records it changes, the receipts) before running {} again",
        op.name
    ))
}

/// An unknown outcome names the key to repeat it with: a fresh key would do it twice.
pub fn lost(e: CallError, key: &str) -> Failure {
    let unknown = matches!(e, CallError::OutcomeUnknown { .. });
    let f: Failure = e.into();
    if !unknown {
        return f;
    }
    f.fix(format!(
        "repeat the same command with --key {key}: if the first attempt was carried out, the app answers \"already done\""
    ))
    .with("idempotencyKey", json!(key))
}
