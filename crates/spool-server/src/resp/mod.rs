//! The RESP listener (docs/spec.md §7.2): the Redis protocol, RESP2 and RESP3 after
//! `HELLO 3`, over the same [`AppState`] as the HTTP API, so every Redis
//! client is a Spool client. The commands are documented in docs/resp.md.
//!
//! A map of the data path:
//! - [`frame`] splits the byte stream into commands, with limits checked
//!   on declared lengths before anything is buffered;
//! - `command` turns a command's arguments into a validated `Command`,
//!   reading them through `args` (which also holds the payload rule);
//! - `exec` runs a round of commands in order against the store, batching
//!   runs of enqueues and acks so a pipeline shares group commits;
//! - `manage` parses and runs the commands that look after queues and
//!   schedules (`LIST`, `QUEUE`, `TIME`, `SCHEDULE`);
//! - `shape` turns tasks, settings and schedules into answers, and `reply`
//!   writes answers in the connection's protocol;
//! - `conn` is one connection's loop (back-pressure and timeouts), and
//!   this module accepts connections (count limit, TLS, shutdown).
//!
//! Invariants, the same as HTTP's: the token, when set, is required before
//! any command but `PING`, `HELLO`, `AUTH` and `QUIT`; errors start with
//! the stable code in capitals (`-LEASE_LOST ...`); malformed input is
//! answered and changes nothing; no store call outlasts the store timeout.

mod args;
mod command;
mod conn;
mod exec;
pub mod frame;
mod manage;
mod reply;
mod shape;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::config::ServerConfig;
use crate::serve::ServeError;
use crate::state::AppState;
use crate::tls;
use exec::Session;
use frame::FrameLimits;
use reply::Proto;

/// How long a client may take to finish a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The RESP listener's own limits; the token, TLS, the largest payload
/// (`max_body`) and the store timeout come from [`ServerConfig`].
#[derive(Clone, Copy, Debug)]
pub struct RespLimits {
    /// Argument count and inline line length (the bulk size is `max_body`).
    pub frame: FrameLimits,
    /// Most commands run in one round; the rest wait in the socket.
    pub max_pipeline: usize,
    /// Most open connections; more are answered `-OVERLOADED` and closed.
    pub max_connections: usize,
    /// Silence after which an idle connection is closed.
    pub idle_timeout: Duration,
    /// Longest a client may take to finish a command it started sending.
    pub partial_timeout: Duration,
}

impl Default for RespLimits {
    fn default() -> Self {
        RespLimits {
            frame: FrameLimits::default(),
            max_pipeline: 1024,
            max_connections: 10_000,
            idle_timeout: Duration::from_secs(300),
            partial_timeout: Duration::from_secs(30),
        }
    }
}

/// Serves RESP on `listener` until `shutdown` completes; then idle
/// connections close at once and busy ones get `shutdown_grace` to finish
/// their round.
pub async fn run_resp(
    listener: TcpListener,
    state: AppState,
    config: ServerConfig,
    limits: RespLimits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    if config.token.as_deref().is_some_and(str::is_empty) {
        return Err(ServeError::Config("the token must not be empty".into()));
    }
    let tls = config.tls.as_ref().map(tls::acceptor).transpose()?;
    let grace = config.shutdown_grace;
    let state = state.with_config(&config);
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let (closing, closed) = tokio::sync::watch::channel(false);
    let ids = AtomicU64::new(1);
    tracing::info!(
        addr = ?listener.local_addr().ok(),
        tls = tls.is_some(),
        auth = config.token.is_some(),
        "spool RESP listening"
    );
    tokio::pin!(shutdown);
    loop {
        let (mut stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    tracing::warn!(error = %e, "RESP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tokio::spawn(async move {
                let _ = stream
                    .write_all(b"-OVERLOADED too many connections\r\n")
                    .await;
            });
            continue;
        };
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, "set_nodelay failed");
        }
        let session = Session {
            proto: Proto::Resp2,
            authed: config.token.is_none(),
            worker: format!("resp-{peer}"),
            id: ids.fetch_add(1, Ordering::Relaxed),
            quit: false,
        };
        let (st, tls, closed) = (state.clone(), tls.clone(), closed.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let served = match tls {
                None => conn::serve(stream, st, limits, session, closed).await,
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                        Ok(Ok(io)) => conn::serve(io, st, limits, session, closed).await,
                        Ok(Err(e)) => Err(e),
                        Err(_) => Ok(()),
                    }
                }
            };
            if let Err(e) = served {
                tracing::debug!(error = %e, %peer, "RESP connection ended with an error");
            }
        });
    }
    drop(listener);
    let _ = closing.send(true);
    let all = u32::try_from(limits.max_connections).unwrap_or(u32::MAX);
    match tokio::time::timeout(grace, slots.acquire_many(all)).await {
        Ok(_) => tracing::info!("spool RESP stopped"),
        Err(_) => tracing::warn!(
            ?grace,
            "RESP commands still running at shutdown were dropped"
        ),
    }
    Ok(())
}
