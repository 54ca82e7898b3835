//! Accepting connections: HTTP/1.1 and HTTP/2 (cleartext or TLS) with the
//! transport limits hyper enforces, and graceful shutdown.
//!
//! The request head is bounded in size and count of fields (a backstop:
//! the configured limits are enforced with a JSON answer by the router) and
//! in time (`header_read_timeout`, which also bounds idle
//! keep-alive connections). On shutdown the listener closes at once, requests
//! in progress get `shutdown_grace` to finish, then connections are dropped.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::config::ServerConfig;
use crate::router::router;
use crate::state::AppState;
use crate::tls::{self, TlsError};

/// How long a client may take to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    #[error("invalid server configuration: {0}")]
    Config(String),
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
    let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
    let app = router(state.with_config(&config));
    let builder = Arc::new(connection_builder(&config));
    let graceful = GracefulShutdown::new();
    tracing::info!(
        addr = ?listener.local_addr().ok(),
        tls = tls.is_some(),
        auth = config.token.is_some(),
        "spool server listening"
    );
    tokio::pin!(shutdown);
    loop {
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
        let service = TowerToHyperService::new(app.clone());
        let builder = builder.clone();
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let result = match tls {
                None => {
                    watcher
                        .watch(builder.serve_connection(plain(stream), service))
                        .await
                }
                Some(acceptor) => match handshake(&acceptor, stream).await {
                    Some(io) => watcher.watch(builder.serve_connection(io, service)).await,
                    None => return,
                },
            };
            if let Err(e) = result {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tokio::select! {
        () = graceful.shutdown() => tracing::info!("spool server stopped"),
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
        .max_header_list_size(u32::try_from(head_bytes).unwrap_or(u32::MAX));
    builder
}
