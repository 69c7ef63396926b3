//! `a2app APP grant …`: deployed identity from the agent's side. The agent's
//! own key (`a2app_client::agent_key`) asks the app for a grant with scopes;
//! a person approves it at the app (`<url>/_/`), comparing the fingerprint
//! printed here; from then on every call to the app carries the grant's
//! short-lived access token, unless an agent token was given explicitly
//! (`a2app_client::session` holds the precedence).
//!
//! The grant is kept the moment it is asked, as pending, so an interrupted
//! or timed-out wait loses nothing: `a2app APP grant` reads it again and
//! takes it up once a person approved. Only an active grant is used.

use super::Ctx;
use super::output::{Failure, NOTHING_FOUND, OK, REFUSED};
use a2app_client::agent_key::AgentKey;
use a2app_client::api::CallError;
use a2app_client::config::ConfigDir;
use a2app_client::credentials::Source;
use a2app_client::display::printable;
use a2app_client::grants::{self, Held};
use protocol::grant::{Grant, GrantStatus};
use serde_json::{Value, json};
use std::time::Duration;

/// `a2app APP grant ask SCOPE…`: asks, shows what the person will compare,
/// and waits for their decision.
pub async fn ask(ctx: &mut Ctx<'_>, words: &[&str]) -> Result<u8, Failure> {
    let scopes: Vec<String> = ctx.cli.scope.iter().cloned().chain(words.iter().map(|w| (*w).to_owned())).collect();
    if scopes.is_empty() {
        return Err(Failure::new(REFUSED, "invalid_command", "grant ask needs at least one scope")
            .fix(format!("{} (describe lists the entities and operations)", ctx.hint("grant ask data:ENTITY:read"))));
    }
    let config = config(ctx)?;
    let (origin, app_id) = (ctx.session.origin.clone(), ctx.session.identity.app.id.clone());
    if let Some(held) = grants::held(&config, &origin, &app_id).map_err(Failure::config)?
        && held.status == GrantStatus::Active
    {
        // One grant per app: a second would leave the first active, unseen.
        return Err(Failure::new(
            REFUSED,
            "grant_held",
            format!("this client already holds the active grant {} for {origin}", held.id),
        )
        .fix(format!("to ask for other scopes, end it first: {}", ctx.hint("grant revoke")))
        .with("grant", json!(held.id)));
    }
    let key = AgentKey::load_or_create(&config, ctx.env.world.random).map_err(Failure::config)?;
    let name = super::agent(ctx.cli, ctx.env, "a2app-cli").unwrap_or_default();
    let body = json!({"publicKey": key.public_key(), "agent": name, "scopes": scopes});
    let grant = ctx.session.api.ask_grant(&body).await?;
    if grant.fingerprint != key.fingerprint() {
        // The person compares the app's fingerprint with ours: they must agree.
        return Err(Failure::new(
            REFUSED,
            "unexpected_answer",
            format!("the app shows the key as {}, but this agent's key is {}", grant.fingerprint, key.fingerprint()),
        ));
    }
    grants::keep(&config, &origin, &Held::new(&app_id, &grant)).map_err(Failure::config)?;
    let at = approve_at(ctx);
    let waiting = if ctx.cli.no_wait {
        String::new()
    } else {
        format!(
            "\nwaiting up to {} s for the decision (Ctrl-C stops waiting; {} checks it later)",
            ctx.cli.wait,
            ctx.hint("grant")
        )
    };
    ctx.out.note(&format!(
        "asked {} for grant {}\n  agent: {}\n  key fingerprint: {}\n  scopes: {}\na person approves it at {at}, checking the fingerprint is {}{waiting}",
        printable(&ctx.session.identity.app.name),
        printable(&grant.id),
        printable(&grant.agent),
        key.fingerprint(),
        printable(&grant.scopes.join(", ")),
        key.fingerprint(),
    ));
    if ctx.cli.no_wait {
        let text = format!("grant {} is pending; check it: {}", printable(&grant.id), ctx.hint("grant"));
        ctx.out.done(json!({"ok": true, "grant": grant, "approveAt": at}), &text);
        return Ok(OK);
    }
    let decided = wait(ctx, &grant.id).await?;
    settle(ctx, &config, decided)
}

/// The longest `--wait` honoured as given: a year.
const MAX_WAIT_SECONDS: u64 = 365 * 24 * 3600;

