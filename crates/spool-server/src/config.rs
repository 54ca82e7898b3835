//! The server's settings: security and resource limits (SPEC §7.1, Security).
//!
//! Every limit has a default that is safe on a public address except the
//! token, which the CLI must require there (the server enforces a token
//! whenever one is set, loopback included).

use std::path::PathBuf;
use std::time::Duration;

/// Default largest request body: 16 MiB (`--max-body`).
pub const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;

/// How the server protects itself and its store.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Bearer token required on `/v1`, `/metrics`, `/openapi.json` and the
    /// admin page; `/healthz` stays open. `None` disables auth.
    pub token: Option<String>,
    /// Largest request body in bytes; larger bodies get 413.
    pub max_body: usize,
    /// Most header fields in one request (HTTP/1); more get 431.
    pub max_headers: usize,
    /// Largest request head (request line plus headers) in bytes; larger get
    /// 431. Hyper will not go below 8 KiB.
    pub max_header_bytes: usize,
    /// Longest a request may take end to end, body upload included. Must
    /// exceed the longest claim long poll (30 s) plus the store timeout.
    pub request_timeout: Duration,
    /// Longest a connection may take to send a request head, including the
    /// idle time between keep-alive requests.
    pub header_read_timeout: Duration,
    /// Most requests in progress at once; more get 429 `overloaded`.
    /// Long-poll claims hold a slot while they wait.
    pub concurrency_limit: usize,
    /// Longest a store call may take before the request answers 503
    /// `unavailable` (claims add their long-poll wait).
    pub store_timeout: Duration,
    /// How long shutdown waits for requests in progress.
    pub shutdown_grace: Duration,
    /// Serve HTTPS with these PEM files.
    pub tls: Option<TlsConfig>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            token: None,
            max_body: DEFAULT_MAX_BODY,
            max_headers: 100,
            max_header_bytes: 64 * 1024,
            request_timeout: Duration::from_secs(60),
            header_read_timeout: Duration::from_secs(30),
            concurrency_limit: 4096,
            store_timeout: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(10),
            tls: None,
        }
    }
}

/// A certificate chain and its private key, both PEM files.
#[derive(Clone, Debug)]
pub struct TlsConfig {
    pub cert: PathBuf,
    pub key: PathBuf,
}
