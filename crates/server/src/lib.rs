//! The a2app transports over one `core::App`.
//!
//! `http` holds the axum routes of the A2App contract and the PocketBase-
//! compatible records API, and the discovery documents; `mcp` the MCP
//! server (rmcp) at `/mcp`; `realtime` the SSE realtime API. A handler is
//! thin: establish the caller, decode, one `a2app_core` call, encode. Nothing
//! here decides what a caller may do or touches storage.

pub mod http;
pub mod mcp;
pub mod realtime;

use a2app_core::App;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serves `app` on `listener` until `shutdown` resolves. The binary and the
/// tests share this entry point; tests bind `127.0.0.1:0`.
pub async fn run(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let port = listener.local_addr()?.port();
    let router = http::router(http::State::new(app, port));
    axum::serve(listener, router).with_graceful_shutdown(shutdown).await
}
