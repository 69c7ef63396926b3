//! Consent to an app's requests, kept on the agent's side (DESIGN §8).
//!
//! An app may ask an agent for the capabilities its describe declares. The
//! person consents to each capability, per app, from its words; a request is
//! delivered to the agent only when its capability is consented *as it reads
//! now*: a consent holds the fingerprint of the declaration it was given
//! for, so an app that rewords a capability, widens what it reads or writes,
//! or adds a param loses that consent until the person gives it again.
//! Consents are keyed by origin and the pinned app id, so a new app on an old
//! origin inherits nothing.

use crate::config::{ConfigDir, ConfigError};
use protocol::request::{AgentRequest, Capability};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Given {
    fingerprint: String,
    /// The words consented to, for the person reading their consents back.
    title: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry {
    app_id: String,
    capabilities: BTreeMap<String, Given>,
}

type File = BTreeMap<String, Entry>;

/// Where a capability stands with the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Consented,
    /// Never consented (or revoked).
    Not,
    /// Consented to an earlier wording or shape; asks again.
    Changed,
}

impl Standing {
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Consented => "consented",
            Standing::Not => "not_consented",
            Standing::Changed => "consent_outdated",
        }
    }
}

/// A hash of everything a person consents to: name, words, what it reads and
/// writes, its params and its result.
pub fn fingerprint(capability: &Capability) -> String {
    let text = serde_json::to_string(capability).unwrap_or_default();
    Sha256::digest(text.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// Consents of one app (origin and pinned id).
#[derive(Debug, Clone)]
pub struct Consents {
    config: ConfigDir,
    origin: String,
    app_id: String,
    entry: Entry,
}

impl Consents {
    pub fn load(config: &ConfigDir, origin: &str, app_id: &str) -> Result<Consents, ConfigError> {
        let file: File = config.read(&config.consents())?.unwrap_or_default();
        let entry = file.get(origin).filter(|e| e.app_id == app_id).cloned().unwrap_or_default();
        Ok(Consents { config: config.clone(), origin: origin.to_owned(), app_id: app_id.to_owned(), entry })
    }

    pub fn standing(&self, capability: &Capability) -> Standing {
        match self.entry.capabilities.get(&capability.name) {
            Some(g) if g.fingerprint == fingerprint(capability) => Standing::Consented,
            Some(_) => Standing::Changed,
            None => Standing::Not,
        }
    }

    /// Records the person's consent to `capability` as it reads now.
    pub fn grant(&mut self, capability: &Capability) -> Result<(), ConfigError> {
        let given = Given { fingerprint: fingerprint(capability), title: capability.title.clone() };
        self.entry.capabilities.insert(capability.name.clone(), given);
        self.save()
    }

    /// Withdraws consent; true if there was one.
    pub fn revoke(&mut self, name: &str) -> Result<bool, ConfigError> {
        let had = self.entry.capabilities.remove(name).is_some();
        if had {
            self.save()?;
        }
        Ok(had)
    }

    fn save(&mut self) -> Result<(), ConfigError> {
        let path = self.config.consents();
        let mut file: File = self.config.read(&path)?.unwrap_or_default();
        self.entry.app_id.clone_from(&self.app_id);
        file.insert(self.origin.clone(), self.entry.clone());
        self.config.write(&path, &file)
    }
}

/// What a capability asks, in words a person evaluates before consenting:
/// the app's task, what the agent reads and writes, what a request carries
/// and what the agent answers (the last four from the declaration, not prose).
pub fn words(cap: &Capability) -> String {
    // Everything here comes from the app: printed only through `printable`.
    let p = crate::display::printable;
    let list = |v: &[String]| if v.is_empty() { "nothing".to_owned() } else { p(&v.join(", ")) };
    let fields = |m: &indexmap::IndexMap<String, protocol::describe::DescribedParam>| {
        if m.is_empty() {
            return "nothing".to_owned();
        }
        let one = |(n, d): (&String, &protocol::describe::DescribedParam)| {
            let kind = if d.choices.is_empty() {
                d.kind.clone()
            } else {
                let choices: Vec<String> =
                    d.choices.iter().map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_owned)).collect();
                choices.join(" | ")
            };
            let about = match d.description.trim_end_matches('.') {
                "" => String::new(),
                text => format!(": {text}"),
            };
            p(&format!("{n} ({kind}{about})"))
        };
        m.iter().map(one).collect::<Vec<_>>().join(", ")
    };
    format!(
        "{}\nThe agent would read: {}. It would write: {}.\nA request carries: {}. The agent answers with: {}.",
        p(&cap.description),
        list(&cap.reads),
        list(&cap.writes),
        fields(&cap.params),
        fields(&cap.result)
    )
}

