//! The a2app transports over one `core::App`.
//!
//! `http` holds the axum routes of the A2App contract and the PocketBase-
//! compatible records API, and the discovery documents; `mcp` the MCP
//! server (rmcp) at `/mcp`; `realtime` the SSE realtime API; `backend` the
//! HTTP client `http` operations reach the app's backend process with. A handler is
//! thin: establish the caller, decode, one `a2app_core` call, encode. Nothing
//! here decides what a caller may do or touches storage.

pub mod backend;
pub mod http;
pub mod listener;
pub mod mcp;
pub mod realtime;

use a2app_core::App;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;

/// Serves `app` on `listener` until `shutdown` resolves, and runs its
/// scheduled operations meanwhile. The binary and the tests share this entry
/// point; tests bind `127.0.0.1:0`.
pub async fn run(
    app: Arc<App>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    install_backend(&app);
    let port = listener.local_addr()?.port();
    let router = http::router(http::State::new(Arc::clone(&app), port));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let scheduler = tokio::spawn(a2app_core::schedule::run(Arc::clone(&app), async move {
        let _ = stopped.await;
    }));
    // The connecting address is where a request came from (`http::source`).
    let service = router.into_make_service_with_connect_info::<listener::Peer>();
    let served = axum::serve(listener::Listener(listener), service).with_graceful_shutdown(shutdown).await;
    let _ = stop.send(());
    let _ = scheduler.await;
    served
}

/// Gives `http` operations the backend named in app.toml, unless a library
/// user installed their own.
pub fn install_backend(app: &App) {
    if let Some(config) = &app.definition.config.backend {
        app.operations.set_backend(Arc::new(backend::HttpBackend::new(&config.url)));
    }
}
