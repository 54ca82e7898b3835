//! `RespStore`: Spool's [`spool_core::Store`] over the RESP listener of a
//! Spool server (docs/resp.md), the lean alternative to the HTTP
//! `RemoteStore`.
//!
//! A map: `store` implements the trait, one command per operation;
//! `pool` lends each call a connection of its own; `conn` is one
//! connection (pipelined: callers of `conn` may share it); `value` decodes
//! answers and `decode` turns them into Spool's types.

mod conn;
mod decode;
mod pool;
mod store;
mod value;

pub use store::{RespStore, RespStoreBuilder};
