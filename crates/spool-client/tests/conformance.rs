//! The Store conformance suite against `RemoteStore`: every case goes
//! through the HTTP API to a real server in front of the real engine, on a
//! clock the cases move by hand (the server's store reads it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use spool_client::RemoteStore;
use spool_core::ManualClock;
use spool_engine::{Engine, EngineConfig};
use spool_server::{AppState, ServerConfig};
use spool_testkit::{Fixture, TimeControl};

async fn fresh() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::starting_now());
    let mut cfg = EngineConfig::new(dir.path());
    cfg.clock = clock.clone();
    let engine = Engine::open(cfg).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The server runs until the case's runtime is dropped.
    tokio::spawn(spool_server::run(
        listener,
        AppState::new(Arc::new(engine)),
        ServerConfig::default(),
        std::future::pending(),
    ));
    let remote = RemoteStore::new(format!("http://{addr}"), None).unwrap();
    Fixture::new(Arc::new(remote), TimeControl::Manual(clock)).keep(dir)
}

// Over HTTP the contention case runs smaller: each claim is a round trip.
spool_testkit::conformance_suite!(fresh, contention: 5_000, 20);
