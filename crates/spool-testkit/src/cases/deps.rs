//! Dependencies (docs/spec.md §3.2): a task that names others in `after`
//! is pending until each has ended, and follows its policy when one ends
//! dead or cancelled.

use std::time::Duration;

use spool_core::{
    Ack, FailRequest, ListRequest, NewTask, Parent, ParentFailure, TaskId, TaskPatch, TaskRef,
    TaskState,
};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// How long a dependent may take to follow a parent whose last lease ran
/// out: the store notices the expiry, then releases or cancels.
const FOLLOWS_EXPIRY_WITHIN: Duration = Duration::from_secs(3);

async fn ack_id(fx: &Fixture, q: &spool_core::QueueName, id: TaskId) {
    let t = claim_id(fx, q, WORKER, id).await;
    fx.store.ack(id, token(&t), Ack::Done).await.expect("ack");
}

async fn state_of(fx: &Fixture, id: TaskId) -> Option<TaskState> {
    fx.store.get(TaskRef::Id(id)).await.ok().map(|t| t.state)
}

/// A dependent is pending, unclaimable, until its last parent completes;
/// then ready, and it reports whom it waited for.
pub async fn a_task_waits_for_every_parent(fx: Fixture) {
    let q = make_queue(&fx, "deps-wait", quick()).await;
    let a = enqueue(&fx, &q, job("a")).await;
    let b = enqueue(&fx, &q, job("b")).await;
    let child = enqueue(&fx, &q, after(job("child").priority(-1), &[b, a, b])).await;

    let pending = get(&fx, child).await;
    assert_eq!(pending.state, TaskState::Pending);
    let deps = pending.deps.as_ref().expect("the task has dependencies");
    assert_eq!(
        deps.after,
        vec![b, a],
        "each parent once, in the order named"
    );
    assert_eq!(deps.waiting_on, vec![a, b]);
    assert_eq!(deps.if_parent_fails, ParentFailure::Cancel);

    ack_id(&fx, &q, a).await;
    let still = get(&fx, child).await;
    assert_eq!(still.state, TaskState::Pending);
    assert_eq!(still.deps.as_ref().unwrap().waiting_on, vec![b]);
    let claimed = claim(&fx, &q, WORKER, 10).await;
    assert_eq!(ids(&claimed), vec![b], "only b is claimable");
    fx.store
        .ack(b, token(&claimed[0]), Ack::Done)
        .await
        .unwrap();

    let released = claim_id(&fx, &q, WORKER, child).await;
    let deps = released.deps.as_ref().unwrap();
    assert!(deps.waiting_on.is_empty());
    assert_eq!((deps.completed(), deps.failed), (2, 0));
}

/// A batch names parents by position; the positions become the parents'
/// ids. A forward position or an id never assigned is refused and the
/// batch creates nothing.
pub async fn a_batch_names_parents_by_position(fx: Fixture) {
    let q = make_queue(&fx, "deps-batch", quick()).await;
    let made = fx
        .store
        .enqueue(
            &q,
            vec![
                job("extract"),
                job("transform").after(Parent::InBatch(0)),
                job("load").after(Parent::InBatch(1)),
            ],
        )
        .await
        .unwrap();
    let ids: Vec<TaskId> = made.iter().map(|o| o.id).collect();
    assert_eq!(get(&fx, ids[1]).await.deps.unwrap().after, vec![ids[0]]);
    assert_eq!(get(&fx, ids[2]).await.deps.unwrap().after, vec![ids[1]]);
    assert_eq!(get(&fx, ids[2]).await.state, TaskState::Pending);

    let before = stats_of(&fx, &q).await.counts.total();
    let forward = vec![job("x").after(Parent::InBatch(1)), job("y")];
    expect_code(fx.store.enqueue(&q, forward).await, "bad_request");
    let unknown = vec![job("x"), after(job("y"), &[UNKNOWN_ID])];
    expect_code(fx.store.enqueue(&q, unknown).await, "bad_request");
    assert_eq!(stats_of(&fx, &q).await.counts.total(), before);

    for id in &ids {
        ack_id(&fx, &q, *id).await;
    }
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0);
}

