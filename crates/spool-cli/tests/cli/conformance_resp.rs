//! The Store conformance suite through `RespStore` against a real
//! `spool serve` process, over its RESP listener: each case starts the
//! binary on its own data directory and ports, and the server reads the
//! wall clock, so cases that move time sleep.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::TestServer;
use spool_client::RespStore;
use spool_testkit::{Fixture, TimeControl};

async fn fresh() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // Starting the child blocks on reading its log; keep that off the runtime.
    // The cases fire schedule ticks themselves; a scheduler in the server
    // would fire them first.
    let (server, resp) = tokio::task::spawn_blocking(move || {
        let data = data.to_str().unwrap().to_owned();
        TestServer::start_resp(&["--data", &data, "--no-scheduler"])
    })
    .await
    .unwrap()
    .unwrap();
    let store = RespStore::new(resp, None);
    // The server is dropped (SIGKILLed) before its data directory goes.
    Fixture::new(Arc::new(store), TimeControl::Real).keep((server, dir))
}

// Each claim is a round trip, as over HTTP, so the contention case runs
// at the same size as the HTTP suite's.
spool_testkit::conformance_suite!(fresh, contention: 5_000, 20);
