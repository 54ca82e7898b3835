//! Task groups (docs/spec.md §4): a task's group goes through every view,
//! claims take from a queue's groups in turn, `group_concurrency` caps the
//! leases of each group, and `groups` reports them.
//!
//! The claim order the cases expect is the documented one: groups in name
//! order, starting after the group the previous claim served last, one
//! task per group per turn; tasks without a group take their turn as the
//! group named by the empty string, which sorts first.

use std::time::Duration;

use spool_core::{
    Ack, FailRequest, NewTask, QueueChange, QueueSettings, StoreError, Task, TaskGroup, TaskId,
};

use crate::arrange::*;
use crate::fixture::Fixture;

fn group(s: &str) -> TaskGroup {
    TaskGroup::new(s).expect("a valid group")
}

fn in_group(g: &str, text: &str) -> NewTask {
    job(text).group(group(g))
}

fn capped(n: u32) -> QueueSettings {
    QueueSettings {
        group_concurrency: Some(n),
        ..QueueSettings::default()
    }
}

/// Enqueues `n` tasks of group `g` (`None`: no group) in one batch.
pub(crate) async fn enqueue_group(
    fx: &Fixture,
    q: &spool_core::QueueName,
    g: Option<&str>,
    n: usize,
) -> Vec<TaskId> {
    let tasks = (0..n)
        .map(|i| {
            let t = job(&format!("task {i}"));
            match g {
                Some(g) => t.group(group(g)),
                None => t,
            }
        })
        .collect();
    let out = fx.store.enqueue(q, tasks).await.expect("enqueue a batch");
    out.iter().map(|o| o.id).collect()
}

/// Claims up to 20 and checks they are exactly one task, of group `g`.
async fn claims_one_of(fx: &Fixture, q: &spool_core::QueueName, g: &str, why: &str) {
    assert_eq!(groups_of(&claim(fx, q, WORKER, 20).await), [g], "{why}");
}

/// The group of each task, `""` for none.
pub(crate) fn groups_of(tasks: &[Task]) -> Vec<String> {
    tasks
        .iter()
        .map(|t| t.group.as_ref().map_or("", |g| g.as_str()).to_string())
        .collect()
}

/// A task keeps its group, any UTF-8 text, through enqueue, get, claim and
/// a retry; a task without one has none.
pub async fn a_task_keeps_its_group(fx: Fixture) {
    let q = make_queue(&fx, "grouped", quick()).await;
    let named = "customer:42 ü/ß";
    let id = enqueue(&fx, &q, in_group(named, "x")).await;
    let plain = enqueue(&fx, &q, job("y")).await;
    assert_eq!(get(&fx, id).await.group, Some(group(named)));
    assert_eq!(get(&fx, plain).await.group, None);
    let claimed = claim(&fx, &q, WORKER, 10).await;
    let mut seen = groups_of(&claimed);
    seen.sort();
    assert_eq!(seen, vec!["".to_string(), named.to_string()]);
    let first = claimed.iter().find(|t| t.id == id).expect("claimed");
    let req = FailRequest {
        retry_at: Some(fx.store.now().await.unwrap()),
        ..FailRequest::new("boom")
    };
    fx.store.fail(id, token(first), req).await.unwrap();
    assert_eq!(get(&fx, id).await.group, Some(group(named)));
}

/// Claims of one task each go round the groups in name order, the
/// ungrouped tasks first, and skip groups that have nothing ready.
pub async fn claims_take_groups_in_turn(fx: Fixture) {
    let q = make_queue(&fx, "turns", quick()).await;
    let a = enqueue_group(&fx, &q, Some("a"), 4).await;
    let b = enqueue_group(&fx, &q, Some("b"), 2).await;
    let u = enqueue_group(&fx, &q, None, 1).await;
    let want = [u[0], a[0], b[0], a[1], b[1], a[2], a[3]];
    for (step, id) in want.into_iter().enumerate() {
        let got = claim(&fx, &q, WORKER, 1).await;
        assert_eq!(
            ids(&got),
            vec![id],
            "claim {step} takes the next group's turn"
        );
    }
    claim_nothing(&fx, &q).await;
}

