//! Deployed identity (DESIGN §8): an agent's keypair, a person's grant and
//! its scopes, and the short-lived tokens a signature buys.
//!
//! 1. An agent asks for a grant: its Ed25519 public key, a name, the scopes
//!    it wants (`data:<entity>:read|write`, `op:<name>`, checked against this
//!    app). Anyone may ask: a pending grant allows nothing and expires
//!    unanswered after [`PENDING_SECONDS`]. What waits is bounded per key,
//!    per network source ([`MAX_PENDING_PER_SOURCE`]), and per pool
//!    ([`MAX_PENDING`] asks with a key, as many OAuth sign-ins), so one
//!    stranger cannot fill the room every other asker needs, and a flood of
//!    asks leaves sign-ins theirs. A person denies every pending ask (or a
//!    source's) at once with [`deny_pending`].
//! 2. A person approves (all the scopes asked, or fewer) or denies it. Only
//!    a person decides: the app's own page in a single-user app, a signed-in
//!    user in a multi-user one, never an agent. The grant then acts for that
//!    person: a user's rules still apply to it, so effective permission is the
//!    user's own intersected with the scopes.
//! 3. The agent signs [`protocol::grant::token_message`] (this app's id, the
//!    grant, the time, a fresh nonce) and gets an access token valid for
//!    [`TOKEN_SECONDS`]. Only the token's SHA-256 is stored; a nonce is spent
//!    once; a signature more than [`SKEW_SECONDS`] old or early is refused.
//! 4. Revoking ends the grant and deletes its tokens in one transaction: the
//!    next call with any of them is refused.
//!
//! Every step is audited in its own transaction (`grant.ask|approve|deny|revoke`).

use crate::caller::{Caller, CallerKind, GrantAccess, User};
use crate::context::Context;
use a2app_definition::Error;
use a2app_definition::guard::only;
use a2app_definition::secret::digest;
use a2app_store::blocking;
use a2app_store::{GrantConflict, GrantLimits, GrantRoom, GrantStep, IssuedToken};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use protocol::grant::{AccessToken, Grant, GrantStatus, Scope, TOKEN_PREFIX};
use protocol::{ErrorCode, Violation};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The audit entity of grant steps.
pub const ENTITY: &str = "_a2app_grants";
/// How long a grant waits for a person's decision.
pub const PENDING_SECONDS: i64 = 15 * 60;
/// Most grants waiting for a decision at once in each pool (asks with a key;
/// OAuth sign-ins), and per agent key (an agent asking again while one waits
/// is a mistake, not a new need).
pub const MAX_PENDING: u64 = 1000;
pub const MAX_PENDING_PER_KEY: u64 = 3;
/// Most grants waiting at once from one network source (an address, an IPv6
/// /64): more than an honest machine's agents ask for, and few enough that
/// one stranger fills no pool.
pub const MAX_PENDING_PER_SOURCE: u64 = 10;
/// The bounds every ask is stored under.
pub const LIMITS: GrantLimits = GrantLimits {
    pending: MAX_PENDING,
    pending_per_key: MAX_PENDING_PER_KEY,
    pending_per_source: MAX_PENDING_PER_SOURCE,
    keep: KEEP,
};
/// Closed grants kept for reading back.
pub const KEEP: u64 = 1000;
/// How long an access token works.
pub const TOKEN_SECONDS: i64 = 15 * 60;
/// Live tokens per grant: an agent refreshing early never piles them up.
pub const MAX_TOKENS: u64 = 10;
/// How far a signature's timestamp may be from the app's clock.
pub const SKEW_SECONDS: i64 = 120;
/// How long a spent nonce is remembered: longer than any timestamp it could
/// be signed with stays acceptable.
const NONCE_SECONDS: i64 = 2 * SKEW_SECONDS + 60;
pub const MAX_SCOPES: usize = 64;
pub const MAX_AGENT_CHARS: usize = 100;

