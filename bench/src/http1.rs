//! A minimal HTTP/1.1 client over one keep-alive socket: the load generator's.
//!
//! It shares two cores with the servers under test, so it does as little as
//! a request needs: one `write` of a prepared request, `read`s until the
//! response is complete (`Content-Length` or the chunked coding, the two both
//! servers use), no pool, no URL parsing, no timer per request. The same
//! client drives both servers.

use anyhow::{Context, Result, bail};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A request, encoded once per send into the socket's write.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: &'static str,
    /// Path and query, already percent-encoded.
    pub target: String,
    pub headers: Vec<(&'static str, String)>,
    /// A JSON body.
    pub body: Option<Vec<u8>>,
}

impl Request {
    pub fn get(target: String) -> Request {
        Request { method: "GET", target, headers: Vec::new(), body: None }
    }

    pub fn post_json(target: String, body: &serde_json::Value) -> Request {
        Request { method: "POST", target, headers: Vec::new(), body: Some(body.to_string().into_bytes()) }
    }

    pub fn header(mut self, name: &'static str, value: impl Into<String>) -> Request {
        self.headers.push((name, value.into()));
        self
    }

    fn encode(&self, host: &str, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.target.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\nHost: ");
        out.extend_from_slice(host.as_bytes());
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if let Some(body) = &self.body {
            out.extend_from_slice(b"Content-Type: application/json\r\nContent-Length: ");
            out.extend_from_slice(body.len().to_string().as_bytes());
            out.extend_from_slice(b"\r\n\r\n");
            out.extend_from_slice(body);
        } else {
            out.extend_from_slice(b"\r\n");
        }
    }
}

/// How a response's body is delimited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Framing {
    Length(usize),
    Chunked,
}

/// One connection to `host` (`127.0.0.1:port`).
pub struct Conn {
    socket: TcpStream,
    host: String,
    /// Bytes read and not yet consumed.
    raw: Vec<u8>,
    out: Vec<u8>,
}

impl Conn {
    /// Connects to the server at `url` (`http://host:port`).
    pub async fn open(url: &str) -> Result<Conn> {
        let host = url.strip_prefix("http://").context("the URL is not http://")?.trim_end_matches('/').to_owned();
        let socket = TcpStream::connect(&host).await.with_context(|| format!("cannot connect to {host}"))?;
        socket.set_nodelay(true)?;
        Ok(Conn { socket, host, raw: Vec::with_capacity(16 * 1024), out: Vec::with_capacity(1024) })
    }

    /// Sends `request` and reads the whole response: its status and body.
    pub async fn send(&mut self, request: &Request) -> Result<(u16, Vec<u8>)> {
        self.write(request).await?;
        let (status, framing) = self.head().await?;
        let body = match framing {
            Framing::Length(n) => {
                while self.raw.len() < n {
                    self.fill().await?;
                }
                self.raw.drain(..n).collect()
            }
            Framing::Chunked => {
                let mut body = Vec::new();
                while self.chunk(&mut body).await? {}
                body
            }
        };
        Ok((status, body))
    }