/// The declared capability a request names, if the person consented to it
/// as it reads now; else why not (`undeclared`, `not_consented`,
/// `consent_outdated`).
pub fn consented<'a>(
    declared: &'a [Capability],
    consents: &Consents,
    name: &str,
) -> Result<&'a Capability, &'static str> {
    let cap = declared.iter().find(|c| c.name == name).ok_or("undeclared")?;
    match consents.standing(cap) {
        Standing::Consented => Ok(cap),
        s => Err(s.as_str()),
    }
}

/// The keys of the claims this client holds, by origin and request id, so
/// the agent answers by id and never handles a key.
pub struct Claims {
    config: ConfigDir,
    slot: String,
}

impl Claims {
    pub fn new(config: &ConfigDir, origin: &str, id: &str) -> Claims {
        Claims { config: config.clone(), slot: format!("{origin} {id}") }
    }

    pub fn key(&self) -> Result<Option<String>, ConfigError> {
        let all: BTreeMap<String, String> = self.config.read(&self.config.claims())?.unwrap_or_default();
        Ok(all.get(&self.slot).cloned())
    }

    pub fn keep(&self, key: &str) -> Result<(), ConfigError> {
        let mut all: BTreeMap<String, String> = self.config.read(&self.config.claims())?.unwrap_or_default();
        all.insert(self.slot.clone(), key.to_owned());
        self.config.write(&self.config.claims(), &all)
    }

    pub fn forget(&self) -> Result<(), ConfigError> {
        self.config.remove_key::<String>(&self.config.claims(), &self.slot).map(|_| ())
    }

    /// Answers the claimed request `id` with `body` (which carries the key),
    /// and forgets the key once it is spent: answered, or refused because
    /// the request closed or was claimed again meanwhile.
    pub async fn answer(
        &self,
        api: &crate::api::Api,
        id: &str,
        body: &Value,
    ) -> Result<Result<AgentRequest, crate::api::CallError>, ConfigError> {
        use protocol::ErrorCode::{RequestClaimed, RequestClosed};
        let answered = api.answer(id, body).await;
        let spent = match &answered {
            Ok(_) => true,
            Err(crate::api::CallError::App(e)) => matches!(e.code, RequestClosed | RequestClaimed),
            Err(_) => false,
        };
        if spent {
            self.forget()?;
        }
        Ok(answered)
    }
}

/// A request as the agent receives it: the consented task in the app's
/// declared words, and the person's params as data.
pub fn delivered(request: &AgentRequest, capability: &Capability) -> Value {
    json!({
        "id": request.id,
        "capability": request.capability,
        "title": capability.title,
        "task": capability.description,
        "reads": capability.reads,
        "writes": capability.writes,
        "params": request.params,
        "result": capability.result,
        "status": request.status,
        "requestedBy": request.requested_by,
        "created": request.created,
    })
}