/// Asks for a grant: `{"publicKey": …, "agent": …, "scopes": [...]}`, from
/// `source` (where the ask came from on the network; empty when unknown).
pub async fn ask(app: &Context, caller: &Caller, source: &str, body: &Value) -> Result<Grant, Error> {
    if caller.kind == CallerKind::Grant {
        return Err(Error::Forbidden("a grant cannot ask for another; ask with the key itself".into()));
    }
    let fields = only(body, &["publicKey", "agent", "scopes"])?;
    let mut problems = Vec::new();
    let key = match fields.get("publicKey") {
        Some(Value::String(text)) => match public_key(text) {
            Some(key) => Some(key),
            None => {
                problems.push(
                    Violation::new(ErrorCode::InvalidString, "publicKey is not an Ed25519 public key")
                        .field("publicKey")
                        .expected("32 bytes of an Ed25519 public key, base64url without padding"),
                );
                None
            }
        },
        other => {
            let (code, why) = match other {
                None => (ErrorCode::RequiredField, "publicKey is required: the agent's Ed25519 public key"),
                Some(_) => (ErrorCode::InvalidString, "publicKey is a text: the agent's Ed25519 public key"),
            };
            let v = Violation::new(code, why).field("publicKey").expected("base64url without padding");
            problems.push(match other {
                Some(got) => v.got(got.clone()),
                None => v,
            });
            None
        }
    };
    let agent = match fields.get("agent") {
        Some(Value::String(name))
            if !name.trim().is_empty() && name.chars().count() <= MAX_AGENT_CHARS && protocol::text::is_plain(name) =>
        {
            Some(name.trim().to_owned())
        }
        other => {
            let v = Violation::new(
                if other.is_none() { ErrorCode::RequiredField } else { ErrorCode::InvalidString },
                format!("agent is the agent's name for the person to read: 1 to {MAX_AGENT_CHARS} plain characters"),
            )
            .field("agent");
            problems.push(match other {
                Some(got) => v.got(got.clone()),
                None => v,
            });
            None
        }
    };
    let scopes = match scopes(app, fields.get("scopes"), None) {
        Ok(s) => s,
        Err(more) => {
            problems.extend(more);
            Vec::new()
        }
    };
    let (Some(key), Some(agent)) = (key, agent) else { return Err(Error::Invalid(problems)) };
    if !problems.is_empty() {
        return Err(Error::Invalid(problems));
    }
    let now = app.clock.now();
    let created = a2app_definition::datetime::format(now);
    let expires = a2app_definition::datetime::format(now + jiff::SignedDuration::from_secs(PENDING_SECONDS));
    let grant = Grant {
        id: a2app_definition::id::generate(),
        agent,
        public_key: URL_SAFE_NO_PAD.encode(key.as_bytes()),
        fingerprint: fingerprint(key.as_bytes()),
        scopes,
        status: GrantStatus::Pending,
        acts_for: String::new(),
        created: created.clone(),
        updated: created.clone(),
        expires,
        client: None,
        source: source.to_owned(),
    };
    let audit = receipt(caller, &grant, &created, format!("Agent \"{}\" asked for a grant", grant.agent), "ask");
    let store = Arc::clone(&app.store);
    let stored = grant.clone();
    let full = |message: String| Err(Error::Invalid(vec![Violation::new(ErrorCode::OutOfRange, message)]));
    match blocking(move || Ok(store.ask_grant(&stored, LIMITS, &audit, None)?)).await? {
        GrantRoom::Asked => Ok(grant),
        GrantRoom::KeyFull => full(format!(
            "this key has {MAX_PENDING_PER_KEY} grants waiting for a person already; wait for their answer or ask again after they expire"
        )),
        GrantRoom::SourceFull => Err(Error::RateLimited(PENDING_SECONDS.unsigned_abs())),
        GrantRoom::Full => full(format!(
            "{MAX_PENDING} grants wait for a person already; a person can deny them on the app's page (/_/), or they expire within {} minutes",
            PENDING_SECONDS / 60
        )),
    }
}

