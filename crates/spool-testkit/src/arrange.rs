//! Setting up what a case starts from: names, queues, tasks in a given
//! state. Each helper asserts what it relies on, so a case fails at the step
//! that went wrong rather than later.

use std::time::Duration;

use spool_core::{
    Ack, ClaimRequest, FailRequest, Kind, LeaseToken, ListRequest, NewTask, Payload, QueueName,
    QueueSettings, QueueStats, Task, TaskId, TaskKey, TaskRef, TaskState,
};

use crate::fixture::Fixture;

pub(crate) const WORKER: &str = "worker-a";
pub(crate) const OTHER_WORKER: &str = "worker-b";

/// How far past a deadline cases move the clock: docs/spec.md §7.1 gives a derived
/// state (run_at passed, lease expired) up to 100 ms to show.
pub(crate) const BEYOND: Duration = Duration::from_millis(100);

/// A lease that cases let run out, asked for by the claim: short, so
/// wall-clock stores wait little.
pub(crate) const SHORT_LEASE: Duration = Duration::from_millis(300);

/// An id no store hands out in a test: far above any it will have assigned,
/// yet inside `i64`, so SQL stores can look it up.
pub(crate) const UNKNOWN_ID: TaskId = TaskId(1 << 62);

pub(crate) fn queue_name(s: &str) -> QueueName {
    QueueName::new(s).expect("a valid queue name")
}

pub(crate) fn key(s: &str) -> TaskKey {
    TaskKey::new(s).expect("a valid key")
}

pub(crate) fn kind(s: &str) -> Kind {
    Kind::new(s).expect("a valid kind")
}

/// A task with `text` as its binary payload.
pub(crate) fn job(text: &str) -> NewTask {
    NewTask::new(Payload::binary(text.as_bytes().to_vec()))
}

/// Settings for cases where time matters: retries come back within a
/// fraction of a second. The lease stays at its long default, so that on a
/// slow wall-clock store no lease runs out unless a case means it to.
pub(crate) fn quick() -> QueueSettings {
    QueueSettings {
        backoff_base: Duration::from_millis(200),
        backoff_max: Duration::from_secs(10),
        ..QueueSettings::default()
    }
}

pub(crate) async fn make_queue(fx: &Fixture, name: &str, settings: QueueSettings) -> QueueName {
    let q = queue_name(name);
    fx.store
        .put_queue(&q, settings.into())
        .await
        .expect("put_queue with valid settings");
    q
}

/// Enqueues one task that must be new.
pub(crate) async fn enqueue(fx: &Fixture, q: &QueueName, task: NewTask) -> TaskId {
    let out = fx.store.enqueue(q, vec![task]).await.expect("enqueue");
    assert_eq!(out.len(), 1, "one result per enqueued task");
    assert!(!out[0].duplicate, "a task without a live key is new");
    out[0].id
}

/// Enqueues `n` tasks in one batch and returns their ids.
pub(crate) async fn enqueue_n(fx: &Fixture, q: &QueueName, n: usize) -> Vec<TaskId> {
    let tasks = (0..n).map(|i| job(&format!("task {i}"))).collect();
    let out = fx.store.enqueue(q, tasks).await.expect("enqueue a batch");
    assert_eq!(out.len(), n, "one result per enqueued task");
    out.iter().map(|o| o.id).collect()
}

pub(crate) async fn claim(fx: &Fixture, q: &QueueName, worker: &str, max: u32) -> Vec<Task> {
    fx.store
        .claim(ClaimRequest::new(q.clone(), worker).max(max))
        .await
        .expect("claim")
}

/// Claims exactly one task and checks it is `id`.
pub(crate) async fn claim_id(fx: &Fixture, q: &QueueName, worker: &str, id: TaskId) -> Task {
    only(id, claim(fx, q, worker, 1).await)
}

/// Claims exactly one task, asking for `lease`, and checks it is `id`.
pub(crate) async fn claim_id_leased(
    fx: &Fixture,
    q: &QueueName,
    worker: &str,
    id: TaskId,
    lease: Duration,
) -> Task {
    let req = ClaimRequest::new(q.clone(), worker).lease(lease);
    only(id, fx.store.claim(req).await.expect("claim"))
}

#[track_caller]
fn only(id: TaskId, got: Vec<Task>) -> Task {
    assert_eq!(
        ids(&got),
        vec![id],
        "the claim should hand out exactly task {id}"
    );
    got.into_iter().next().expect("one task")
}

pub(crate) async fn claim_nothing(fx: &Fixture, q: &QueueName) {
    let got = claim(fx, q, OTHER_WORKER, 10).await;
    let ids: Vec<TaskId> = got.iter().map(|t| t.id).collect();
    assert!(ids.is_empty(), "nothing should be claimable, got {ids:?}");
}

/// The lease token a claim handed out with `task`.
pub(crate) fn token(task: &Task) -> LeaseToken {
    task.lease
        .as_ref()
        .expect("a claimed task has a lease")
        .token
}

/// `task`, waiting for `parents`.
pub(crate) fn after(task: NewTask, parents: &[TaskId]) -> NewTask {
    parents
        .iter()
        .fold(task, |t, id| t.after(spool_core::Parent::Task(*id)))
}

