//! A fresh engine in a temporary directory.

use std::fmt;
use std::sync::Arc;

use spool_core::{Clock, Store};
use spool_engine::{Engine, EngineConfig};
use tempfile::TempDir;

/// The embedded engine in a temporary directory, removed on drop (after
/// the engine: fields drop in order).
pub struct Embedded {
    /// The engine, as the store the tests use.
    pub store: Arc<dyn Store>,
    dir: TempDir,
}

impl Embedded {
    /// An empty engine on the system clock.
    pub fn open() -> Self {
        Self::open_with(|_| {})
    }

    /// An empty engine that reads `clock`, for tests that move time by hand.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self::open_with(|config| config.clock = clock)
    }

    fn open_with(configure: impl FnOnce(&mut EngineConfig)) -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory for the engine");
        let mut config = EngineConfig::new(dir.path());
        configure(&mut config);
        let engine = Engine::open(config).expect("the engine opens on an empty directory");
        Embedded {
            store: Arc::new(engine),
            dir,
        }
    }
}

impl fmt::Debug for Embedded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Embedded")
            .field("dir", &self.dir.path())
            .finish_non_exhaustive()
    }
}