/// Splits requests into the ones to deliver (consented capabilities) and
/// the ones withheld, each with why (`not_consented`, `consent_outdated`,
/// `undeclared`: a capability describe does not list).
pub fn sort(requests: &[AgentRequest], declared: &[Capability], consents: &Consents) -> (Vec<Value>, Vec<Value>) {
    let mut deliver = Vec::new();
    let mut withheld = Vec::new();
    for r in requests {
        let cap = declared.iter().find(|c| c.name == r.capability);
        let standing = cap.map(|c| consents.standing(c));
        match (cap, standing) {
            (Some(c), Some(Standing::Consented)) => deliver.push(delivered(r, c)),
            (_, s) => withheld.push(json!({
                "id": r.id,
                "capability": r.capability,
                "reason": s.map_or("undeclared", Standing::as_str),
            })),
        }
    }
    (deliver, withheld)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use protocol::request::RequestStatus;

    fn capability(description: &str) -> Capability {
        serde_json::from_value(json!({"name": "summarise_board", "title": "Summarise this board",
            "description": description, "reads": ["cards"]}))
        .unwrap()
    }

    fn request(capability: &str) -> AgentRequest {
        AgentRequest {
            id: format!("r_{capability}"),
            capability: capability.into(),
            params: serde_json::Map::new(),
            status: RequestStatus::Pending,
            requested_by: "own_ui".into(),
            created: "2026-07-30 09:15:00.000Z".into(),
            updated: "2026-07-30 09:15:00.000Z".into(),
            claimed_by: None,
            lease_until: None,
            result: None,
            failure: None,
        }
    }

    #[test]
    fn consent_holds_for_the_words_given_and_for_that_app_only() {
        let dir = tempfile::tempdir().unwrap();
        let config = ConfigDir::new(dir.path());
        let asked = capability("Read the cards and summarise them.");
        let mut consents = Consents::load(&config, "http://127.0.0.1:8090", "kanban").unwrap();
        assert_eq!(consents.standing(&asked), Standing::Not);
        consents.grant(&asked).unwrap();

        let again = Consents::load(&config, "http://127.0.0.1:8090", "kanban").unwrap();
        assert_eq!(again.standing(&asked), Standing::Consented, "kept in the file");
        let reworded = capability("Read the cards and email them to me.");
        assert_eq!(again.standing(&reworded), Standing::Changed);
        let mut wider = asked.clone();
        wider.writes.push("cards".into());
        assert_eq!(again.standing(&wider), Standing::Changed);
        let other_app = Consents::load(&config, "http://127.0.0.1:8090", "crm").unwrap();
        assert_eq!(other_app.standing(&asked), Standing::Not, "another app on the origin inherits nothing");

        let (deliver, withheld) =
            sort(&[request("summarise_board"), request("send_mail")], std::slice::from_ref(&asked), &again);
        assert_eq!(deliver.len(), 1);
        assert_eq!(deliver[0]["task"], "Read the cards and summarise them.");
        assert_eq!(withheld, [json!({"id": "r_send_mail", "capability": "send_mail", "reason": "undeclared"})]);
        let (deliver, withheld) = sort(&[request("summarise_board")], &[reworded], &again);
        assert!(deliver.is_empty());
        assert_eq!(withheld[0]["reason"], "consent_outdated");

        // The app's words are printed through `printable`: an enum value or a
        // description cannot rewrite the lines a person consents to.
        let mut hostile = asked.clone();
        hostile.description = "Summarise.\u{1b}[1A\u{1b}[2K".into();
        hostile.params.insert(
            "focus".into(),
            serde_json::from_value(json!({"type": "string", "enum": ["all\u{1b}[2K"], "description": "\u{202e}x"}))
                .unwrap(),
        );
        assert_eq!(
            words(&hostile),
            "Summarise.\\u{1b}[1A\\u{1b}[2K\nThe agent would read: cards. It would write: nothing.\n\
             A request carries: focus (all\\u{1b}[2K: \\u{202e}x). The agent answers with: nothing."
        );

        let mut revoking = Consents::load(&config, "http://127.0.0.1:8090", "kanban").unwrap();
        assert!(revoking.revoke("summarise_board").unwrap());
        assert!(!revoking.revoke("summarise_board").unwrap());
        let after = Consents::load(&config, "http://127.0.0.1:8090", "kanban").unwrap();
        assert_eq!(after.standing(&asked), Standing::Not);
    }
}
