//! The Store conformance suite against `RemoteStore`: every case goes
//! through the HTTP API to a real server in front of the real engine, on a
//! clock the cases move by hand (the server's store reads it).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use spool_client::RemoteStore;
use spool_core::ManualClock;
use spool_testkit::server::{Embedded, Server};
use spool_testkit::{Fixture, TimeControl};

async fn fresh() -> Fixture {
    let clock = Arc::new(ManualClock::starting_now());
    let engine = Embedded::with_clock(clock.clone());
    let server = Server::builder().embedded(engine).start().await;
    let remote = RemoteStore::new(&server.base, None).unwrap();
    // The server stops when the case is over, after the store talking to it.
    Fixture::new(Arc::new(remote), TimeControl::Manual(clock)).keep(server)
}

// Over HTTP the contention case runs smaller: each claim is a round trip.
spool_testkit::conformance_suite!(fresh, contention: 5_000, 20);
