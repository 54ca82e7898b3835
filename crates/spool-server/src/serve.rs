//! Accepting connections: HTTP/1.1 and HTTP/2 (cleartext or TLS) with the
//! transport limits hyper enforces, and graceful shutdown.
//!
//! The request head is bounded in size and count of fields (a backstop:
//! the configured limits are enforced with a JSON answer by the router) and
//! in time (`header_read_timeout`, which also bounds idle connections of
//! either protocol, see [`crate::conn`]). At most `max_connections` are
//! open at once; more wait in the listen backlog. On shutdown the listener
//! closes at once, requests in progress get `shutdown_grace` to finish, then
//! connections are dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};
use tokio_rustls::TlsAcceptor;

use crate::config::ServerConfig;
use crate::conn::{self, Activity, Tracked};
use crate::router::router;
use crate::state::AppState;
use crate::tls::{self, TlsError};

/// How often an HTTP/2 connection is pinged, and how long its answer may
/// take before the connection is dropped.
const HTTP2_PING: Duration = Duration::from_secs(20);

/// How long a client may take to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// A setting that cannot work, such as an empty token; nothing was served.
    #[error("invalid server configuration: {0}")]
    Config(String),
    /// The certificate or key could not be loaded into TLS.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// Serves the API on `listener` until `shutdown` completes.
///
/// The router's settings (token, limits, store timeout) are taken from
/// `config`, whatever `state` carried.
pub async fn run(
    listener: TcpListener,
    state: AppState,
    config: ServerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    if config.token.as_deref().is_some_and(str::is_empty) {
        return Err(ServeError::Config("the token must not be empty".into()));
    }
    if config.max_connections == 0 {
        return Err(ServeError::Config(
            "max_connections must be at least 1".into(),
        ));
    }
    let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
    let app = router(state.with_config(&config));
    let builder = Arc::new(connection_builder(&config));
    tracing::info!(
        addr = ?listener.local_addr().ok(),
        tls = tls.is_some(),
        auth = config.token.is_some(),
        "spool server listening"
    );
    tokio::pin!(shutdown);
    let (stop, stopping) = watch::channel(false);
    let max_connections = config.max_connections.min(Semaphore::MAX_PERMITS);
    let slots = Arc::new(Semaphore::new(max_connections));
    let idle = config.header_read_timeout;
    loop {
        // At the cap, new connections wait in the listen backlog.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors and the like: pause instead of
                    // spinning, then keep serving the connections we have.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let activity = Activity::new();
        let service = Tracked {
            inner: TowerToHyperService::new(app.clone()),
            activity: activity.clone(),
        };
        let builder = builder.clone();
        let stopping = stopping.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let result = match tls {
                None => {
                    let conn = builder.serve_connection(plain(stream), service);
                    conn::serve(conn, |c| c.graceful_shutdown(), &activity, idle, stopping).await
                }
                Some(acceptor) => match handshake(&acceptor, stream).await {
                    Some(io) => {
                        let conn = builder.serve_connection(io, service);
                        conn::serve(conn, |c| c.graceful_shutdown(), &activity, idle, stopping)
                            .await
                    }
                    None => return,
                },
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a slot until it ends: all slots back means
    // every connection has closed.
    let all = u32::try_from(max_connections).unwrap_or(u32::MAX);
    tokio::select! {
        _ = slots.acquire_many(all) => tracing::info!("spool server stopped"),
        () = tokio::time::sleep(config.shutdown_grace) => {
            tracing::warn!(grace = ?config.shutdown_grace, "requests still running at shutdown were dropped");
        }
    }
    Ok(())
}

fn plain(stream: TcpStream) -> TokioIo<TcpStream> {
    // Small JSON answers must not wait for Nagle's algorithm.
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "set_nodelay failed");
    }
    TokioIo::new(stream)
}

async fn handshake(
    acceptor: &TlsAcceptor,
    stream: TcpStream,
) -> Option<TokioIo<tokio_rustls::server::TlsStream<TcpStream>>> {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!(error = %e, "set_nodelay failed");
    }
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => Some(TokioIo::new(tls)),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!("TLS handshake timed out");
            None
        }
    }
}

/// Hyper's limits on the request head: a backstop at several times the
/// configured limits, which [`crate::limits::gate`] enforces with a JSON
/// answer.
const BACKSTOP: usize = 4;

fn connection_builder(config: &ServerConfig) -> Builder<TokioExecutor> {
    let head_bytes = config.max_header_bytes.saturating_mul(BACKSTOP);
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(config.header_read_timeout)
        .max_headers(config.max_headers.saturating_mul(BACKSTOP))
        // Hyper refuses buffers below 8 KiB.
        .max_buf_size(head_bytes.max(8192));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(head_bytes).unwrap_or(u32::MAX))
        // Pings find peers that vanished without closing.
        .keep_alive_interval(Some(HTTP2_PING))
        .keep_alive_timeout(HTTP2_PING);
    builder
}
