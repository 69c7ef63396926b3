//! Signing users of multi-user apps in and out of requests: login, token
//! checks and refresh. Storage of hashes is the store's; token format is `auth`'s.

use crate::auth;
use crate::caller::{Caller, User};
use crate::context::Context;
use a2app_definition::Error;
use a2app_definition::record::present;
use a2app_definition::users::ENTITY;
use a2app_store::{blocking, read};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The secret every user token is signed with (besides the user's own key).
async fn signing_secret(app: &Context) -> Result<String, Error> {
    let store = Arc::clone(&app.store);
    blocking(move || Ok(store.secret("auth")?)).await
}

pub(crate) async fn user_record(app: &Context, id: &str) -> Result<Option<Map<String, Value>>, Error> {
    let ids = [id.to_owned()];
    let schema = Arc::clone(&app.definition.schema);
    let rows = read(&app.store, move |store| Ok(store.get_many(&schema, ENTITY, &ids)?)).await?;
    Ok(rows.into_iter().next().map(|r| present(ENTITY, r)))
}

/// The user a token belongs to; any flaw (signature, expiry, revoked key) is `unauthorized`.
pub async fn authenticate(app: &Context, token: &str) -> Result<User, Error> {
    let invalid = || Error::Unauthorized("the user token is invalid or expired; sign in again".into());
    let claims = auth::peek(token).ok_or_else(invalid)?;
    let id = claims.id.clone();
    let key = read(&app.store, move |store| Ok(store.token_key(&id)?)).await?.ok_or_else(invalid)?;
    let secret = signing_secret(app).await?;
    auth::verify(&secret, &key, token, app.clock.now()).ok_or_else(invalid)?;
    let record = user_record(app, &claims.id).await?.ok_or_else(invalid)?;
    Ok(User { id: claims.id, record })
}

/// `auth-with-password`: a token and the user's record, or `auth_failed`.
pub async fn login(app: &Context, identity: &str, password: &str) -> Result<(String, Map<String, Value>), Error> {
    if app.definition.config.auth_mode != a2app_definition::AuthMode::MultiUser {
        return Err(Error::Missing("this app has no users: it is single-user".into()));
    }
    let (store, schema) = (Arc::clone(&app.store), Arc::clone(&app.definition.schema));
    let (email, password) = (identity.trim().to_owned(), password.to_owned());
    let found = blocking(move || {
        let creds = store.credentials(&schema, &email)?;
        // Hash even when nobody has this email, so timing does not tell.
        let hash = creds.as_ref().map(|c| c.password_hash.clone()).unwrap_or_else(|| DECOY_HASH.to_owned());
        let ok = auth::password_matches(&hash, &password);
        Ok(creds.filter(|_| ok))
    })
    .await?;
    let creds = found.ok_or(Error::AuthFailed)?;
    let secret = signing_secret(app).await?;
    let token = auth::issue(&secret, &creds.token_key, &creds.user_id, app.clock.now());
    let record = user_record(app, &creds.user_id).await?.ok_or(Error::AuthFailed)?;
    Ok((token, record))
}

/// `auth-refresh`: a fresh token for the signed-in caller.
pub async fn refresh(app: &Context, caller: &Caller) -> Result<(String, Map<String, Value>), Error> {
    if caller.grant.is_some() {
        // A grant acts for its user within its scopes and lifetime; a user's
        // token would be neither scoped nor revoked with it.
        return Err(Error::Forbidden(
            "a grant's token is not a sign-in: it cannot be traded for a user's token".into(),
        ));
    }
    let user = caller
        .user
        .as_ref()
        .ok_or_else(|| Error::Unauthorized("auth-refresh needs a user's token in Authorization".into()))?;
    let id = user.id.clone();
    let key = read(&app.store, move |store| Ok(store.token_key(&id)?)).await?.ok_or(Error::AuthFailed)?;
    let secret = signing_secret(app).await?;
    Ok((auth::issue(&secret, &key, &user.id, app.clock.now()), user.record.clone()))
}

/// A valid Argon2id hash of a random password, checked when the email is unknown.
const DECOY_HASH: &str =
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$3ZcNPHvlRn6Bl6ZbW2eImv1c7sMsN4TzNbXqDq2Egtk";
