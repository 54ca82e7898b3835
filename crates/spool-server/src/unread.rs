//! Keep-alive connections after an answer given before the request body
//! was read (a bad path, a missing token, an overloaded server).
//!
//! HTTP/1.1 hyper keeps such a connection only if the rest of the body is
//! already in its buffer; otherwise it closes the connection after the
//! answer, which says nothing of it, and the client's next request on it
//! fails (a non-idempotent POST cannot then be retried safely). So every
//! HTTP/1 request body is watched, and one dropped unread comes back here:
//! if it declared a small length ([`DRAIN_MAX`]) the rest is read and
//! discarded in the background and the connection stays usable; otherwise
//! (larger, of unknown length, a client too slow to send it in time, or one
//! closing anyway) the answer says `Connection: close`.
//!
//! HTTP/2 needs none of this: an unread body ends its own stream only.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::Request;
use axum::http::header::{CONNECTION, CONTENT_LENGTH};
use axum::http::{HeaderValue, StatusCode, Version};
use axum::middleware::Next;
use axum::response::Response;
use http_body::{Frame, SizeHint};

/// Largest declared body read to its end after an early answer.
pub(crate) const DRAIN_MAX: u64 = 1024 * 1024;

/// How long the rest of an unread body may take to arrive; a client slower
/// than this loses the connection.
const DRAIN_TIME: Duration = Duration::from_secs(10);

/// Middleware: see the module docs.
pub(crate) async fn keep_alive(req: Request, next: Next) -> Response {
    if req.version() >= Version::HTTP_2 || req.body().is_end_stream() {
        return next.run(req).await;
    }
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let closing = req
        .headers()
        .get(CONNECTION)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
    let slot = Arc::new(Slot::default());
    let req = req.map(|inner| {
        Body::new(Watched {
            inner: Some(inner),
            slot: slot.clone(),
        })
    });
    let mut res = next.run(req).await;
    if slot.ended.load(Ordering::Acquire) {
        return res;
    }
    let leftover = slot
        .leftover
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    let drain = declared.is_some_and(|n| n <= DRAIN_MAX)
        && !closing
        && res.status() != StatusCode::REQUEST_TIMEOUT;
    match leftover {
        Some(body) if drain => {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(DRAIN_TIME, discard(body)).await;
            });
        }
        // Dropped now, or still held by the handler: hyper closes.
        _ => {
            res.headers_mut()
                .insert(CONNECTION, HeaderValue::from_static("close"));
        }
    }
    res
}

/// What a watched body leaves behind for [`keep_alive`].
#[derive(Default)]
struct Slot {
    /// The body was read to its end.
    ended: AtomicBool,
    /// The body, dropped by the handler before its end.
    leftover: Mutex<Option<Body>>,
}

/// A request body that notes when it was read to its end, and hands itself
/// back to [`keep_alive`] when dropped before that.
struct Watched {
    inner: Option<Body>,
    slot: Arc<Slot>,
}

impl HttpBody for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = Pin::new(inner).poll_frame(cx);
        let done = matches!(frame, Poll::Ready(None | Some(Err(_))))
            || self.inner.as_ref().is_some_and(HttpBody::is_end_stream);
        if done {
            self.slot.ended.store(true, Ordering::Release);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(HttpBody::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), HttpBody::size_hint)
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        if let Some(body) = self.inner.take() {
            if !body.is_end_stream() && !self.slot.ended.load(Ordering::Acquire) {
                *self
                    .slot
                    .leftover
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(body);
            }
        }
    }
}

/// Reads `body` to its end, keeping nothing.
async fn discard(mut body: Body) {
    while let Some(Ok(_)) = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {}
}
