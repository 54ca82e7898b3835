//! Spool's server: the HTTP/JSON API of docs/spec.md §7 over any [`spool_core::Store`].
//!
//! A map of the data path:
//! - `serve` accepts connections (HTTP/1.1 and HTTP/2, optionally TLS) and
//!   applies the transport limits (headers, idle time, graceful shutdown);
//! - [`router()`] is where the parts meet: it joins the middleware
//!   (`auth`, `limits`, `observe`) and the handlers of `api` and `admin`,
//!   plugs the admin page's session check into `auth`, starts the
//!   `monitor`'s sampler and hands `openapi` the routes it describes; it
//!   needs no socket, so tests can drive it;
//! - `extract` turns requests into typed values and `wire` holds the JSON
//!   shapes, so every handler sees validated input only;
//! - [`AppState`] is the store, the settings every handler shares and the
//!   `monitor`, and the one place that bounds how long a store call may
//!   take;
//! - [`ApiError`] is the one place that turns failures into HTTP
//!   answers (`{"error": {"code", "message"}}`), hiding internals;
//! - `auth` decides bearer-token access and gives every request a
//!   `Principal`; the one other way in (a session check) is handed to it;
//! - `monitor` counts what this server enqueued and acked and samples
//!   `stats`: the API and RESP feed it, the admin page reads it;
//! - `admin` is the admin page: server-rendered HTML pages and their
//!   actions over the same store, with a login for when a token is set;
//! - [`resp`] is the second listener: the Redis protocol (RESP2/RESP3)
//!   over the same state, token and error codes (docs/spec.md §7.2).
//!
//! Imports point one way. The foundation (`state`, `auth`, `error`,
//! `extract`, `config`, `limits`, `observe`, `monitor`, `wire`) imports
//! neither `api` nor `admin`; those two import the foundation and not each
//! other, and only the router imports `admin`.
//!
//! Invariants: malformed input is refused before any store call that could
//! change state, and never yields a 5xx; every API answer that is not a success carries the JSON error body (admin pages answer the same statuses as HTML); no
//! store call hangs a request for longer than the store timeout (5 s, plus the
//! long-poll wait for claims).
//!
//! This crate is not the `spool` binary: it is wired to a concrete store by
//! the CLI.

mod admin;
mod api;
mod auth;
mod config;
mod conn;
mod error;
mod extract;
mod limits;
mod metrics;
mod monitor;
mod observe;
mod openapi;
mod origin;
pub mod resp;
// Timestamps on the wire: one definition, shared with the client.
use spool_core::rfc3339;
mod router;
mod serve;
mod state;
mod tls;
mod unread;
mod wire;

pub use api::{batch_tasks, BatchError};
pub use config::{ServerConfig, TlsConfig};
pub use error::ApiError;
pub use resp::{run_resp, RespLimits};
pub use router::{openapi, router};
pub use serve::{run, ServeError};
pub use state::AppState;
