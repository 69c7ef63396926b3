//! What an answer says about its connection.
//!
//! A handler that refuses a request early (no credentials, an unknown path)
//! never reads its body. hyper then drains what has already arrived; when the
//! rest has not, it closes the connection after the answer without saying so
//! in it, and a keep-alive client that sends its next request on that
//! connection gets a broken pipe instead of an answer (found by the fuzz test:
//! a 401 to a 300 KB body broke the request after it). So the answer to a
//! request whose body was not read to its end says `Connection: close`, as
//! Go's net/http (PocketBase's server) does when it cannot drain a body.

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

pub async fn close_unread(request: Request, next: Next) -> Response {
    if request.body().is_end_stream() {
        return next.run(request).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let tracked = Arc::clone(&read);
    let request = request.map(|inner| Body::new(Tracked { inner, read: tracked }));
    let mut response = next.run(request).await;
    if !read.load(Ordering::Acquire) {
        response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that notes when it was read to its end.
struct Tracked {
    inner: Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        // A reader may stop at the last frame without asking for the end.
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
