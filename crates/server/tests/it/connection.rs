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
