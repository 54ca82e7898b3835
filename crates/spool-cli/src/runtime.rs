//! The tokio runtime for commands that talk to a store.
//!
//! Commands build it themselves (rather than `#[tokio::main]`) so that a
//! store whose drop blocks — the embedded engine joins its threads to flush
//! the log — is dropped after the runtime, outside any async context.

use anyhow::Context;
use tokio::runtime::Runtime;

pub(crate) fn build() -> anyhow::Result<Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}
