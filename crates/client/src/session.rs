//! A session with one app: address → identity gate → pin → credential.
//!
//! Nothing is sent with a credential before the gate has established that an
//! A2App answers, speaking a protocol we speak, as the app this origin was
//! pinned to. A local app's own token is used only when the registered app id
//! is the one answering, on loopback.
//!
//! The credential, first found wins: `A2APP_TOKEN`, the token stored for the
//! origin (`a2app URL login`), an active grant held for the origin and its
//! pinned app id, the local app's own `.agent-token`. The first two are a
//! person's explicit choice and work exactly as they did before grants; a
//! grant comes before the local token because a person asked for it for
//! this agent, and it is the narrower of the two.

use crate::address::{self, AddressError, Target};
use crate::agent_key::AgentKey;
use crate::api::{Api, CallError, Options};
use crate::coerce::AppClock;
use crate::config::{ConfigDir, ConfigError};
use crate::credentials::{self, Source};
use crate::gate::{self, GateError};
use crate::grants::{self, World};
use crate::pins::{self, Changed, Pin};
use crate::registry::{self, LocalApp};
use protocol::describe::Describe;
use protocol::identity::Identity;
use reqwest::Url;
use std::sync::Arc;

/// What the binary resolved for this run.
pub struct Connect<'a> {
    pub config: &'a ConfigDir,
    /// The first argument, as typed: a URL or a local app's name.
    pub target: &'a str,
    /// `A2APP_TOKEN`, if set.
    pub env_token: Option<&'a str>,
    pub options: Options,
    /// The clock and randomness a grant signs with.
    pub world: World,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Address(#[from] AddressError),
    #[error("no local app is registered as \"{name}\"")]
    UnknownName { name: String, known: Vec<String> },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Unreachable(CallError),
    #[error("{url}: {error}")]
    Gate { url: String, error: GateError },
    #[error(transparent)]
    PinChanged(#[from] Changed),
    /// A local app's registered URL now answers as another app: it is not running.
    #[error("{name} is not running: its last URL, {url}, now answers as \"{now}\"")]
    NotRunning { name: String, url: String, now: String },
    /// The grant held for the origin was given to a key this client no longer has.
    #[error("the grant {grant} held for {origin} was given to the key {fingerprint}, and {why}")]
    GrantKey { origin: String, grant: String, fingerprint: String, why: String },
}

pub struct Session {
    pub api: Api,
    pub identity: Identity,
    pub base: Url,
    pub origin: String,
    /// `FirstContact` when this run pinned the app id: announce it.
    pub pin: Pin,
    pub credential: Source,
    pub local: Option<LocalApp>,
    pub clock: Option<AppClock>,
    config: ConfigDir,
    describe: Option<Describe>,
}

/// The base URL and registered app a target names, without contacting it.
fn locate(config: &ConfigDir, target: &str) -> Result<(Url, Option<LocalApp>), ConnectError> {
    Ok(match address::parse(target)? {
        Target::Url(url) => (url, None),
        Target::Name(name) => {
            let Some(app) = registry::lookup(config, &name)? else {
                let known = registry::list(config)?.into_iter().map(|a| a.id).collect();
                return Err(ConnectError::UnknownName { name, known });
            };
            let url = Url::parse(&app.url).map_err(|e| AddressError::BadUrl(app.url.clone(), e.to_string()))?;
            (url, Some(app))
        }
    })
}

/// The origin a target names (for `forget` and `logout`, which must work
/// precisely when the app at that origin is refused).
pub fn origin_of(config: &ConfigDir, target: &str) -> Result<String, ConnectError> {
    Ok(address::origin(&locate(config, target)?.0))
}

pub async fn connect(c: Connect<'_>) -> Result<Session, ConnectError> {
    let (base, named) = locate(c.config, c.target)?;
    let origin = address::origin(&base);
    let mut api =
        Api::new(base.clone(), Options { token: None, ..c.options.clone() }).map_err(ConnectError::Unreachable)?;
    let (status, body) = api.identity_raw().await.map_err(ConnectError::Unreachable)?;
    let identity = gate::check(status, &body).map_err(|error| ConnectError::Gate { url: base.to_string(), error })?;
    let (pin, local) = match named {
        // By name, the registry says which app must answer; the origin's pin follows it.
        Some(app) if app.id != identity.app.id => {
            return Err(ConnectError::NotRunning { name: app.id, url: app.url, now: identity.app.id });
        }
        Some(app) => (pins::repin(c.config, &origin, &app.id)?, Some(app)),
        None => (pins::check(c.config, &origin, &identity.app.id)??, registry::at_origin(c.config, &origin)?),
    };
    let local = local.filter(|app| app.id == identity.app.id && address::is_loopback(&base));
    let credential = credentials::resolve(c.config, &origin, c.env_token, local.as_ref())?;
    let grant = match credential.source {
        Source::Env | Source::File => None,
        _ => grants::held(c.config, &origin, &identity.app.id)?
            .filter(|h| h.status == protocol::grant::GrantStatus::Active),
    };
    let source = match grant {
        Some(held) => {
            let key_error = |why: String| ConnectError::GrantKey {
                origin: origin.clone(),
                grant: held.id.clone(),
                fingerprint: held.fingerprint.clone(),
                why,
            };
            let key = AgentKey::load(c.config)?.ok_or_else(|| key_error("this client has no key now".into()))?;
            if key.fingerprint() != held.fingerprint {
                return Err(key_error(format!("this client's key is now {}", key.fingerprint())));
            }
            api.set_grant(Some(Arc::new(grants::Access::new(c.config, &origin, &held, key, c.world))));
            Source::Grant { id: held.id }
        }
        None => {
            api.set_token(credential.token.clone());
            credential.source
        }
    };
    let clock = AppClock::from_identity(&identity);
    Ok(Session {
        api,
        identity,
        base,
        origin,
        pin,
        credential: source,
        local,
        clock,
        config: c.config.clone(),
        describe: None,
    })
}

impl Session {
    /// The describe document, from the cache when identity names its schemaVersion.
    pub async fn describe(&mut self) -> Result<&Describe, CallError> {
        let doc = match self.describe.take() {
            Some(doc) => doc,
            None => match crate::cache::load(&self.config, &self.origin, &self.identity.schema_version) {
                Some(doc) => doc,
                None => {
                    let doc = self.api.describe().await?;
                    // A failed cache write only costs a request next time.
                    let _ = crate::cache::store(&self.config, &self.origin, &doc);
                    doc
                }
            },
        };
        Ok(self.describe.insert(doc))
    }
}
