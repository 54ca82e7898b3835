//! Results (docs/spec.md §3.2): an ack may leave a small JSON result, which
//! every task still waiting for the acked one receives.

use serde_json::{json, Value};
use spool_core::{Ack, Dependencies, ParentFailure, StoreError, TaskId, TaskRef, TaskResult};

use crate::arrange::*;
use crate::fixture::Fixture;

fn result(json: &str) -> TaskResult {
    TaskResult::from_json(json).expect("a valid result")
}

/// The results a task holds, as (parent, JSON value): stores may
/// normalize the text.
async fn results_of(fx: &Fixture, id: TaskId) -> Vec<(TaskId, Value)> {
    let t = get(fx, id).await;
    values(&t.deps.expect("the task has dependencies"))
}

fn values(deps: &Dependencies) -> Vec<(TaskId, Value)> {
    deps.results.iter().map(|(p, r)| (*p, r.value())).collect()
}

/// A dependent receives each parent's result as the parent completes,
/// by parent id; a parent acked without one, or failed, leaves none.
pub async fn a_dependent_reads_its_parents_results(fx: Fixture) {
    let q = make_queue(&fx, "results-read", quick()).await;
    // Claimed in the order c, a, b.
    let a = enqueue(&fx, &q, job("a").priority(-1)).await;
    let b = enqueue(&fx, &q, job("b")).await;
    let c = enqueue(&fx, &q, job("c").priority(-2)).await;
    let d = enqueue(&fx, &q, job("d")).await;
    let child = after(job("child"), &[d, c, b, a]).if_parent_fails(ParentFailure::Run);
    let child = enqueue(&fx, &q, child).await;

    let t = claim_id(&fx, &q, WORKER, c).await;
    let rows = result(r#"{"rows": 3}"#);
    fx.store.ack(c, token(&t), Ack::Result(rows)).await.unwrap();
    assert_eq!(
        results_of(&fx, child).await,
        vec![(c, json!({"rows": 3}))],
        "held while the task still waits"
    );
    let t = claim_id(&fx, &q, WORKER, a).await;
    fx.store
        .ack(a, token(&t), Ack::Result(result("[1,2]")))
        .await
        .unwrap();
    let t = claim_id(&fx, &q, WORKER, b).await;
    fx.store.ack(b, token(&t), Ack::Done).await.unwrap();
    fx.store.cancel(d.into()).await.unwrap();

    let run = claim_id(&fx, &q, WORKER, child).await;
    let deps = run.deps.expect("the task has dependencies");
    assert_eq!(
        values(&deps),
        vec![(a, json!([1, 2])), (c, json!({"rows": 3}))]
    );
    assert_eq!((deps.completed(), deps.failed), (3, 1));
}

/// Every task waiting for the parent receives its result; a task further
/// down the chain does not.
pub async fn every_waiting_task_receives_the_result(fx: Fixture) {
    let q = make_queue(&fx, "results-fan-out", quick()).await;
    let parent = enqueue(&fx, &q, job("parent")).await;
    let left = enqueue(&fx, &q, after(job("left"), &[parent])).await;
    let right = enqueue(&fx, &q, after(job("right"), &[parent])).await;
    let below = enqueue(&fx, &q, after(job("below"), &[left])).await;

    let t = claim_id(&fx, &q, WORKER, parent).await;
    fx.store
        .ack(parent, token(&t), Ack::Result(result(r#""done""#)))
        .await
        .unwrap();
    for id in [left, right] {
        assert_eq!(results_of(&fx, id).await, vec![(parent, json!("done"))]);
    }
    assert_eq!(results_of(&fx, below).await, Vec::new());
}

/// A result nobody waits for is accepted and the task completes; an ack
/// refused for its lease hands nothing on.
pub async fn a_result_goes_only_with_an_ack_that_counts(fx: Fixture) {
    let q = make_queue(&fx, "results-refused", quick()).await;
    let lone = enqueue(&fx, &q, job("lone")).await;
    let t = claim_id(&fx, &q, WORKER, lone).await;
    fx.store
        .ack(lone, token(&t), Ack::Result(result("1")))
        .await
        .unwrap();
    let gone = fx.store.get(TaskRef::Id(lone)).await;
    assert!(matches!(gone, Err(StoreError::NotFound)), "{gone:?}");

    let parent = enqueue(&fx, &q, job("parent")).await;
    let child = enqueue(&fx, &q, after(job("child"), &[parent])).await;
    let t = claim_id(&fx, &q, WORKER, parent).await;
    let stale = fx
        .store
        .ack(parent, wrong(token(&t)), Ack::Result(result("2")))
        .await;
    assert!(matches!(stale, Err(StoreError::LeaseLost)), "{stale:?}");
    assert_eq!(results_of(&fx, child).await, Vec::new());
}
