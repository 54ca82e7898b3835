//! The Store conformance suite against the embedded engine, on a clock the
//! cases move by hand.

use std::sync::Arc;

use spool_core::ManualClock;
use spool_engine::{Engine, EngineConfig};
use spool_testkit::{Fixture, TimeControl};

async fn fresh() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_now());
    let mut cfg = EngineConfig::new(dir.path());
    cfg.clock = clock.clone();
    let engine = Engine::open(cfg).unwrap();
    Fixture::new(Arc::new(engine), TimeControl::Manual(clock)).keep(dir)
}

spool_testkit::conformance_suite!(fresh);
