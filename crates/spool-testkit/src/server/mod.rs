//! A real Spool server inside the test's process, over the real engine in a
//! temporary directory: what the HTTP, RESP, client and runtime tests talk
//! to. Compiled only with this crate's `server` feature, so the stores'
//! conformance runs do not build the server.
//!
//! [`Embedded`] is a fresh engine and the directory it lives in;
//! [`Server::builder`] puts the HTTP listener (and, when asked, the RESP
//! one) on ports of 127.0.0.1 the OS picks, in front of such an engine or of
//! any store the test wraps around one. Dropping either cleans up.

mod embedded;
mod running;

pub use embedded::Embedded;
pub use running::{Server, ServerBuilder};
