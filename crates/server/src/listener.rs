//! The TCP listener the app is served on, and what it adds to a connection.
//!
//! hyper answers a request it cannot read as HTTP by itself, before any
//! route sees it: `414` for a target past 64 KiB, `431` for a head past its
//! buffer, `400` for bytes that are no request. Those answers are a bare
//! status line with an empty body, and an agent reading them learns no code.
//! Each connection's writes pass through [`Enveloped`], which replaces
//! exactly those answers (hyper's own wording, `content-length: 0`; the
//! app's every error has a JSON body) with the contract's error envelope.
//! hyper closes the connection after them, so nothing follows to misalign.
//!
//! The connecting address travels as [`Peer`] (see `http::source`).

use protocol::ErrorCode;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

/// The app's listener: TCP, no Nagle delay, every connection [`Enveloped`].
pub struct Listener(pub TcpListener);

impl axum::serve::Listener for Listener {
    type Io = Enveloped<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        let (stream, addr) = axum::serve::Listener::accept(&mut self.0).await;
        // Nagle's algorithm would hold a small SSE frame or answer back while
        // an ACK for the previous one is outstanding.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "cannot set TCP_NODELAY");
        }
        (Enveloped::new(stream), addr)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.0.local_addr()
    }
}

/// Where a connection comes from, as handlers read it (`ConnectInfo<Peer>`).
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

impl axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, Listener>> for Peer {
    fn connect_info(stream: axum::serve::IncomingStream<'_, Listener>) -> Peer {
        Peer(*stream.remote_addr())
    }
}

/// A connection whose writes are watched for hyper's own refusals.
pub struct Enveloped<S> {
    inner: S,
    /// A replacement answer still to be written, and how much of it was.
    pending: Option<(Vec<u8>, usize)>,
}

impl<S> Enveloped<S> {
    pub fn new(inner: S) -> Enveloped<S> {
        Enveloped { inner, pending: None }
    }
}

/// hyper's answers to what it could not read, and what each means.
const REFUSALS: &[(&[u8], ErrorCode, &str)] = &[
    (
        b"HTTP/1.1 414 URI Too Long\r\n",
        ErrorCode::UriTooLong,
        "the request's target (path and query) is longer than 64 KiB; send long filters in fewer words, or page through the records",
    ),
    (
        b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
        ErrorCode::HeadersTooLarge,
        "the request's line and headers are larger than the server reads (about 400 KiB); a long filter belongs in fewer words",
    ),
    (b"HTTP/1.1 400 Bad Request\r\n", ErrorCode::MalformedRequest, "the request could not be read as HTTP/1.1"),
];

/// The envelope that replaces `head`, when `head` is one of hyper's refusals.
fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    let (_, code, message) = REFUSALS.iter().find(|(line, _, _)| head.starts_with(line))?;
    let empty = head.windows(19).any(|w| w.eq_ignore_ascii_case(b"content-length: 0\r\n"));
    if !empty || !head.ends_with(b"\r\n\r\n") {
        return None;
    }
    let body = serde_json::to_vec(&protocol::ErrorBody::new(*code, *message)).ok()?;
    let reason = head.get(13..head.iter().position(|b| *b == b'\r')?)?;
    let mut out = format!("HTTP/1.1 {} ", code.status()).into_bytes();
    out.extend_from_slice(reason);
    out.extend_from_slice(
        format!("\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n", body.len())
            .as_bytes(),
    );
    out.extend_from_slice(&body);
    Some(out)
}

impl<S: AsyncWrite + Unpin> Enveloped<S> {
    /// Writes what is left of a replacement; ready once it is all out.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((bytes, written)) = &mut self.pending {
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    *written += n;
                    if *written == bytes.len() {
                        self.pending = None;
                    }
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Enveloped<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Enveloped<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        if buf.starts_with(b"HTTP/1.1 4")
            && let Some(out) = replacement(buf)
        {
            self.pending = Some((out, 0));
            // The refusal counts as written: what goes out is its replacement.
            let _ = self.drain(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        // A refusal is one head and no body: a single slice.
        if let [only] = bufs.iter().filter(|b| !b.is_empty()).collect::<Vec<_>>().as_slice()
            && only.starts_with(b"HTTP/1.1 4")
        {
            return self.poll_write(cx, only);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.drain(cx)?.is_pending() {
            return Poll::Pending;
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_empty_refusals_are_replaced() {
        let refusal = b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\ndate: Thu, 30 Jul 2026 09:15:00 GMT\r\n\r\n";
        let out = String::from_utf8(replacement(refusal).expect("replaced")).expect("text");
        let (head, body) = out.split_once("\r\n\r\n").expect("a head and a body");
        assert!(head.starts_with("HTTP/1.1 414 URI Too Long\r\ncontent-type: application/json\r\n"), "{head}");
        assert!(head.ends_with(&format!("content-length: {}", body.len())), "{head}");
        let envelope: serde_json::Value = serde_json::from_str(body).expect("JSON");
        assert_eq!((envelope["code"].as_str(), envelope["status"].as_u64()), (Some("uri_too_long"), Some(414)));
        // The app's own answers have bodies; none of them is touched.
        assert_eq!(replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 120\r\n\r\n"), None);
        assert_eq!(replacement(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"), None);
    }
}