/// Polls the grant until a person decided, the wait ran out or Ctrl-C.
async fn wait(ctx: &Ctx<'_>, id: &str) -> Result<Grant, Failure> {
    // Twice the job poll (1 s by default): a person takes seconds to decide.
    let every = ctx.env.poll.saturating_mul(2);
    // A pending grant expires on its own within minutes, so a longer wait
    // only means "until a decision"; the cap keeps the deadline representable
    // (an Instant plus u64::MAX seconds overflows).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(ctx.cli.wait.min(MAX_WAIT_SECONDS));
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        let grant = ctx.session.api.grant(id).await?;
        if grant.status != GrantStatus::Pending {
            return Ok(grant);
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Err(pending(ctx, &grant, &format!("no decision within {} s", ctx.cli.wait)));
        }
        tokio::select! {
            _ = &mut ctrl_c => return Err(pending(ctx, &grant, "stopped waiting (Ctrl-C)")),
            () = tokio::time::sleep(every.min(deadline - now)) => {}
        }
    }
}

fn pending(ctx: &Ctx<'_>, grant: &Grant, why: &str) -> Failure {
    Failure::new(
        REFUSED,
        "grant_pending",
        format!("{why}: grant {} is still pending; unanswered, it expires at {}", grant.id, grant.expires),
    )
    .fix(format!("a person approves it at {}; then {} takes it up", approve_at(ctx), ctx.hint("grant")))
    .with("grant", json!(grant.id))
    .with("approveAt", json!(approve_at(ctx)))
}

/// Brings the local record in line with the grant as the app says it is
/// now: active is kept as active (and used from now on), a closed one is
/// forgotten, with its own code.
fn settle(ctx: &mut Ctx<'_>, config: &ConfigDir, grant: Grant) -> Result<u8, Failure> {
    let (origin, app_id) = (ctx.session.origin.clone(), ctx.session.identity.app.id.clone());
    let id = printable(&grant.id);
    match grant.status {
        GrantStatus::Active => {
            grants::keep(config, &origin, &Held::new(&app_id, &grant)).map_err(Failure::config)?;
            let text = format!("{}\n{}", describe(&grant), in_use(ctx));
            ctx.out.done(json!({"ok": true, "grant": grant, "inUse": used(ctx)}), &text);
            Ok(OK)
        }
        GrantStatus::Pending => {
            let text = format!("{}\na person approves it at {}", describe(&grant), approve_at(ctx));
            ctx.out.done(json!({"ok": true, "grant": grant, "approveAt": approve_at(ctx)}), &text);
            Ok(OK)
        }
        closed => {
            grants::forget(config, &origin).map_err(Failure::config)?;
            let status = closed.as_str();
            let message = match closed {
                GrantStatus::Denied => format!("a person denied grant {id}"),
                GrantStatus::Expired => format!("grant {id} expired: nobody decided in time"),
                _ => format!("grant {id} was revoked"),
            };
            Err(Failure::new(REFUSED, &format!("grant_{status}"), format!("{message}; this client forgot it"))
                .fix(format!("ask again: {}", ctx.hint(&format!("grant ask {}", grant.scopes.join(" ")))))
                .with("grant", json!(grant.id))
                .with("status", json!(status)))
        }
    }
}

/// `a2app APP grant`: the grant held for this app, as the app says now.
pub async fn status(ctx: &mut Ctx<'_>) -> Result<u8, Failure> {
    let config = config(ctx)?;
    let Some(held) = held(ctx, &config)? else {
        let text = format!("no grant held for this app; ask for one: {}", ctx.hint("grant ask SCOPE …"));
        ctx.out.done(json!({"ok": true, "grant": null}), &text);
        return Ok(NOTHING_FOUND);
    };
    match ctx.session.api.grant(&held.id).await {
        Ok(grant) => settle(ctx, &config, grant),
        Err(CallError::App(body)) if body.code.as_str() == "not_found" => {
            grants::forget(&config, &ctx.session.origin).map_err(Failure::config)?;
            Err(gone(ctx, &held))
        }
        Err(e) => Err(e.into()),
    }
}

