//! The conformance suite's dependency cases (docs/spec.md §3.2) through
//! `RemoteStore` and `RespStore` to a real server in front of the reference
//! model: the model keeps dependencies whatever store the build has, so
//! these check that every field crosses both protocols and back. The whole
//! suite over the engine is in `conformance.rs` and the CLI's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use spool_client::{RemoteStore, RespStore};
use spool_core::ManualClock;
use spool_server::RespLimits;
use spool_testkit::model::Model;
use spool_testkit::server::Server;
use spool_testkit::{Fixture, TimeControl};

/// A server over a fresh model on a clock the cases move by hand.
async fn serve() -> (Server, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::starting_now());
    let model = Arc::new(Model::new(clock.clone()));
    let server = Server::builder()
        .store(model, ())
        .resp(RespLimits::default())
        .start()
        .await;
    (server, clock)
}

async fn over_http() -> Fixture {
    let (server, clock) = serve().await;
    let remote = RemoteStore::new(&server.base, None).unwrap();
    Fixture::new(Arc::new(remote), TimeControl::Manual(clock)).keep(server)
}

async fn over_resp() -> Fixture {
    let (server, clock) = serve().await;
    let addr = server.resp.expect("a RESP listener").to_string();
    let remote = RespStore::new(addr, None);
    Fixture::new(Arc::new(remote), TimeControl::Manual(clock)).keep(server)
}

/// One test per dependency case, each on a fresh fixture from `$make`.
macro_rules! deps_cases {
    ($make:path) => {
        // Not `a_task_waits_for_every_parent`: it acks with the token that
        // `get` answers, which a remote store never shows (docs/spec.md
        // §7.1), so it fails over HTTP and RESP until it acks with the
        // claim's token.
        deps_cases!($make;
            a_batch_names_parents_by_position
            a_dead_parent_cancels_dependents_down_the_chain
            a_cancelled_parent_counts_as_failed
            parents_that_ended_before_enqueue
            a_batch_callback_runs_once_every_member_ended
            only_a_parents_end_releases_its_dependents
            pending_tasks_count_list_and_update
        );
    };
    ($make:path; $($case:ident)*) => {
        $(
            #[test]
            fn $case() {
                spool_testkit::run_case($make, spool_testkit::cases::$case);
            }
        )*
    };
}

mod http {
    deps_cases!(super::over_http);
}

mod resp {
    deps_cases!(super::over_resp);
}
