//! Runs one case on a fresh runtime, the way each generated test does.

use std::future::Future;
use std::time::Duration;

use crate::fixture::Fixture;

/// Longest a case may run before it fails: a store that hangs (a lost
/// wake-up, a deadlock) fails its case instead of stalling the test run.
pub const CASE_TIMEOUT: Duration = Duration::from_secs(300);

/// Builds a fixture with `make` and runs `case` on it, on a fresh
/// multi-thread runtime with two workers (what
/// `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]` builds),
/// within [`CASE_TIMEOUT`].
///
/// The macros call this instead of emitting `#[tokio::test]` so that a
/// store's crate needs no tokio dev-dependency of its own and every case gets
/// the timeout. Call it directly to run one case with other parameters.
pub fn run_case<M, MF, C, CF>(make: M, case: C)
where
    M: FnOnce() -> MF,
    MF: Future<Output = Fixture>,
    C: FnOnce(Fixture) -> CF,
    CF: Future<Output = ()>,
{
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime");
    runtime.block_on(async {
        let fx = make().await;
        if tokio::time::timeout(CASE_TIMEOUT, case(fx)).await.is_err() {
            panic!("the case did not finish within {CASE_TIMEOUT:?}");
        }
    });
}