/// A person denies every pending grant at once, or with `{"source": …}`
/// those from one source; answers how many were denied. For the owner of the
/// app only: the pending asks are theirs to see (see [`list`]).
pub async fn deny_pending(app: &Context, caller: &Caller, body: &Value) -> Result<u64, Error> {
    let source = match only(body, &["source"])?.get("source") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(other) => {
            return Err(Error::Invalid(vec![
                Violation::new(ErrorCode::InvalidString, "source is the text a pending grant shows as its source")
                    .field("source")
                    .got(other.clone()),
            ]));
        }
    };
    // Whoever sees every pending ask (see `list`): the page of a single-user
    // app, or the owner's agent token. Denying widens nothing, so the token,
    // which may not approve, may clear a flood.
    let owner =
        person(app, caller).as_deref() == Some(OWNER) || (caller.kind == CallerKind::Agent && caller.user.is_none());
    if !owner {
        return Err(Error::Forbidden("pending grants are denied in bulk by the app's owner".into()));
    }
    let store = Arc::clone(&app.store);
    let now = a2app_definition::datetime::format(app.clock.now());
    let from = source;
    let pending: Vec<Grant> = blocking(move || Ok(store.pending_grants(from.as_deref(), 2 * MAX_PENDING)?))
        .await?
        .into_iter()
        .map(|g| lapsed(g, &now))
        .filter(|g| g.status == GrantStatus::Pending)
        .collect();
    let mut denied = 0;
    for grant in pending {
        let text = format!("Denied a grant for agent \"{}\" (all pending denied at once)", grant.agent);
        match step(app, caller, &grant, GrantStep::Deny, text, "deny").await {
            Ok(_) => denied += 1,
            // Decided or expired meanwhile: nothing left to deny.
            Err(Error::Invalid(_) | Error::NotFound) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(denied)
}

/// One grant, to whoever knows its id (the asking agent polls this).
pub async fn get(app: &Context, id: &str) -> Result<Grant, Error> {
    let store = Arc::clone(&app.store);
    let id = id.to_owned();
    let now = a2app_definition::datetime::format(app.clock.now());
    let grant = blocking(move || Ok(store.grant(&id)?)).await?.ok_or(Error::NotFound)?;
    Ok(lapsed(grant, &now))
}

/// Grants newest first: all of them for the app's owner (the page of a
/// single-user app, the agent token), a user's own for a user. A pending
/// grant is listed to the owner only: anyone listing it could decide it and
/// make it act for themselves; its person opens it by the id its agent shows.
pub async fn list(app: &Context, caller: &Caller) -> Result<Vec<Grant>, Error> {
    let acts_for = match (caller.kind.clone(), person(app, caller)) {
        (CallerKind::Agent, _) if caller.user.is_none() => None,
        (_, Some(who)) if who == OWNER => None,
        (_, Some(who)) => Some(who),
        _ => return Err(Error::Forbidden("grants are listed to a person (or the agent token)".into())),
    };
    let store = Arc::clone(&app.store);
    let now = a2app_definition::datetime::format(app.clock.now());
    let grants = blocking(move || Ok(store.grants(acts_for.as_deref(), 200)?)).await?;
    Ok(grants.into_iter().map(|g| lapsed(g, &now)).collect())
}

/// A person approves a pending grant: `{"scopes": [...]}` narrows it to
/// fewer than were asked; no body approves all of them.
pub async fn approve(app: &Context, caller: &Caller, id: &str, body: &Value) -> Result<Grant, Error> {
    let who = decider(app, caller)?;
    let fields = only(body, &["scopes"])?;
    let current = get(app, id).await?;
    let scopes = match fields.get("scopes") {
        None | Some(Value::Null) => current.scopes.clone(),
        given => scopes(app, given, Some(&current.scopes)).map_err(Error::Invalid)?,
    };
    let text = format!("Approved a grant for agent \"{}\": {}", current.agent, scopes.join(", "));
    step(app, caller, &current, GrantStep::Approve { acts_for: who, scopes }, text, "approve").await
}

/// A person denies a pending grant.
pub async fn deny(app: &Context, caller: &Caller, id: &str) -> Result<Grant, Error> {
    decider(app, caller)?;
    let current = get(app, id).await?;
    let text = format!("Denied a grant for agent \"{}\"", current.agent);
    step(app, caller, &current, GrantStep::Deny, text, "deny").await
}

/// Ends a grant at once: by the person it acts for, the app's owner, or the
/// grant itself (an agent giving up what it holds).
pub async fn revoke(app: &Context, caller: &Caller, id: &str) -> Result<Grant, Error> {
    let current = get(app, id).await?;
    let only_for = match (&caller.kind, &caller.grant, person(app, caller)) {
        (CallerKind::Grant, Some(g), _) if g.id == current.id => None,
        (CallerKind::Grant, _, _) => return Err(Error::NotFound),
        (CallerKind::Agent, _, _) if caller.user.is_none() => None,
        (_, _, Some(who)) if who == OWNER => None,
        (_, _, Some(who)) => Some(who),
        _ => return Err(Error::Forbidden("a grant is revoked by its person, the app's owner or itself".into())),
    };
    let text = format!("Revoked the grant of agent \"{}\"", current.agent);
    step(app, caller, &current, GrantStep::Revoke { acts_for: only_for }, text, "revoke").await
}

/// Trades a signature for an access token:
/// `{"timestamp": unix seconds, "nonce": …, "signature": base64url}`, the
/// signature over [`protocol::grant::token_message`] by the grant's key.
pub async fn token(app: &Context, id: &str, body: &Value) -> Result<AccessToken, Error> {
    let fields = only(body, &["timestamp", "nonce", "signature"])?;
    let refused = |why: &str| Error::Unauthorized(format!("no token: {why}"));
    let timestamp = match fields.get("timestamp") {
        Some(t) => t.as_i64().ok_or_else(|| {
            Error::Invalid(vec![
                Violation::new(ErrorCode::InvalidNumber, "timestamp is the signing time in whole unix seconds")
                    .field("timestamp")
                    .got(t.clone()),
            ])
        })?,
        None => {
            return Err(Error::Invalid(vec![
                Violation::new(ErrorCode::RequiredField, "timestamp is required: the signing time in unix seconds")
                    .field("timestamp"),
            ]));
        }
    };
    let nonce = match fields.get("nonce") {
        Some(Value::String(n))
            if (16..=128).contains(&n.len())
                && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') =>
        {
            n.clone()
        }
        _ => {
            return Err(Error::Invalid(vec![
                Violation::new(
                    ErrorCode::InvalidString,
                    "nonce is 16 to 128 characters of [A-Za-z0-9_-], new for every token",
                )
                .field("nonce"),
            ]));
        }
    };
    let signature = fields
        .get("signature")
        .and_then(Value::as_str)
        .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
        .and_then(|bytes| ed25519_dalek::Signature::from_slice(&bytes).ok())
        .ok_or_else(|| {
            Error::Invalid(vec![
                Violation::new(
                    ErrorCode::InvalidString,
                    "signature is 64 bytes of an Ed25519 signature, base64url without padding",
                )
                .field("signature"),
            ])
        })?;
    let now = app.clock.now();
    if now.as_second().abs_diff(timestamp) > SKEW_SECONDS.unsigned_abs() {
        return Err(refused(&format!(
            "the timestamp is more than {SKEW_SECONDS} s from the app's clock ({}); sign again with the current time",
            now.as_second()
        )));
    }
    let grant = get(app, id).await.map_err(|_| refused("no such grant"))?;
    if grant.status != GrantStatus::Active {
        return Err(refused(&format!("the grant is {}", grant.status.as_str())));
    }
    if grant.client.is_some() {
        return Err(refused("this grant was given to an OAuth client; it gets tokens at /oauth/token"));
    }
    let key =
        public_key(&grant.public_key).ok_or_else(|| Error::Internal("a stored grant key does not parse".into()))?;
    let message = protocol::grant::token_message(&app.definition.config.id, &grant.id, timestamp, &nonce);
    if key.verify_strict(message.as_bytes(), &signature).is_err() {
        return Err(refused("the signature does not verify with the grant's key"));
    }
    let token = format!("{TOKEN_PREFIX}{}", a2app_definition::secret::secret());
    let expires = now + jiff::SignedDuration::from_secs(TOKEN_SECONDS);
    let issued = IssuedToken {
        grant_id: grant.id.clone(),
        hash: digest(&token),
        expires: a2app_definition::datetime::format(expires),
        nonce,
        nonce_expires: a2app_definition::datetime::format(now + jiff::SignedDuration::from_secs(NONCE_SECONDS)),
    };
    let store = Arc::clone(&app.store);
    let at = a2app_definition::datetime::format(now);
    let stored = issued.clone();
    match blocking(move || Ok(store.issue_grant_token(&stored, &at, MAX_TOKENS)?)).await? {
        Ok(()) => Ok(AccessToken { token, expires_in: TOKEN_SECONDS as u64, expires: issued.expires }),
        Err(GrantConflict::Replayed) => Err(refused("this nonce was signed for a token before; sign a new one")),
        Err(GrantConflict::Decided(status)) => Err(refused(&format!("the grant is {}", status.as_str()))),
        Err(GrantConflict::NotFound) => Err(refused("no such grant")),
    }
}

/// Ends a grant on the app's own account (no person asked): its tokens
/// showed signs of theft. Audited as any revocation, with `why`.
pub(crate) async fn end(app: &Context, id: &str, why: &str) -> Result<(), Error> {
    let current = get(app, id).await?;
    let text = format!("Revoked the grant of \"{}\": {why}", current.agent);
    let caller = Caller::anonymous();
    step(app, &caller, &current, GrantStep::Revoke { acts_for: None }, text, "revoke").await.map(|_| ())
}

/// The caller an access token makes: the grant's agent, acting for its
/// person with its scopes; `unauthorized` for an unknown, expired or
/// revoked token.
pub async fn authenticate(app: &Context, token: &str) -> Result<Caller, Error> {
    let invalid = || {
        Error::Unauthorized(
            "the grant token is unknown, expired or revoked; get a new one (sign in again, or trade a new signature)"
                .into(),
        )
    };
    let hash = digest(token);
    let now = a2app_definition::datetime::format(app.clock.now());
    let key = hash.clone();
    let a2app_store::TokenGrant { grant, expires, audience } =
        a2app_store::read(&app.store, move |store| Ok(store.grant_by_token(&hash, &now)?))
            .await?
            .ok_or_else(invalid)?;
    let user = match grant.acts_for.strip_prefix("user:") {
        Some(id) => {
            let record = crate::users::user_record(app, id).await?.ok_or_else(invalid)?;
            Some(User { id: id.to_owned(), record })
        }
        None => None,
    };
    let scopes: BTreeSet<Scope> = grant.scopes.iter().filter_map(|s| Scope::parse(s)).collect();
    Ok(Caller {
        kind: CallerKind::Grant,
        agent: Some(grant.agent.clone()),
        user,
        grant: Some(Arc::new(GrantAccess {
            id: grant.id,
            fingerprint: grant.fingerprint,
            scopes,
            token_hash: key,
            token_expires: expires,
            audience,
        })),
        request: None,
    })
}

/// Whether the token a caller came with still works: not expired, its grant
/// not revoked. What a realtime stream, opened once, asks as it goes on.
pub async fn still_valid(app: &Context, access: &GrantAccess) -> bool {
    let now = a2app_definition::datetime::format(app.clock.now());
    if access.token_expires.as_str() <= now.as_str() {
        return false;
    }
    let hash = access.token_hash.clone();
    a2app_store::read(&app.store, move |store| Ok(store.grant_by_token(&hash, &now)?)).await.ok().flatten().is_some()
}

/// Whom a single-user app's grants act for: its one person.
pub const OWNER: &str = "owner";

/// The person behind a caller: `owner` for the page of a single-user app,
/// `user:<id>` for a signed-in user; never an agent or a grant.
pub fn person(app: &Context, caller: &Caller) -> Option<String> {
    let multi = app.definition.config.auth_mode == a2app_definition::AuthMode::MultiUser;
    match (&caller.kind, &caller.user) {
        (CallerKind::Agent | CallerKind::Grant, _) => None,
        (_, Some(user)) => Some(format!("user:{}", user.id)),
        (CallerKind::OwnUi, None) if !multi => Some(OWNER.to_owned()),
        _ => None,
    }
}

/// Who may decide on a grant: a person, and whom the grant will act for.
fn decider(app: &Context, caller: &Caller) -> Result<String, Error> {
    person(app, caller).ok_or_else(|| {
        Error::Forbidden(
            "a grant is approved or denied by a person: from the app's own page (signed in, in a multi-user app), never by an agent"
                .into(),
        )
    })
}

async fn step(
    app: &Context,
    caller: &Caller,
    current: &Grant,
    step: GrantStep,
    text: String,
    verb: &str,
) -> Result<Grant, Error> {
    let now = a2app_definition::datetime::format(app.clock.now());
    let audit = receipt(caller, current, &now, text, verb);
    let store = Arc::clone(&app.store);
    let (id, entry) = (current.id.clone(), audit.clone());
    match blocking(move || Ok(store.step_grant(&id, &step, &now, &entry)?)).await? {
        Ok(grant) => {
            if caller.kind == CallerKind::Grant || caller.kind == CallerKind::Agent {
                app.agent_log.append(&audit);
            }
            Ok(grant)
        }
        Err(GrantConflict::NotFound | GrantConflict::Replayed) => Err(Error::NotFound),
        Err(GrantConflict::Decided(status)) => Err(Error::Invalid(vec![
            Violation::new(ErrorCode::RequestClosed, format!("the grant is {} already", status.as_str()))
                .field("status")
                .got(Value::from(status.as_str())),
        ])),
    }
}

pub(crate) fn receipt(
    caller: &Caller,
    grant: &Grant,
    at: &str,
    text: String,
    verb: &str,
) -> protocol::receipt::Receipt {
    let fields: Map<String, Value> = match json!({
        "agent": grant.agent,
        "fingerprint": grant.fingerprint,
        "scopes": grant.scopes,
    }) {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    protocol::receipt::Receipt {
        text,
        action: format!("grant.{verb}"),
        entity: ENTITY.to_owned(),
        id: grant.id.clone(),
        fields,
        at: at.to_owned(),
        agent: caller.agent.clone(),
        caller: caller.label(),
        before: Default::default(),
    }
}

/// A pending grant past its time reads as expired before the store marks it.
fn lapsed(mut grant: Grant, now: &str) -> Grant {
    if grant.status == GrantStatus::Pending && grant.expires.as_str() <= now {
        grant.status = GrantStatus::Expired;
    }
    grant
}

/// The scopes of an ask (or, with `within`, of an approval narrowing one):
/// a list of known scopes naming this app's entities and operations,
/// duplicates dropped, in a stable order.
fn scopes(app: &Context, given: Option<&Value>, within: Option<&[String]>) -> Result<Vec<String>, Vec<Violation>> {
    let items = match given {
        Some(Value::Array(items)) if !items.is_empty() && items.len() <= MAX_SCOPES => items,
        _ => {
            return Err(vec![
                Violation::new(ErrorCode::RequiredField, format!("scopes is a list of 1 to {MAX_SCOPES} scopes"))
                    .field("scopes")
                    .expected("[\"data:<entity>:read\", \"data:<entity>:write\", \"op:<operation>\"] from describe"),
            ]);
        }
    };
    let mut out = BTreeSet::new();
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("scopes.{i}");
        let Some(scope) = item.as_str().and_then(Scope::parse) else {
            problems.push(
                Violation::new(ErrorCode::InvalidString, "not a scope")
                    .field(field)
                    .got(item.clone())
                    .expected("data:<entity>:read, data:<entity>:write or op:<operation>"),
            );
            continue;
        };
        let known = match &scope {
            Scope::Read(e) | Scope::Write(e) => app.definition.schema.entities.contains_key(e),
            Scope::Operation(o) => app.definition.operations.iter().any(|op| &op.name == o),
        };
        let text = scope.to_string();
        let accounts = matches!(&scope, Scope::Write(e) if e == a2app_definition::users::ENTITY)
            && app.definition.config.auth_mode == a2app_definition::AuthMode::MultiUser;
        if accounts {
            problems.push(
                Violation::new(
                    ErrorCode::InvalidEnum,
                    format!(
                        "{text}: a grant does not change accounts (sign-in email, password); that stays with the person"
                    ),
                )
                .field(field)
                .got(item.clone()),
            );
        } else if !known {
            let (code, what) = match scope {
                Scope::Operation(_) => (ErrorCode::UnknownOperation, "operation"),
                _ => (ErrorCode::UnknownEntity, "entity"),
            };
            problems.push(
                Violation::new(code, format!("{text} names no {what} of this app; describe lists them"))
                    .field(field)
                    .got(item.clone()),
            );
        } else if within.is_some_and(|asked| !asked.contains(&text)) {
            problems.push(
                Violation::new(
                    ErrorCode::InvalidEnum,
                    format!("{text} was not asked for; a person may only narrow a grant"),
                )
                .field(field)
                .got(item.clone()),
            );
        } else {
            out.insert(scope);
        }
    }
    if problems.is_empty() { Ok(out.iter().map(Scope::to_string).collect()) } else { Err(problems) }
}

fn public_key(text: &str) -> Option<ed25519_dalek::VerifyingKey> {
    let bytes: [u8; 32] = URL_SAFE_NO_PAD.decode(text).ok()?.try_into().ok()?;
    ed25519_dalek::VerifyingKey::from_bytes(&bytes).ok().filter(|k| !k.is_weak())
}

/// The first 16 hex digits of the key's SHA-256.
pub fn fingerprint(key: &[u8]) -> String {
    Sha256::digest(key).iter().take(8).map(|b| format!("{b:02x}")).collect()
}
