//! The fan-out's floor on this machine: a broadcaster that does nothing but
//! fan a create out, measured with the same subscribers and the same creates
//! as both servers.
//!
//! The one-create fan-out rows time a create from the load generator's
//! `write` until the last of 100 subscribers read its event. Part of that time
//! belongs to no server: waking idle vCPUs, the kernel's loopback sends and
//! the subscribers' own reads on the two cores they share. This broadcaster
//! measures that part. It speaks just enough of PocketBase's realtime protocol
//! for `fanout` (`GET /api/realtime` with `PB_CONNECT`, `POST /api/realtime`,
//! `POST` of a record) over plain tokio sockets, one task per stream as any
//! async server has, with no HTTP library and no storage: a create's body goes
//! straight to every stream and comes back as the answer. Raw SQLite is the
//! create row's physical limit (`baseline`); this is the fan-out rows'.
//!
//! It runs in its own process, as `bench floor ADDR`, so its runtime and
//! allocator are a server's own, and stops on EOF on stdin as ours does.

use crate::peer::{self, Stop};
use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::broadcast;

/// A request head larger than this is refused (the load generator's are small).
const MAX_HEAD: usize = 16 * 1024;
/// A body larger than this is refused.
const MAX_BODY: usize = 1024 * 1024;

/// The hidden `floor` mode: serves until EOF on stdin.
pub fn serve(addr: &str) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let listener = TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
        let mut stop = peer::stdin_closed();
        let (events, _) = broadcast::channel::<Arc<[u8]>>(4096);
        let clients = Arc::new(AtomicU64::new(0));
        loop {
            let (socket, _) = tokio::select! {
                accepted = listener.accept() => accepted?,
                _ = &mut stop => return Ok(()),
            };
            socket.set_nodelay(true)?;
            let (events, clients) = (events.clone(), Arc::clone(&clients));
            tokio::spawn(async move {
                if let Err(e) = connection(socket, &events, &clients).await {
                    eprintln!("floor: a connection failed: {e:#}");
                }
            });
        }
    })
}

/// One keep-alive connection: requests until the peer closes, or one event stream.
async fn connection(mut socket: TcpStream, events: &broadcast::Sender<Arc<[u8]>>, clients: &AtomicU64) -> Result<()> {
    let mut buffer = Vec::with_capacity(8192);
    loop {
        let Some((head, body)) = request(&mut socket, &mut buffer).await? else { return Ok(()) };
        let line = head.lines().next().unwrap_or("");
        if line.starts_with("GET /api/realtime ") {
            return stream(socket, events.subscribe(), clients.fetch_add(1, Ordering::Relaxed)).await;
        }
        let answer: &[u8] = if line.starts_with("POST /api/realtime ") {
            b"HTTP/1.1 204 No Content\r\n\r\n"
        } else if line.starts_with("GET /api/health ") {
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}"
        } else if line.starts_with("POST /api/collections/cards/records ") {
            // The event first, then the answer: as both servers publish.
            let mut data = b"data:{\"action\":\"create\",\"record\":".to_vec();
            data.extend_from_slice(&body);
            data.extend_from_slice(b"}\n\n");
            let _ = events.send(Arc::from(data));
            let mut out =
                format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n", body.len())
                    .into_bytes();
            out.extend_from_slice(&body);
            socket.write_all(&out).await?;
            continue;
        } else {
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n"
        };
        socket.write_all(answer).await?;
    }
}

/// Reads the next request's head and body; `None` when the peer closed between requests.
async fn request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<Option<(String, Vec<u8>)>> {
    let end = loop {
        if let Some(at) = memchr::memmem::find(buffer, b"\r\n\r\n") {
            break at + 4;
        }
        if buffer.len() > MAX_HEAD {
            bail!("a request head over {MAX_HEAD} bytes");
        }
        if fill(socket, buffer).await? == 0 {
            if buffer.is_empty() {
                return Ok(None);
            }
            bail!("the peer closed in the middle of a request");
        }
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let length = head
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.trim().parse::<usize>().context("a bad Content-Length"))
        .transpose()?
        .unwrap_or(0);
    if length > MAX_BODY {
        bail!("a body of {length} bytes");
    }
    while buffer.len() < end + length {
        if fill(socket, buffer).await? == 0 {
            bail!("the peer closed in the middle of a body");
        }
    }
    let body = buffer[end..end + length].to_vec();
    buffer.drain(..end + length);
    Ok(Some((head, body)))
}

async fn fill(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<usize> {
    let mut chunk = [0u8; 8192];
    let n = socket.read(&mut chunk).await?;
    buffer.extend_from_slice(&chunk[..n]);
    Ok(n)
}

/// An event stream: `PB_CONNECT`, then every create's event, each an HTTP chunk
/// with the same `id:` and `event:` lines as PocketBase's.
async fn stream(mut socket: TcpStream, mut events: broadcast::Receiver<Arc<[u8]>>, client: u64) -> Result<()> {
    let client_id = format!("floor{client:035}");
    let head = format!("id:{client_id}\nevent:cards/*\n");
    let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
    chunk(
        &mut out,
        &[format!("id:{client_id}\nevent:PB_CONNECT\ndata:{{\"clientId\":\"{client_id}\"}}\n\n").as_bytes()],
    );
    socket.write_all(&out).await?;
    loop {
        let data = match events.recv().await {
            Ok(data) => data,
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return Ok(()),
        };
        out.clear();
        chunk(&mut out, &[head.as_bytes(), &data]);
        socket.write_all(&out).await?;
    }
}

/// Appends `parts` as one chunk of the chunked coding.
fn chunk(out: &mut Vec<u8>, parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    out.extend_from_slice(format!("{len:x}\r\n").as_bytes());
    for part in parts {
        out.extend_from_slice(part);
    }
    out.extend_from_slice(b"\r\n");
}

/// Starts `bench floor` on `port` and waits until it answers.
pub async fn start(client: &reqwest::Client, exe: &Path, port: u16, log: &Path) -> Result<peer::Server> {
    let mut cmd = Command::new(exe);
    cmd.arg("floor").arg(format!("127.0.0.1:{port}"));
    peer::serve(client, "the fan-out floor", cmd, port, log, Stop::CloseStdin).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_carries_its_length_in_hex() {
        let mut out = Vec::new();
        chunk(&mut out, &[b"id:x\n", &[b'a'; 20]]);
        assert_eq!(out, [b"19\r\nid:x\n".as_slice(), &[b'a'; 20], b"\r\n"].concat());
    }
}