/// With the default policy, a parent that goes dead cancels its dependents
/// and theirs in turn; a dependent with `run` counts the failure and runs.
pub async fn a_dead_parent_cancels_dependents_down_the_chain(fx: Fixture) {
    let q = make_queue(&fx, "deps-dead", quick()).await;
    let parent = enqueue(&fx, &q, job("parent").priority(-2)).await;
    let child = enqueue(&fx, &q, after(job("child"), &[parent]).key(key("child"))).await;
    let grandchild = enqueue(&fx, &q, after(job("grandchild"), &[child])).await;
    let runs_anyway = enqueue(
        &fx,
        &q,
        after(job("cleanup"), &[child]).if_parent_fails(ParentFailure::Run),
    )
    .await;

    let t = claim_id(&fx, &q, WORKER, parent).await;
    let discard = FailRequest {
        discard: true,
        ..FailRequest::new("broken")
    };
    fx.store.fail(parent, token(&t), discard).await.unwrap();

    expect_code(fx.store.get(TaskRef::Id(child)).await, "not_found");
    expect_code(fx.store.get(TaskRef::Id(grandchild)).await, "not_found");
    let cleanup = claim_id(&fx, &q, WORKER, runs_anyway).await;
    let deps = cleanup.deps.as_ref().unwrap();
    assert_eq!((deps.completed(), deps.failed), (0, 1));
    // The cancelled child's key is retired like any cancel's.
    let again = fx
        .store
        .enqueue(&q, vec![job("child").key(key("child"))])
        .await
        .unwrap();
    assert_eq!((again[0].id, again[0].duplicate), (child, true));
    assert_eq!(get(&fx, parent).await.state, TaskState::Dead);
}

/// A cancelled parent is a failed one for its dependents.
pub async fn a_cancelled_parent_counts_as_failed(fx: Fixture) {
    let q = make_queue(&fx, "deps-cancel", quick()).await;
    let a = enqueue(&fx, &q, job("a")).await;
    let b = enqueue(&fx, &q, job("b")).await;
    let strict = enqueue(&fx, &q, after(job("strict"), &[a, b])).await;
    let lenient = enqueue(
        &fx,
        &q,
        after(job("lenient"), &[a, b]).if_parent_fails(ParentFailure::Run),
    )
    .await;
    fx.store.cancel(TaskRef::Id(a)).await.unwrap();
    assert_eq!(
        state_of(&fx, strict).await,
        None,
        "cancelled with its parent"
    );
    assert_eq!(state_of(&fx, lenient).await, Some(TaskState::Pending));
    ack_id(&fx, &q, b).await;
    let t = claim_id(&fx, &q, WORKER, lenient).await;
    let deps = t.deps.as_ref().unwrap();
    assert_eq!((deps.completed(), deps.failed), (1, 1));
}

/// At enqueue, a parent already gone counts as completed and a dead one as
/// failed; a task its policy cancels at once gets an id and is gone.
pub async fn parents_that_ended_before_enqueue(fx: Fixture) {
    let q = make_queue(&fx, "deps-ended", quick()).await;
    let done = enqueue(&fx, &q, job("done")).await;
    ack_id(&fx, &q, done).await;
    let dead = dead_task(&fx, &q, job("dead")).await;

    let after_done = enqueue(&fx, &q, after(job("after-done"), &[done])).await;
    assert_eq!(get(&fx, after_done).await.state, TaskState::Ready);
    let strict = enqueue(&fx, &q, after(job("strict"), &[done, dead])).await;
    expect_code(fx.store.get(TaskRef::Id(strict)).await, "not_found");
    let lenient = after(job("lenient"), &[done, dead]).if_parent_fails(ParentFailure::Run);
    let lenient = enqueue(&fx, &q, lenient).await;
    let t = get(&fx, lenient).await;
    assert_eq!(t.state, TaskState::Ready);
    let deps = t.deps.as_ref().unwrap();
    assert_eq!((deps.completed(), deps.failed), (1, 1));

    // A task cancelled at enqueue is a failed parent for the batch after it.
    let made = fx
        .store
        .enqueue(
            &q,
            vec![
                after(job("doomed"), &[dead]),
                job("follows")
                    .after(Parent::InBatch(0))
                    .if_parent_fails(ParentFailure::Run),
            ],
        )
        .await
        .unwrap();
    let follows = get(&fx, made[1].id).await;
    assert_eq!(follows.state, TaskState::Ready);
    assert_eq!(follows.deps.unwrap().failed, 1);
}

