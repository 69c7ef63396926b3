//! `a2app add`: add a remote app from what a person has (a domain, the app's
//! page, a catalog or a card), through `a2app_client::discovery`. Adding runs
//! the identity gate and pins the app's id, and records the app so the
//! gateway drives it; it signs in to nothing and runs nothing.

use super::output::{Failure, NOTHING_FOUND, OK, Out, REFUSED, UNREACHABLE};
use a2app_client::config::ConfigDir;
use a2app_client::connections::{self, Connection};
use a2app_client::discovery::{self, DiscoveryError};
use a2app_client::pins::Pin;
use a2app_client::session;
use serde_json::json;

pub async fn add(
    out: Out,
    config: &ConfigDir,
    input: &str,
    allow_local: bool,
    world: a2app_client::grants::World,
) -> Result<u8, Failure> {
    let found = discovery::find_app(input, allow_local).await.map_err(refused)?;
    let base = found.base.as_str().trim_end_matches('/').to_owned();
    let session = session::connect(session::Connect {
        config,
        target: &base,
        env_token: None,
        // The gate reaches the app through the same address check as discovery.
        options: a2app_client::api::Options { discovery_rules: Some(allow_local), ..Default::default() },
        world,
    })
    .await?;
    let first = session.pin == Pin::FirstContact;
    if first {
        out.note(&format!(
            "⚠ First contact with {}: pinning app.id \"{}\".",
            session.origin,
            a2app_client::display::printable(&session.identity.app.id)
        ));
    }
    let connection = Connection {
        url: base.clone(),
        id: session.identity.app.id.clone(),
        name: session.identity.app.name.clone(),
        card: Some(found.card_url.to_string()),
    };
    connections::add(config, &session.origin, connection.clone()).map_err(Failure::config)?;
    let text = format!(
        "✓ added {} ({}) at {base}, found by its card {}\n  MCP hosts reach it through `a2app mcp` now; writes need its token: echo \"$TOKEN\" | a2app {base} login\n  walk it: a2app {base}",
        connection.name, connection.id, found.card_url
    );
    out.done(json!({"ok": true, "added": connection, "firstContact": first}), &text);
    Ok(OK)
}

/// Discovery's refusals, each with its code and what to do.
fn refused(e: DiscoveryError) -> Failure {
    let message = e.to_string();
    match e {
        DiscoveryError::BadInput(_) => Failure::new(REFUSED, "invalid_address", message)
            .fix("give a domain (apps.example.com), the app's page, its catalog or its card URL"),
        DiscoveryError::Blocked { .. } => Failure::new(REFUSED, "blocked_address", message).fix(
            "an app on this machine or your network needs --allow-local; link-local (cloud metadata) addresses are never reached",
        ),
        DiscoveryError::Unreachable { .. } => {
            Failure::new(UNREACHABLE, "unreachable", message).fix("check the address and that the app is up")
        }
        DiscoveryError::Status { .. } => Failure::new(NOTHING_FOUND, "not_discoverable", message)
            .fix("give the app's page, catalog or card URL instead"),
        DiscoveryError::TooLarge { .. } => {
            Failure::new(REFUSED, "too_large", message).fix("discovery reads documents of at most 1 MiB")
        }
        DiscoveryError::TooManyRedirects { .. } => {
            Failure::new(REFUSED, "too_many_redirects", message).fix("give the address the redirects end at")
        }
        DiscoveryError::Unrecognized { .. }
        | DiscoveryError::NoCatalog { .. }
        | DiscoveryError::NoCard { .. }
        | DiscoveryError::NoRemote { .. } => Failure::new(NOTHING_FOUND, "not_discoverable", message)
            .fix("ask the app's publisher for its MCP server card URL, or give the app's URL to a2app directly"),
        DiscoveryError::SeveralCards { cards, .. } => Failure::new(REFUSED, "several_cards", message)
            .fix("pick one: a2app add CARD_URL")
            .with("cards", json!(cards)),
    }
}