/// `a2app APP grant revoke`: ends the grant at the app with its own token,
/// then forgets it. A pending one cannot be ended by the agent (it has no
/// token yet): it is forgotten, and expires unanswered.
pub async fn revoke(ctx: &mut Ctx<'_>) -> Result<u8, Failure> {
    let config = config(ctx)?;
    let Some(held) = held(ctx, &config)? else {
        ctx.out.done(json!({"ok": true, "revoked": false, "forgotten": false}), "no grant held for this app");
        return Ok(NOTHING_FOUND);
    };
    let live = match ctx.session.api.grant(&held.id).await {
        Ok(grant) => Some(grant),
        Err(CallError::App(body)) if body.code.as_str() == "not_found" => None,
        Err(e) => return Err(e.into()),
    };
    let origin = ctx.session.origin.clone();
    let (grant, revoked) = match live {
        Some(grant) if grant.status == GrantStatus::Active => {
            let key = AgentKey::load(&config).map_err(Failure::config)?.ok_or_else(|| {
                Failure::new(REFUSED, "grant_key", "this client no longer has the key the grant was given to")
                    .fix(format!("a person revokes it at {}; then {}", approve_at(ctx), ctx.hint("grant revoke")))
            })?;
            let access = grants::Access::new(&config, &origin, &held, key, ctx.env.world);
            (Some(ctx.session.api.revoke_grant(&access).await?), true)
        }
        other => (other, false),
    };
    grants::forget(&config, &origin).map_err(Failure::config)?;
    let id = printable(&held.id);
    let text = match grant.as_ref().map(|g| g.status) {
        _ if revoked => format!("revoked grant {id} and forgot it"),
        Some(GrantStatus::Pending) => format!(
            "forgot grant {id}; it was still pending: a person can deny it at {}, or it expires unanswered",
            approve_at(ctx)
        ),
        Some(status) => format!("forgot grant {id} ({})", status.as_str()),
        None => format!("forgot grant {id} (the app no longer knows it)"),
    };
    ctx.out.done(json!({"ok": true, "grant": grant, "revoked": revoked, "forgotten": true}), &text);
    Ok(OK)
}

/// A failure's fix when the grant is the credential: an `unauthorized` or
/// `insufficient_scope` is about the grant, not about an agent token.
pub fn explain(ctx: &Ctx<'_>, mut failure: Failure) -> Failure {
    let Source::Grant { id } = &ctx.session.credential else { return failure };
    match failure.code.as_str() {
        "unauthorized" => {
            failure.fix = Some(format!(
                "grant {id} no longer buys access (revoked, or its key refused): {} shows it, {} forgets it",
                ctx.hint("grant"),
                ctx.hint("grant revoke")
            ));
            failure.extra.insert("grant".into(), json!(id));
        }
        "insufficient_scope" => {
            let scope = failure.extra.get("scope").and_then(Value::as_str).unwrap_or("that scope").to_owned();
            failure.fix = Some(format!(
                "grant {id} does not carry {scope}; to ask for it: {}, then {}",
                ctx.hint("grant revoke"),
                ctx.hint(&format!("grant ask … {scope}"))
            ));
            failure.extra.insert("grant".into(), json!(id));
        }
        _ => {}
    }
    failure
}

fn held(ctx: &Ctx<'_>, config: &ConfigDir) -> Result<Option<Held>, Failure> {
    grants::held(config, &ctx.session.origin, &ctx.session.identity.app.id).map_err(Failure::config)
}

fn gone(ctx: &Ctx<'_>, held: &Held) -> Failure {
    Failure::new(REFUSED, "grant_gone", format!("the app no longer knows grant {}; this client forgot it", held.id))
        .fix(format!("ask again: {}", ctx.hint(&format!("grant ask {}", held.scopes.join(" ")))))
        .with("grant", json!(held.id))
}

fn describe(grant: &Grant) -> String {
    let mut text = format!(
        "grant {}: {}\n  agent: {}\n  key fingerprint: {}\n  scopes: {}",
        printable(&grant.id),
        grant.status.as_str(),
        printable(&grant.agent),
        printable(&grant.fingerprint),
        printable(&grant.scopes.join(", ")),
    );
    if !grant.acts_for.is_empty() {
        text.push_str(&format!("\n  acts for: {}", printable(&grant.acts_for)));
    }
    if grant.status == GrantStatus::Pending {
        text.push_str(&format!("\n  expires unanswered at: {}", printable(&grant.expires)));
    }
    text
}

/// Whether calls to this app act with an active grant: unless an agent
/// token was given explicitly (`a2app_client::session`).
fn used(ctx: &Ctx<'_>) -> bool {
    !matches!(ctx.session.credential, Source::Env | Source::File)
}

fn in_use(ctx: &Ctx<'_>) -> String {
    match &ctx.session.credential {
        Source::Env => "  in use: no, A2APP_TOKEN comes first while it is set".into(),
        Source::File => format!("  in use: no, the token stored with login comes first ({})", ctx.hint("logout")),
        _ => "  in use: yes, every call to this app carries its access token".into(),
    }
}

fn approve_at(ctx: &Ctx<'_>) -> String {
    format!("{}/_/", ctx.session.base.as_str().trim_end_matches('/'))
}

fn config(ctx: &Ctx<'_>) -> Result<ConfigDir, Failure> {
    ctx.env.config.clone().ok_or_else(|| Failure::config("no config directory"))
}
