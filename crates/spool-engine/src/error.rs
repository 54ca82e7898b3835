//! Why an engine could not open.

use spool_wal::WalError;

/// Why [`Engine::open`](crate::Engine::open) failed, each with a stable
/// [`code`](EngineError::code).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The log or its directory: locked, unreadable, corrupt.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// A record or checkpoint passed its CRC but does not decode: written by
    /// an incompatible version, or a bug.
    #[error("cannot apply {what}: {reason}")]
    Decode {
        /// What could not be applied, such as `checkpoint`.
        what: &'static str,
        /// The decoder's account of it, with the byte offset.
        reason: String,
    },
    /// The operating system would not start the engine's core thread.
    #[error("cannot start the engine thread: {0}")]
    Thread(#[source] std::io::Error),
}

impl EngineError {
    /// A stable machine-readable code.
    pub fn code(&self) -> &'static str {
        match self {
            EngineError::Wal(e) => e.code(),
            EngineError::Decode { .. } => "undecodable",
            EngineError::Thread(_) => "thread",
        }
    }
}