/// One claim for many tasks takes one per group per turn: a group with a
/// large backlog queued first does not hold back a small one.
pub async fn a_large_backlog_does_not_hold_back_a_small_group(fx: Fixture) {
    let q = make_queue(&fx, "fair", quick()).await;
    enqueue_group(&fx, &q, Some("big"), 200).await;
    let small = enqueue_group(&fx, &q, Some("small"), 5).await;
    let got = claim(&fx, &q, WORKER, 10).await;
    let mut groups = groups_of(&got);
    groups.sort();
    let mut want = vec!["big".to_string(); 5];
    want.extend(vec!["small".to_string(); 5]);
    assert_eq!(groups, want, "five turns each");
    let mut small_got: Vec<TaskId> = got
        .iter()
        .filter(|t| t.group == Some(group("small")))
        .map(|t| t.id)
        .collect();
    small_got.sort();
    assert_eq!(small_got, small, "every task of the small group");
}

/// Within a group, tasks still go in (priority, run_at, id) order; a
/// group's turn is not given to another by priority.
pub async fn priorities_order_tasks_within_a_group(fx: Fixture) {
    let q = make_queue(&fx, "ranked", quick()).await;
    let late = enqueue(&fx, &q, in_group("a", "late").priority(5)).await;
    let urgent = enqueue(&fx, &q, in_group("a", "urgent").priority(-1)).await;
    let other = enqueue(&fx, &q, in_group("b", "other").priority(-100)).await;
    claim_id(&fx, &q, WORKER, urgent).await;
    claim_id(&fx, &q, WORKER, other).await;
    claim_id(&fx, &q, WORKER, late).await;
}

/// With `group_concurrency` 2, each group has at most two tasks leased at
/// once; tasks without a group are not bound by it. An ack, a release and
/// a failure that schedules a retry each free a slot of their group.
pub async fn group_concurrency_caps_each_group(fx: Fixture) {
    let q = make_queue(
        &fx,
        "per-group",
        QueueSettings {
            group_concurrency: Some(2),
            ..quick()
        },
    )
    .await;
    enqueue_group(&fx, &q, Some("a"), 5).await;
    enqueue_group(&fx, &q, Some("b"), 5).await;
    enqueue_group(&fx, &q, None, 3).await;
    let first = claim(&fx, &q, WORKER, 20).await;
    let mut groups = groups_of(&first);
    groups.sort();
    assert_eq!(
        groups,
        ["", "", "", "a", "a", "b", "b"],
        "two of each group, every ungrouped task"
    );
    claim_nothing(&fx, &q).await;

    let of = |g: &str| -> Vec<&Task> {
        first
            .iter()
            .filter(|t| t.group.as_ref().is_some_and(|x| x.as_str() == g))
            .collect()
    };
    let (a, b) = (of("a"), of("b"));
    fx.store.ack(a[0].id, token(a[0]), Ack::Done).await.unwrap();
    claims_one_of(&fx, &q, "a", "an ack frees a slot of a").await;
    claim_nothing(&fx, &q).await;
    fx.store.release(b[0].id, token(b[0])).await.unwrap();
    claims_one_of(&fx, &q, "b", "a release frees a slot of b").await;
    let later = fx
        .store
        .now()
        .await
        .unwrap()
        .plus(Duration::from_secs(3600));
    let req = FailRequest {
        retry_at: Some(later),
        ..FailRequest::new("later")
    };
    fx.store.fail(a[1].id, token(a[1]), req).await.unwrap();
    claims_one_of(&fx, &q, "a", "a failure frees a slot of a").await;
    claim_nothing(&fx, &q).await;
}

