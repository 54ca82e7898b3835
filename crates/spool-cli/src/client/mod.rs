//! The client commands of docs/spec.md §8: `enqueue`, `get`, `stats`, `tasks`, `retry`,
//! `cancel`, `pause`/`resume`, `queue`, `groups` and `schedule`. Each talks to a running server through
//! [`spool_client::RemoteStore`], one module per command.
//!
//! A map: [`connect`] holds the `--url`/`--token` options and turns a failed
//! call into a message a person can act on; [`args`] parses option values
//! (names, JSON payloads, durations) before anything is sent; [`render`]
//! formats times, ages and plain tables.

pub(crate) mod args;
pub(crate) mod cancel;
pub(crate) mod connect;
pub(crate) mod enqueue;
pub(crate) mod get;
pub(crate) mod groups;
pub(crate) mod pause;
pub(crate) mod queue;
mod render;
pub(crate) mod retry;
pub(crate) mod schedule;
pub(crate) mod stats;
pub(crate) mod tasks;

use std::future::Future;
use std::io::Write;

use anyhow::Context;

/// Runs one command's calls on a fresh runtime.
fn block_on<T>(fut: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    crate::runtime::build()?.block_on(fut)
}

/// Writes a command's result to stdout; a closed pipe is an error, not a
/// panic as with `println!`.
fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("cannot write to stdout")
}

/// Pretty JSON with a final newline, for `--json`.
fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value).context("cannot format JSON")?;
    print(&format!("{text}\n"))
}
