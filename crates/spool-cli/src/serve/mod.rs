//! `spool serve`: the embedded engine (or PostgreSQL) behind the HTTP/JSON API
//! and the RESP listener.
//!
//! This module only wires: it opens the store, checks that the address and
//! the token agree with the security rule ([`auth_rule`]), and hands both to
//! `spool_server::run` with a shutdown future that completes on Ctrl-C or
//! SIGTERM ([`shutdown`]).

mod auth_rule;
mod shutdown;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use spool_core::Store;
use spool_engine::{Engine, EngineConfig};
use spool_postgres::{ClaimStrategy, PgConfig, PgStore};
use spool_runtime::Scheduler;
use spool_server::{AppState, RespLimits, ServerConfig, TlsConfig};

/// The long `--help` text of `spool serve`.
pub(crate) const ABOUT: &str = "\
Serves the HTTP/JSON API (under /v1), the admin page (/), Prometheus metrics
(/metrics) and a health check (/healthz) over the embedded engine in DIR, or
over PostgreSQL with --postgres URL (everything in one schema of that
database, `spool` unless --pg-schema says otherwise, created and migrated on
start). Several servers on one PostgreSQL schema are one service. The server also fires the schedules it keeps.

It also speaks RESP, the Redis protocol, on a second port (--resp, by default
127.0.0.1:7701; `--resp off` disables it), so any Redis client can enqueue,
claim and ack: `redis-cli -p 7701 ENQUEUE emails hello`. Its
commands are documented in docs/resp.md.

Security: by default the server listens on 127.0.0.1 only. Listening on any
other address requires a token (--token or SPOOL_TOKEN; clients send it as
`Authorization: Bearer TOKEN`, RESP clients as `AUTH TOKEN`) unless
--insecure-no-auth is given. A token, once set, is required on every address;
only /healthz (and RESP's PING, HELLO, AUTH, QUIT) stay open. With
--tls-cert and --tls-key the server speaks HTTPS, and RESP over TLS.

Ctrl-C or SIGTERM stops it gracefully: requests in progress may finish, then
the embedded engine's log is flushed and its data directory released.";

/// `--pg-claim`: the PostgreSQL store's claim strategies, by CLI name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PgClaim {
    SkipLocked,
    GlobalLock,
}

/// Options of `spool serve` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct ServeArgs {
    /// Data directory of the embedded engine (created if missing).
    #[arg(
        long,
        value_name = "DIR",
        default_value = "./spool-data",
        conflicts_with = "postgres"
    )]
    pub data: PathBuf,

    /// Keep tasks in PostgreSQL instead (e.g. postgres://postgres@127.0.0.1/test).
    #[arg(
        long,
        value_name = "URL",
        env = "SPOOL_POSTGRES",
        hide_env_values = true
    )]
    pub postgres: Option<String>,

    /// PostgreSQL schema holding Spool's tables; every node of one service
    /// uses the same one.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "spool",
        env = "SPOOL_PG_SCHEMA"
    )]
    pub pg_schema: String,

    /// How nodes share a queue's claims on PostgreSQL: every claimer at once
    /// passing over locked rows (skip-locked), or one claimer at a time in
    /// large batches (global-lock).
    #[arg(long, value_enum, value_name = "STRATEGY", default_value_t = PgClaim::SkipLocked)]
    pub pg_claim: PgClaim,

    /// On PostgreSQL, vacuum the task table after this node has claimed
    /// this many tasks since it last did, so claims do not walk the index
    /// pages of drained rows; one node at a time does. 0 leaves it to
    /// autovacuum.
    #[arg(
        long,
        value_name = "N",
        default_value_t = PgConfig::default().vacuum_after_claims
    )]
    pub pg_vacuum_after_claims: u64,

    /// Address and port to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,

    /// Address and port of the RESP (Redis protocol) listener, or `off`.
    /// Default: the --listen address with the next port (127.0.0.1:7701);
    /// port 0 when --listen has port 0.
    #[arg(long, value_name = "ADDR|off", value_parser = resp_listen)]
    pub resp: Option<RespListen>,

    /// Bearer token clients must present.
    #[arg(long, env = "SPOOL_TOKEN", hide_env_values = true)]
    pub token: Option<String>,

    /// Allow a non-loopback address without a token.
    #[arg(long)]
    pub insecure_no_auth: bool,

    /// Largest request body in bytes; raise it with a queue's max_payload
    /// for payloads near 16 MiB (base64 adds a third).
    #[arg(long, value_name = "BYTES", default_value_t = spool_server::ServerConfig::default().max_body)]
    pub max_body: usize,

    /// Refuse enqueues to queues not created first (PUT /v1/queues/{queue}).
    #[arg(long)]
    pub strict_queues: bool,

    /// Do not fire schedules here: for a node that only serves the API
    /// while other processes on the same store run the schedulers.
    #[arg(long)]
    pub no_scheduler: bool,

    /// Certificate chain (PEM) for HTTPS; needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// Private key (PEM) for HTTPS; needs --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Mark the admin page's session cookie Secure though this server speaks
    /// HTTP: for a server behind a proxy that terminates TLS.
    #[arg(long)]
    pub secure_cookies: bool,
}

/// `--resp`: where the RESP listener listens, if anywhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RespListen {
    Off,
    At(SocketAddr),
}

fn resp_listen(s: &str) -> Result<RespListen, String> {
    if s.eq_ignore_ascii_case("off") {
        return Ok(RespListen::Off);
    }
    s.parse()
        .map(RespListen::At)
        .map_err(|e| format!("expected ADDR:PORT or off: {e}"))
}