/// A lease that runs out frees its group's slot from the moment it expires.
pub async fn an_expired_lease_frees_its_group_slot(fx: Fixture) {
    let q = make_queue(&fx, "group-expiry", capped(1)).await;
    let made = enqueue_group(&fx, &q, Some("a"), 2).await;
    expiry_frees_a_slot(&fx, &q, made[0]).await;
}

/// A long poll that a full group holds back returns as soon as an ack
/// frees one of the group's slots.
pub async fn a_long_poll_on_a_full_group_wakes_when_a_slot_frees(fx: Fixture) {
    let q = make_queue(&fx, "group-wait", capped(1)).await;
    let made = enqueue_group(&fx, &q, Some("a"), 2).await;
    let held = claim_id(&fx, &q, WORKER, made[0]).await;
    ack_wakes_a_held_back_claim(&fx, &q, &held, made[1]).await;
}

/// `group_concurrency` changes live: raising it lets more in, removing it
/// lets everything in; the change keeps the queue's other limits.
pub async fn group_concurrency_changed_live_takes_effect(fx: Fixture) {
    let q = make_queue(
        &fx,
        "group-retuned",
        QueueSettings {
            max_leased: Some(100),
            ..capped(1)
        },
    )
    .await;
    enqueue_group(&fx, &q, Some("a"), 6).await;
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 1);
    let raise = QueueChange {
        group_concurrency: Some(Some(3)),
        ..QueueChange::default()
    };
    let raised = fx.store.put_queue(&q, raise).await.unwrap();
    assert_eq!(
        (raised.group_concurrency, raised.max_leased),
        (Some(3), Some(100))
    );
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 2, "3 at once now");
    let free = QueueChange {
        group_concurrency: Some(None),
        ..QueueChange::default()
    };
    fx.store.put_queue(&q, free).await.unwrap();
    assert_eq!(
        fx.store.get_queue(&q).await.unwrap().group_concurrency,
        None
    );
    assert_eq!(claim(&fx, &q, WORKER, 10).await.len(), 3, "no limit left");
}

/// `groups` reports each group with tasks waiting or leased, busiest first
/// and at most `limit`; ungrouped tasks and finished groups are not in it.
pub async fn groups_report_waiting_and_leased(fx: Fixture) {
    let q = make_queue(&fx, "reported", quick()).await;
    enqueue_group(&fx, &q, Some("small"), 1).await;
    enqueue_group(&fx, &q, Some("big"), 3).await;
    let later = fx
        .store
        .now()
        .await
        .unwrap()
        .plus(Duration::from_secs(3600));
    enqueue(&fx, &q, in_group("big", "scheduled").run_at(later)).await;
    enqueue_group(&fx, &q, None, 4).await;
    let done = enqueue_group(&fx, &q, Some("done"), 1).await;

    let claimed = claim(&fx, &q, WORKER, 4).await;
    let mut turns = groups_of(&claimed);
    turns.sort();
    assert_eq!(turns, ["", "big", "done", "small"], "one turn each");
    let finished = claimed
        .iter()
        .find(|t| t.id == done[0])
        .expect("done had a turn");
    fx.store
        .ack(finished.id, token(finished), Ack::Done)
        .await
        .unwrap();

    let got = fx.store.groups(&q, 10).await.unwrap();
    let seen: Vec<(&str, u64, u64)> = got
        .iter()
        .map(|g| (g.group.as_str(), g.waiting, g.leased))
        .collect();
    assert_eq!(seen, vec![("big", 3, 1), ("small", 0, 1)]);
    let top = fx.store.groups(&q, 1).await.unwrap();
    assert_eq!(top.len(), 1);
    assert_eq!(top[0].group, group("big"));
    assert!(fx
        .store
        .groups(&queue_name("nobody"), 10)
        .await
        .unwrap()
        .is_empty());
    for limit in [0, spool_core::groups::MAX_GROUP_STATS + 1] {
        assert!(
            matches!(
                fx.store.groups(&q, limit).await,
                Err(StoreError::BadRequest(_))
            ),
            "limit {limit} is refused"
        );
    }
}
