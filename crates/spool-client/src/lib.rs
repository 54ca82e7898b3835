//! `RemoteStore`: Spool's [`spool_core::Store`] over the HTTP API of a Spool
//! server (docs/spec.md §7), so workers and producers in other processes or on other
//! machines share one embedded engine; `RespStore`: the same over the
//! server's RESP listener (docs/resp.md, module `resp`).
//!
//! A map: `builder` sets a store up; `remote` implements the trait, one HTTP
//! call per operation (`schedules` holds the schedule calls and their JSON);
//! `http` sends requests over one pooled keep-alive client and turns the
//! server's error codes back into [`spool_core::StoreError`] variants;
//! `wire` holds the JSON shapes; timestamps use `spool_core::rfc3339`.
//!
//! Invariants: payloads round-trip exactly (JSON text is never re-parsed into
//! numbers); a transport failure is `Unavailable`, never a silent success;
//! the store's clock is the server's (`GET /v1/time`), never this machine's.

mod builder;
mod http;
mod remote;
mod resp;
mod schedules;
mod wire;

pub use builder::RemoteStoreBuilder;
pub use http::ClientError;
pub use remote::RemoteStore;
pub use resp::{RespStore, RespStoreBuilder};