/// A batch's callback waits for every member with `run`: it is released
/// once, when the last member has ended, and reads how they ended.
pub async fn a_batch_callback_runs_once_every_member_ended(fx: Fixture) {
    let q = make_queue(&fx, "deps-callback", quick()).await;
    let mut batch: Vec<NewTask> = (0..10).map(|i| job(&format!("member {i}"))).collect();
    let callback = (0..10)
        .fold(job("callback").priority(10), |t, i| {
            t.after(Parent::InBatch(i))
        })
        .if_parent_fails(ParentFailure::Run);
    batch.push(callback);
    let made = fx.store.enqueue(&q, batch).await.unwrap();
    let callback = made[10].id;

    for (i, member) in made[..10].iter().enumerate() {
        assert_eq!(get(&fx, callback).await.state, TaskState::Pending);
        let t = claim_id(&fx, &q, WORKER, member.id).await;
        if i < 2 {
            let discard = FailRequest {
                discard: true,
                ..FailRequest::new("bad row")
            };
            fx.store.fail(member.id, token(&t), discard).await.unwrap();
        } else {
            fx.store.ack(member.id, token(&t), Ack::Done).await.unwrap();
        }
    }
    let run = claim(&fx, &q, WORKER, 10).await;
    assert_eq!(ids(&run), vec![callback], "the callback, and once");
    let deps = run[0].deps.as_ref().unwrap();
    assert_eq!(
        (deps.after.len(), deps.completed(), deps.failed),
        (10, 8, 2)
    );
}

/// An ack that re-arms a parent does not end it; its last expired lease
/// does (it is dead then).
pub async fn only_a_parents_end_releases_its_dependents(fx: Fixture) {
    let q = make_queue(&fx, "deps-rearm", quick()).await;
    let parent = enqueue(&fx, &q, job("parent").max_attempts(1).priority(-1)).await;
    let child = enqueue(
        &fx,
        &q,
        after(job("child"), &[parent]).if_parent_fails(ParentFailure::Run),
    )
    .await;
    let t = claim_id(&fx, &q, WORKER, parent).await;
    let now = fx.store.now().await.unwrap();
    fx.store
        .ack(parent, token(&t), Ack::Reschedule(now))
        .await
        .unwrap();
    assert_eq!(get(&fx, child).await.state, TaskState::Pending);

    claim_id_leased(&fx, &q, WORKER, parent, SHORT_LEASE).await;
    fx.advance(SHORT_LEASE + BEYOND).await;
    let mut waited = Duration::ZERO;
    while state_of(&fx, child).await == Some(TaskState::Pending) {
        assert!(
            waited < FOLLOWS_EXPIRY_WITHIN,
            "the child still waits {waited:?} after its parent's last lease ran out"
        );
        fx.advance(BEYOND).await;
        waited += BEYOND;
    }
    assert_eq!(get(&fx, parent).await.state, TaskState::Dead);
    let t = claim_id(&fx, &q, WORKER, child).await;
    assert_eq!(t.deps.unwrap().failed, 1);
}

/// Pending tasks count in stats, list under their state, take updates and
/// cancels, and are not dead: retry refuses them.
pub async fn pending_tasks_count_list_and_update(fx: Fixture) {
    let q = make_queue(&fx, "deps-inspect", quick()).await;
    let parent = enqueue(&fx, &q, job("parent")).await;
    let child = enqueue(&fx, &q, after(job("child"), &[parent])).await;
    let other = enqueue(&fx, &q, after(job("other"), &[parent])).await;

    assert_eq!(stats_of(&fx, &q).await.counts.pending, 2);
    let mut req = ListRequest::new(q.clone());
    req.state = Some(TaskState::Pending);
    assert_eq!(ids(&list_all(&fx, req).await), vec![child, other]);
    expect_code(fx.store.retry(child).await, "bad_request");

    let later = fx
        .store
        .now()
        .await
        .unwrap()
        .plus(Duration::from_secs(3600));
    let patch = TaskPatch {
        run_at: Some(later),
        ..TaskPatch::default()
    };
    let updated = fx.store.update(TaskRef::Id(child), patch).await.unwrap();
    assert_eq!(updated.state, TaskState::Pending);
    fx.store.cancel(TaskRef::Id(other)).await.unwrap();

    ack_id(&fx, &q, parent).await;
    let released = get(&fx, child).await;
    assert_eq!(released.state, TaskState::Scheduled, "its new run_at holds");
    assert_eq!(released.run_at, later);
    let counts = stats_of(&fx, &q).await.counts;
    assert_eq!((counts.pending, counts.scheduled), (0, 1));
}

/// A long poll on a queue whose only task is pending wakes when the
/// parent's ack, on another queue, releases it.
pub async fn a_long_poll_wakes_when_a_dependent_is_released(fx: Fixture) {
    let parents = make_queue(&fx, "deps-wake-parents", quick()).await;
    let q = make_queue(&fx, "deps-wake", quick()).await;
    let parent = enqueue(&fx, &parents, job("parent")).await;
    let child = enqueue(&fx, &q, after(job("child"), &[parent])).await;
    let held = claim_id(&fx, &parents, WORKER, parent).await;
    ack_wakes_a_held_back_claim(&fx, &q, &held, child).await;
}
