//! Why an engine could not open.

use spool_wal::WalError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// The log or its directory: locked, unreadable, corrupt.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// A record or checkpoint passed its CRC but does not decode: written by
    /// an incompatible version, or a bug.
    #[error("cannot apply {what}: {reason}")]
    Decode { what: &'static str, reason: String },
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