    /// Writes `request` without reading the answer (see [`Conn::head`]).
    pub async fn write(&mut self, request: &Request) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        request.encode(&self.host, &mut out);
        let written = self.socket.write_all(&out).await;
        self.out = out;
        Ok(written?)
    }

    /// Reads a response's status line and headers.
    pub async fn head(&mut self) -> Result<(u16, Framing)> {
        let end = loop {
            if let Some(i) = find(&self.raw, b"\r\n\r\n") {
                break i;
            }
            self.fill().await?;
        };
        let head = String::from_utf8_lossy(&self.raw[..end]).into_owned();
        self.raw.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status = lines
            .next()
            .and_then(|l| l.split(' ').nth(1))
            .and_then(|s| s.parse::<u16>().ok())
            .with_context(|| format!("not an HTTP response: {head:?}"))?;
        let mut framing = Framing::Length(0);
        for line in lines {
            let Some((name, value)) = line.split_once(':') else { continue };
            let value = value.trim();
            if name.eq_ignore_ascii_case("content-length") {
                framing = Framing::Length(value.parse().with_context(|| format!("a bad Content-Length: {value}"))?);
            } else if name.eq_ignore_ascii_case("transfer-encoding") && value.eq_ignore_ascii_case("chunked") {
                framing = Framing::Chunked;
                break;
            }
        }
        Ok((status, framing))
    }

    /// Appends the next chunk of a chunked body to `out`; false after the last one.
    pub async fn chunk(&mut self, out: &mut Vec<u8>) -> Result<bool> {
        loop {
            if let Some(line) = find(&self.raw, b"\r\n") {
                let size_text =
                    std::str::from_utf8(&self.raw[..line]).context("a chunk size line that is not UTF-8")?;
                let size_text = size_text.split(';').next().unwrap_or("").trim();
                let size = usize::from_str_radix(size_text, 16)
                    .with_context(|| format!("a bad chunk size line: {size_text:?}"))?;
                let start = line + 2;
                if self.raw.len() >= start + size + 2 {
                    out.extend_from_slice(&self.raw[start..start + size]);
                    self.raw.drain(..start + size + 2);
                    return Ok(size > 0);
                }
            }
            self.fill().await?;
        }
    }

    /// Appends whatever body bytes have arrived to `out` (a stream that is not chunked).
    pub async fn some(&mut self, out: &mut Vec<u8>) -> Result<()> {
        if self.raw.is_empty() {
            self.fill().await?;
        }
        out.append(&mut self.raw);
        Ok(())
    }

    async fn fill(&mut self) -> Result<()> {
        self.raw.reserve(16 * 1024);
        if self.socket.read_buf(&mut self.raw).await? == 0 {
            bail!("the server closed the connection");
        }
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// A server that answers each request with the next canned response,
    /// written in small pieces so reads split headers and chunks.
    async fn canned(responses: Vec<&'static str>) -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.expect("accept");
            let mut seen = Vec::new();
            for response in responses {
                let mut block = [0u8; 4096];
                while find(&seen, b"\r\n\r\n").is_none() {
                    let n = socket.read(&mut block).await.expect("read");
                    seen.extend_from_slice(&block[..n]);
                }
                let end = find(&seen, b"\r\n\r\n").expect("a head") + 4;
                let head = String::from_utf8_lossy(&seen[..end]).to_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .map_or(0, |v| v.trim().parse::<usize>().expect("length"));
                while seen.len() < end + length {
                    let n = socket.read(&mut block).await.expect("read body");
                    seen.extend_from_slice(&block[..n]);
                }
                seen.drain(..end + length);
                for piece in response.as_bytes().chunks(7) {
                    socket.write_all(piece).await.expect("write");
                    socket.flush().await.expect("flush");
                    tokio::task::yield_now().await;
                }
            }
        });
        url
    }

    #[tokio::test]
    async fn reads_length_and_chunked_bodies_split_across_reads() {
        let url = canned(vec![
            "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"a\":\"one\"}",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"b\":\r\nA;ext=1\r\n\"two-four\"\r\n1\r\n}\r\n0\r\n\r\n",
            "HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}",
        ])
        .await;
        let mut conn = Conn::open(&url).await.expect("connect");
        let get = Request::get("/x".into());
        assert_eq!(conn.send(&get).await.expect("first"), (200, b"{\"a\":\"one\"}".to_vec()));
        let post = Request::post_json("/y".into(), &serde_json::json!({"k": 1})).header("X-Test", "yes");
        assert_eq!(conn.send(&post).await.expect("second"), (200, b"{\"b\":\"two-four\"}".to_vec()));
        assert_eq!(conn.send(&get).await.expect("third"), (404, b"{}".to_vec()));
    }

    #[test]
    fn requests_encode_with_host_headers_and_length() {
        let mut out = Vec::new();
        Request::post_json("/api/x?a=1".into(), &serde_json::json!({"t": "é"}))
            .header("Idempotency-Key", "k1")
            .encode("127.0.0.1:1", &mut out);
        assert_eq!(
            String::from_utf8(out).expect("utf-8"),
            "POST /api/x?a=1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\nIdempotency-Key: k1\r\nContent-Type: application/json\r\nContent-Length: 10\r\n\r\n{\"t\":\"é\"}"
        );
    }
}