/// The RESP address: `--resp`, else the next port after `--listen`'s.
fn resp_addr(args: &ServeArgs) -> Option<SocketAddr> {
    match args.resp {
        Some(RespListen::Off) => None,
        Some(RespListen::At(addr)) => Some(addr),
        None => {
            let mut addr = args.listen;
            addr.set_port(match addr.port() {
                0 => 0,
                p => p.checked_add(1)?,
            });
            Some(addr)
        }
    }
}

pub(crate) fn run(args: ServeArgs) -> anyhow::Result<()> {
    auth_rule::check(args.listen, args.token.as_deref(), args.insecure_no_auth)?;
    let resp = resp_addr(&args);
    if let Some(addr) = resp {
        auth_rule::check(addr, args.token.as_deref(), args.insecure_no_auth)?;
    }
    let runtime = crate::runtime::build()?;
    let store = open_store(&args, &runtime)?;
    let config = ServerConfig {
        max_body: args.max_body,
        token: args.token,
        secure_cookies: args.secure_cookies,
        tls: args
            .tls_cert
            .zip(args.tls_key)
            .map(|(cert, key)| TlsConfig { cert, key }),
        ..ServerConfig::default()
    };
    let scheme = if config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        // The bound address, not the asked one: with port 0 the OS picks.
        let addr = listener.local_addr().context("no local address")?;
        tracing::info!("listening on {scheme}://{addr}");
        // The server fires the schedules it keeps (docs/spec.md §5); other
        // processes may run schedulers too: the store fires each tick once.
        let scheduler = if args.no_scheduler {
            None
        } else {
            let s = Scheduler::new(store.clone()).start();
            Some(s.context("cannot start the scheduler")?)
        };
        let resp_listener = match resp {
            None => None,
            Some(addr) => {
                let l = tokio::net::TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen for RESP on {addr}"))?;
                let bound = l.local_addr().context("no local address")?;
                tracing::info!("RESP listening on {bound}");
                Some(l)
            }
        };
        // One signal stops both listeners.
        let (stop, stopped) = tokio::sync::watch::channel(());
        tokio::spawn(async move {
            shutdown::signal().await;
            let _ = stop.send(());
        });
        let until_stopped = || {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.changed().await;
            }
        };
        let state = AppState::new(store.clone());
        let http = spool_server::run(listener, state.clone(), config.clone(), until_stopped());
        let resp = async {
            match resp_listener {
                Some(l) => {
                    let limits = RespLimits::default();
                    spool_server::run_resp(l, state, config, limits, until_stopped()).await
                }
                None => Ok(()),
            }
        };
        let served = tokio::try_join!(http, resp)
            .map(|_| ())
            .context("the server failed");
        if let Some(scheduler) = scheduler {
            scheduler.stop().await;
        }
        served
    })?;
    // The runtime goes first; the engine, dropped last, then flushes its
    // log and releases the directory outside any async context.
    drop(runtime);
    drop(store);
    tracing::info!("stopped; the store is closed");
    Ok(())
}

/// The embedded engine in `--data`, or the PostgreSQL store at `--postgres`.
fn open_store(
    args: &ServeArgs,
    runtime: &tokio::runtime::Runtime,
) -> anyhow::Result<Arc<dyn Store>> {
    if let Some(url) = &args.postgres {
        let config = PgConfig {
            schema: args.pg_schema.clone(),
            strict_queues: args.strict_queues,
            claim: match args.pg_claim {
                PgClaim::SkipLocked => ClaimStrategy::SkipLocked,
                PgClaim::GlobalLock => ClaimStrategy::GlobalLock,
            },
            vacuum_after_claims: args.pg_vacuum_after_claims,
            ..PgConfig::default()
        };
        let store = runtime
            .block_on(PgStore::connect(url, config))
            .context("cannot open the PostgreSQL store")?;
        tracing::info!(schema = store.schema(), "store: PostgreSQL");
        return Ok(Arc::new(store));
    }
    let mut config = EngineConfig::new(&args.data);
    config.strict_queues = args.strict_queues;
    let engine = Engine::open(config)
        .with_context(|| format!("cannot open the data directory {}", args.data.display()))?;
    tracing::info!(data = %args.data.display(), "store: embedded engine");
    Ok(Arc::new(engine))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::Parser;

    use super::{resp_addr, ServeArgs};

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: ServeArgs,
    }

    fn resp(words: &[&str]) -> Option<String> {
        let args = Serve::try_parse_from(std::iter::once("serve").chain(words.iter().copied()))
            .unwrap()
            .args;
        resp_addr(&args).map(|a| a.to_string())
    }

    #[test]
    fn resp_listens_next_to_http_unless_told_otherwise() {
        assert_eq!(resp(&[]).as_deref(), Some("127.0.0.1:7701"));
        assert_eq!(
            resp(&["--listen", "127.0.0.1:9000"]).as_deref(),
            Some("127.0.0.1:9001")
        );
        assert_eq!(
            resp(&["--listen", "127.0.0.1:0"]).as_deref(),
            Some("127.0.0.1:0")
        );
        assert_eq!(
            resp(&["--resp", "127.0.0.1:6390"]).as_deref(),
            Some("127.0.0.1:6390")
        );
        assert_eq!(resp(&["--resp", "off"]), None);
        assert_eq!(resp(&["--resp", "OFF"]), None);
        assert!(Serve::try_parse_from(["serve", "--resp", "nowhere"]).is_err());
    }
}
