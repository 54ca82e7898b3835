//! One connection's life after accept: serving it, closing it gracefully
//! when the server shuts down or when it has been idle too long.
//!
//! Hyper bounds an idle HTTP/1 connection by its header read timeout; an
//! HTTP/2 connection has no such bound, so an idle cleartext client could
//! hold one open forever. Here a connection with no request in progress
//! for `idle` is told to close (HTTP/2: GOAWAY), whatever its protocol.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::service::Service;
use tokio::sync::watch;
use tokio::time::Instant;

/// Requests in progress on one connection, and when the last one started
/// or ended.
#[derive(Debug)]
pub(crate) struct Activity {
    in_flight: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Activity {
            in_flight: AtomicUsize::new(0),
            last: Mutex::new(Instant::now()),
        })
    }

    fn touch(&self) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Completes once no request has been in progress for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let last = *self.last.lock().unwrap_or_else(PoisonError::into_inner);
            let until = last + idle;
            if self.in_flight.load(Ordering::Acquire) == 0 && Instant::now() >= until {
                return;
            }
            tokio::time::sleep_until(until.max(Instant::now() + Duration::from_millis(100))).await;
        }
    }
}

/// A hyper service that records requests in [`Activity`].
#[derive(Debug, Clone)]
pub(crate) struct Tracked<S> {
    pub inner: S,
    pub activity: Arc<Activity>,
}

/// Counts a request in progress until dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<S> Service<hyper::Request<Incoming>> for Tracked<S>
where
    S: Service<hyper::Request<Incoming>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn call(&self, req: hyper::Request<Incoming>) -> Self::Future {
        self.activity.in_flight.fetch_add(1, Ordering::AcqRel);
        self.activity.touch();
        let guard = InFlight(self.activity.clone());
        let answer = self.inner.call(req);
        Box::pin(async move {
            let res = answer.await;
            drop(guard);
            res
        })
    }
}

/// Serves `conn` to its end, closing it gracefully (`close`) once `stop`
/// turns true or it has been idle for `idle`.
pub(crate) async fn serve<C: Future>(
    conn: C,
    close: impl FnOnce(Pin<&mut C>),
    activity: &Activity,
    idle: Duration,
    mut stop: watch::Receiver<bool>,
) -> C::Output {
    tokio::pin!(conn);
    let stopping = async move {
        while !*stop.borrow_and_update() {
            if stop.changed().await.is_err() {
                return;
            }
        }
    };
    tokio::select! {
        done = conn.as_mut() => return done,
        () = stopping => {}
        () = activity.idle_for(idle) => {}
    }
    close(conn.as_mut());
    conn.await
}
