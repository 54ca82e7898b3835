//! Logs to stderr, filtered by `RUST_LOG`, so stdout stays the command's
//! output (a report, a table) and can be piped.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Starts logging; `default` is the filter used when `RUST_LOG` is unset.
pub(crate) fn init(default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, never into a file.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
