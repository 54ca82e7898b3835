//! The server's settings: security and resource limits (docs/spec.md §7.1, Security).
//!
//! Every limit has a default that is safe on a public address except the
//! token, which the CLI must require there (the server enforces a token
//! whenever one is set, loopback included).

use std::path::PathBuf;
use std::time::Duration;

/// Default largest request body: 16 MiB (`--max-body`).
pub(crate) const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;

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
    /// Longest a connection may take to send a request head, and longest
    /// it may stay open with no request in progress (HTTP/1 and HTTP/2).
    pub header_read_timeout: Duration,
    /// Most connections open at once; more wait to be accepted.
    pub max_connections: usize,
    /// Most requests in progress at once; more get 429 `overloaded`.
    /// Long-poll claims hold a slot while they wait.
    pub concurrency_limit: usize,
    /// Longest a store call may take before the request answers 503
    /// `unavailable` (claims add their long-poll wait).
    pub store_timeout: Duration,
    /// How long shutdown waits for requests in progress.
    pub shutdown_grace: Duration,
    /// Mark the admin session cookie `Secure` (sent over HTTPS only) even
    /// though this server speaks plain HTTP: for a server behind a proxy
    /// that terminates TLS. Always so when `tls` is set.
    pub secure_cookies: bool,
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
            max_connections: 10_000,
            concurrency_limit: 4096,
            store_timeout: Duration::from_secs(5),
            shutdown_grace: Duration::from_secs(10),
            secure_cookies: false,
            tls: None,
        }
    }
}

/// A certificate chain and its private key, both PEM files.
#[derive(Clone, Debug)]
pub struct TlsConfig {
    /// The server's certificate first, then any intermediates.
    pub cert: PathBuf,
    /// The private key of the first certificate.
    pub key: PathBuf,
}