/// A token that is not `t`.
pub(crate) fn wrong(t: LeaseToken) -> LeaseToken {
    LeaseToken(t.0.wrapping_add(1))
}

pub(crate) async fn get(fx: &Fixture, id: TaskId) -> Task {
    fx.store
        .get(TaskRef::Id(id))
        .await
        .expect("get a live task")
}

/// The failures `task` records, oldest first: (attempt, message).
pub(crate) fn failures(task: &Task) -> Vec<(u32, &str)> {
    task.errors
        .iter()
        .map(|e| (e.attempt, e.message.as_str()))
        .collect()
}

/// Enqueues `task` at the top priority, so that the claim takes it before
/// any other ready task, and fails it with `discard`: a dead task.
pub(crate) async fn dead_task(fx: &Fixture, q: &QueueName, task: NewTask) -> TaskId {
    let id = enqueue(fx, q, task.priority(i16::MIN)).await;
    let t = claim_id(fx, q, WORKER, id).await;
    let req = FailRequest {
        discard: true,
        ..FailRequest::new("poison")
    };
    let failed = fx.store.fail(id, token(&t), req).await.expect("fail");
    assert_eq!(failed.state, TaskState::Dead);
    id
}

/// Claims and fails `id` `times` times, so that it ends scheduled an hour
/// ahead, out of the way of later claims, with `attempt == times`.
///
/// Between failures the task is due at once and claimed again, so `id` must
/// come first in claim order by priority alone: on a wall clock its new
/// run_at is later than that of tasks enqueued before.
pub(crate) async fn fail_times(fx: &Fixture, q: &QueueName, id: TaskId, times: u32) {
    for n in 1..=times {
        let t = claim_id(fx, q, WORKER, id).await;
        let now = fx.store.now().await.expect("now");
        let retry_at = if n == times {
            now.plus(Duration::from_secs(3600))
        } else {
            now
        };
        let req = FailRequest {
            retry_at: Some(retry_at),
            ..FailRequest::new(format!("failure {n}"))
        };
        fx.store.fail(id, token(&t), req).await.expect("fail");
    }
}

pub(crate) async fn stats_of(fx: &Fixture, q: &QueueName) -> QueueStats {
    let all = fx.store.stats().await.expect("stats");
    all.into_iter()
        .find(|s| &s.name == q)
        .unwrap_or_else(|| panic!("stats should list queue {q}"))
}

/// Every task the list yields, following cursors page by page.
pub(crate) async fn list_all(fx: &Fixture, mut req: ListRequest) -> Vec<Task> {
    // Cases list at most a few hundred tasks: more pages than this means a
    // cursor that never ends.
    const MAX_PAGES: usize = 1000;
    let mut all = Vec::new();
    for _ in 0..MAX_PAGES {
        let page = fx.store.list(req.clone()).await.expect("list");
        assert!(
            page.tasks.len() <= req.limit,
            "a page holds at most limit tasks"
        );
        all.extend(page.tasks);
        match page.next_cursor {
            Some(cursor) => req.cursor = Some(cursor),
            None => return all,
        }
    }
    panic!("the list still had a next_cursor after {MAX_PAGES} pages");
}

pub(crate) fn ids(tasks: &[Task]) -> Vec<TaskId> {
    tasks.iter().map(|t| t.id).collect()
}

/// How soon after a freed slot a waiting claim must return: well under the
/// PostgreSQL store's fallback poll of 1 s, so a store that only polled
/// would fail.
pub(crate) const WOKEN_WITHIN: Duration = Duration::from_millis(900);

/// Starts a long poll on `q` that `held`'s slot holds back, acks `held`,
/// and checks the poll then answers `next` alone, within [`WOKEN_WITHIN`]
/// of the ack.
pub(crate) async fn ack_wakes_a_held_back_claim(
    fx: &Fixture,
    q: &QueueName,
    held: &Task,
    next: TaskId,
) {
    let store = fx.store.clone();
    let req = ClaimRequest::new(q.clone(), OTHER_WORKER)
        .max(10)
        .wait(Duration::from_secs(5));
    let waiting = tokio::spawn(async move { store.claim(req).await });
    // Give the claim time to start waiting, so the ack has to wake it.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiting.is_finished(), "the limit held back nothing");
    let acked = std::time::Instant::now();
    fx.store.ack(held.id, token(held), Ack::Done).await.unwrap();
    let got = waiting.await.unwrap().unwrap();
    let waited = acked.elapsed();
    assert_eq!(ids(&got), vec![next]);
    assert!(
        waited < WOKEN_WITHIN,
        "the claim waited {waited:?} after the ack freed a slot"
    );
}

/// On a queue whose limit lets one task of the two enqueued (`first`
/// among them) be leased at once: claims `first` with a short lease,
/// checks nothing more is claimable, lets the lease run out, and checks
/// the freed slot takes exactly one task.
pub(crate) async fn expiry_frees_a_slot(fx: &Fixture, q: &QueueName, first: TaskId) {
    claim_id_leased(fx, q, WORKER, first, SHORT_LEASE).await;
    claim_nothing(fx, q).await;
    fx.advance(SHORT_LEASE + BEYOND).await;
    let again = claim(fx, q, OTHER_WORKER, 10).await;
    assert_eq!(again.len(), 1, "the freed slot takes one task");
    claim_nothing(fx, q).await;
}
