//! The suite checked against itself: every case runs against the reference
//! model (`spool_testkit::model`), once on a manual clock and once on the
//! wall clock, so a case that is wrong fails here before it blames a real
//! store. Also checks that every case in `src/cases/` is in the suite.

// A test: a panic is how it reports a failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::Arc;

use spool_core::{ManualClock, SystemClock};
use spool_testkit::model::Model;
use spool_testkit::{Fixture, TimeControl};

async fn on_manual_clock() -> Fixture {
    let clock = Arc::new(ManualClock::starting_now());
    Fixture::new(
        Arc::new(Model::new(clock.clone())),
        TimeControl::Manual(clock),
    )
}

async fn on_wall_clock() -> Fixture {
    Fixture::new(
        Arc::new(Model::new(Arc::new(SystemClock))),
        TimeControl::Real,
    )
}

// The model is a reference, not a fast store, and the contention case
// costs it more than in proportion to its tasks: at full size (100,000
// tasks, as the stores run it) it outran the case's 300-s limit in a
// debug build on a slow machine (2026-12-01). Here it runs with all 100
// claimers and a fifth of the tasks, in seconds.
mod manual {
    spool_testkit::conformance_suite!(super::on_manual_clock, contention: 20_000, 100);
}

mod real {
    // The wall-clock run shows the cases' tolerances hold; the contention
    // run above is enough once.
    spool_testkit::conformance_suite!(super::on_wall_clock, contention: 10_000, 20);
}

/// Every `pub async fn name(fx: Fixture)` in `src/cases/` must be in
/// [`spool_testkit::CASES`], or no store would ever run it.
#[test]
fn every_case_is_in_the_suite() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/cases");
    let mut defined = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("pub async fn ") else {
                continue;
            };
            if let Some((name, args)) = rest.split_once('(') {
                if args.starts_with("fx: Fixture)") {
                    defined.insert(name.to_string());
                }
            }
        }
    }
    let listed: BTreeSet<String> = spool_testkit::CASES.iter().map(|s| s.to_string()).collect();
    assert_eq!(
        listed.len(),
        spool_testkit::CASES.len(),
        "a case is listed twice"
    );
    assert_eq!(defined, listed);
}
