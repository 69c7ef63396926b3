//! The numbers a host's tool call holds that a parse into doubles and 64-bit
//! integers would change (`a2app_core::number`). rmcp parses each message
//! before a tool sees it, so the text is read here, as it arrives on stdin:
//! each line (one JSON-RPC message) with such a number is noted under its
//! request id, and the tool call with that id is refused by field, before
//! anything is sent to an app that would store the neighbouring double.

use a2app_core::number::Inexact;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// A line longer than this is passed on without being read for numbers; the
/// host's messages are far shorter, and the memory stays bounded.
const MAX_LINE: usize = 4 << 20;

/// Noted numbers by request id (its JSON text), taken by the call.
#[derive(Clone, Default)]
pub struct Noted(Arc<Mutex<HashMap<String, Vec<Inexact>>>>);

impl Noted {
    /// The numbers of the call with `id` under `params.arguments`, from the
    /// arguments' root (`record.estimate`).
    pub fn take(&self, id: &rmcp::model::RequestId) -> Vec<Inexact> {
        let key = serde_json::to_string(id).unwrap_or_default();
        let found = self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&key).unwrap_or_default();
        found
            .into_iter()
            .filter(|n| n.path.len() > 2 && n.path[0] == "params" && n.path[1] == "arguments")
            .map(|n| Inexact { path: n.path[2..].to_vec(), text: n.text })
            .collect()
    }

    fn note(&self, line: &[u8]) {
        let found = a2app_core::number::inexact(line);
        if found.is_empty() {
            return;
        }
        let Ok(message) = serde_json::from_slice::<serde_json::Value>(line) else { return };
        let Some(id) = message.get("id") else { return };
        let key = serde_json::to_string(id).unwrap_or_default();
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(key, found);
    }
}

/// stdin, read through: every complete line is noted before rmcp reads it.
pub struct Reading<R> {
    inner: R,
    line: Vec<u8>,
    noted: Noted,
}

impl<R> Reading<R> {
    pub fn new(inner: R, noted: Noted) -> Reading<R> {
        Reading { inner, line: Vec::new(), noted }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Reading<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let fresh = buf.filled()[before..].to_vec();
            let this = &mut *self;
            for chunk in fresh.split_inclusive(|b| *b == b'\n') {
                if this.line.len() + chunk.len() <= MAX_LINE {
                    this.line.extend_from_slice(chunk);
                } else {
                    // Too long to read: forget it, and skip to its end.
                    this.line.clear();
                    this.line.push(b'\n');
                }
                if chunk.ends_with(b"\n") {
                    if this.line.len() > 1 {
                        this.noted.note(&this.line);
                    }
                    this.line.clear();
                }
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn a_calls_numbers_are_noted_under_its_id() {
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create","arguments":{"record":{"estimate":18446744073709551617}}}}"#,
            "\n"
        );
        let noted = Noted::default();
        let mut reading = Reading::new(input.as_bytes(), noted.clone());
        let mut out = Vec::new();
        reading.read_to_end(&mut out).await.expect("read");
        assert_eq!(out, input.as_bytes(), "what rmcp reads is what came");
        let found = noted.take(&rmcp::model::RequestId::Number(7));
        assert_eq!(
            found,
            [Inexact { path: vec!["record".into(), "estimate".into()], text: "18446744073709551617".into() }]
        );
        assert_eq!(noted.take(&rmcp::model::RequestId::Number(7)), [], "taken once");
        assert_eq!(noted.take(&rmcp::model::RequestId::Number(1)), []);
    }
}
