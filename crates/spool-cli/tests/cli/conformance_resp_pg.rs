//! The Store conformance suite through `RespStore` against a real
//! `spool serve --postgres` process: the RESP listener over the PostgreSQL
//! store, each case on a schema of its own (dropped after the server).
//!
//! Needs PostgreSQL at `DATABASE_URL` (default: the local server); fails,
//! never skips, when it cannot be reached.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use crate::support::pg::{self, DropSchema};
use crate::support::TestServer;
use spool_client::RespStore;
use spool_testkit::{Fixture, TimeControl};

async fn fresh() -> Fixture {
    let schema = pg::fresh_schema("spool_resp");
    let url = pg::database_url();
    let owned = schema.clone();
    // Starting the child blocks on reading its log; keep that off the runtime.
    // The cases fire schedule ticks themselves; a scheduler in the server
    // would fire them first.
    let (server, resp) = tokio::task::spawn_blocking(move || {
        TestServer::start_resp(&["--postgres", &url, "--pg-schema", &owned, "--no-scheduler"])
    })
    .await
    .unwrap()
    .unwrap_or_else(|e| panic!("cannot start `spool serve --postgres` (is PostgreSQL up?): {e}"));
    let store = RespStore::new(resp, None);
    // Dropped in order: the server (SIGKILLed), then its schema.
    Fixture::new(Arc::new(store), TimeControl::Real).keep((server, DropSchema(schema)))
}

spool_testkit::conformance_suite!(fresh, contention: 5_000, 20);
