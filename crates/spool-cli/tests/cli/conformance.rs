//! The Store conformance suite through `RemoteStore` against a real
//! `spool serve` process: each case starts the binary on its own data
//! directory and port, and the server reads the wall clock, so cases that
//! move time sleep.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::TestServer;
use spool_client::RemoteStore;
use spool_testkit::{Fixture, TimeControl};

async fn fresh() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    // Starting the child blocks on reading its log; keep that off the runtime.
    let data = dir.path().join("data");
    // The cases fire schedule ticks themselves; a scheduler in the server
    // would fire them first.
    let server = tokio::task::spawn_blocking(move || {
        let data = data.to_str().unwrap().to_owned();
        TestServer::start_with(&["--data", &data, "--no-scheduler"])
    })
    .await
    .unwrap()
    .unwrap();
    let remote = RemoteStore::new(server.base.clone(), None).unwrap();
    // The server is dropped (SIGKILLed) before its data directory goes.
    Fixture::new(Arc::new(remote), TimeControl::Real).keep((server, dir))
}

// Over HTTP the contention case runs smaller: each claim is a round trip.
spool_testkit::conformance_suite!(fresh, contention: 5_000, 20);
