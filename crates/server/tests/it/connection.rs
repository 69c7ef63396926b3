//! Keep-alive: a connection is reused only when the app read the request's
//! body to its end; otherwise the answer says `Connection: close`.

use crate::TestApp;
use serde_json::json;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Everything the app sends on `socket` until it closes it (or 10 s pass).
async fn read_until_close(socket: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(10), socket.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "the app kept the connection open: {}", String::from_utf8_lossy(&answer));
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn a_refusal_before_the_body_arrived_closes_the_connection_and_says_so() {
    let t = TestApp::kanban().await;
    let mut socket = TcpStream::connect(t.url.trim_start_matches("http://")).await.unwrap();
    // 300,000 bytes announced, 1,000 sent: the app refuses the forged token
    // before the rest could arrive, so it cannot drain the body.
    let head = "POST /api/collections/cards/records HTTP/1.1\r\nHost: 127.0.0.1\r\nX-LUI-Token: forged\r\n\
                Content-Type: application/json\r\nContent-Length: 300000\r\n\r\n";
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(&[b' '; 1000]).await.unwrap();
    let answer = read_until_close(&mut socket).await;
    assert!(answer.starts_with("HTTP/1.1 401 "), "{answer}");
    assert!(answer.contains("\r\nconnection: close\r\n"), "{answer}");
    assert!(answer.contains("\"code\":\"unauthorized\""), "{answer}");
}

#[tokio::test]
async fn a_body_read_to_its_end_keeps_the_connection() {
    let t = TestApp::kanban().await;
    let mut socket = TcpStream::connect(t.url.trim_start_matches("http://")).await.unwrap();
    let body = json!({"name": "To Do"}).to_string();
    let create = format!(
        "POST /api/collections/lists/records HTTP/1.1\r\nHost: 127.0.0.1\r\nX-LUI-Token: {}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        t.token,
        body.len()
    );
    let health = "GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    socket.write_all(create.as_bytes()).await.unwrap();
    socket.write_all(health.as_bytes()).await.unwrap();
    let answer = read_until_close(&mut socket).await;
    assert_eq!(answer.matches("HTTP/1.1 200 OK\r\n").count(), 2, "{answer}");
    let second = answer[1..].find("HTTP/1.1 200 OK\r\n").map(|i| i + 1).unwrap();
    assert!(answer[..second].contains("\"collectionName\":\"lists\""), "{answer}");
    assert!(!answer[..second].contains("connection: close"), "{answer}");
}

/// Hardening issue, finding 6: what hyper refuses before any route sees it
/// (a 70 KB target, a 400 KB filter, bytes that are no request) answered an
/// empty body; each now carries the envelope, with its own code.
#[tokio::test]
async fn requests_http_cannot_read_are_answered_with_the_envelope() {
    let t = TestApp::kanban().await;
    let cases = [
        (
            format!(
                "GET /api/collections/cards/records?filter={} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                "a".repeat(70_000)
            ),
            414,
            "uri_too_long",
        ),
        (
            format!(
                "GET /api/collections/cards/records HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filter: {}\r\n\r\n",
                "a".repeat(500_000)
            ),
            431,
            "headers_too_large",
        ),
        ("GARBAGE\0\r\n\r\n".to_owned(), 400, "malformed_request"),
    ];
    for (request, status, code) in cases {
        let mut socket = TcpStream::connect(t.url.trim_start_matches("http://")).await.unwrap();
        // The server may answer and close before it read everything sent.
        let _ = socket.write_all(request.as_bytes()).await;
        let answer = read_until_close(&mut socket).await;
        assert!(answer.starts_with(&format!("HTTP/1.1 {status} ")), "{}", &answer[..answer.len().min(300)]);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.contains("\r\ncontent-type: application/json\r\n"), "{head}");
        let envelope: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!((envelope["a2app"].as_bool(), envelope["code"].as_str()), (Some(true), Some(code)), "{body}");
        assert_eq!(envelope["status"], status);
    }
}
