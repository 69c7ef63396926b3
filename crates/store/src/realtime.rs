//! The change feed: every committed write is published here, once.
//!
//! Transports subscribe (the SSE realtime API today) and filter by topic.
//! A slow subscriber that falls behind misses events rather than slowing
//! writers: the channel is bounded and lagging receivers are told so.

use serde_json::{Map, Value};
use std::sync::{Arc, OnceLock};
use tokio::sync::broadcast;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Create,
    Update,
    Delete,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        }
    }
}

/// One committed change, with the record as stored (the deleted one for a delete).
#[derive(Debug)]
pub struct Change {
    pub action: Action,
    pub entity: String,
    pub record: Map<String, Value>,
    encoded: OnceLock<String>,
}

impl Change {
    pub fn new(action: Action, entity: String, record: Map<String, Value>) -> Change {
        Change { action, entity, record, encoded: OnceLock::new() }
    }

    /// `{"action":…,"record":…}` with the whole record: the event data of
    /// every subscriber that sees the record unshaped. Encoded by the first
    /// subscriber that needs it and shared by the rest, so a change fanned out
    /// to a hundred streams is serialized once.
    pub fn encoded(&self) -> &str {
        self.encoded.get_or_init(|| {
            #[derive(serde::Serialize)]
            struct Data<'a> {
                action: &'a str,
                record: &'a Map<String, Value>,
            }
            serde_json::to_string(&Data { action: self.action.as_str(), record: &self.record })
                .unwrap_or_else(|_| String::from("{}"))
        })
    }
}

#[derive(Debug, Clone)]
pub struct Hub {
    tx: broadcast::Sender<Arc<Change>>,
}

impl Default for Hub {
    fn default() -> Self {
        Hub::new()
    }
}

impl Hub {
    pub fn new() -> Hub {
        let (tx, _) = broadcast::channel(4096);
        Hub { tx }
    }

    /// Whether any stream listens now (a change nobody sees is not built).
    pub fn has_subscribers(&self) -> bool {
        self.tx.receiver_count() > 0
    }

    pub fn publish(&self, change: Change) {
        // No subscriber is not an error.
        let _ = self.tx.send(Arc::new(change));
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Change>> {
        self.tx.subscribe()
    }
}

/// A realtime client id: 40 characters of `[a-zA-Z0-9]`, as PocketBase's.
pub fn client_id() -> String {
    use rand::RngExt;
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut rng = rand::rng();
    (0..40).map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char).collect()
}
