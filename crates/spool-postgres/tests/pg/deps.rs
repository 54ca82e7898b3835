//! Dependencies across processes (docs/spec.md §3.2; README.md,
//! "Dependencies"): a parent ending through one store releases its child
//! for a claim waiting in another store on the same schema, woken by the
//! NOTIFY of the release; and many parents of one child acked at once
//! from two stores release it exactly once, with every ending counted and
//! every result kept. A result left through one store is read through
//! another (docs/spec.md §3.2 "Results").

use std::time::{Duration, Instant};

use crate::common::{connect, fresh_schema, test_config, DropSchema};
use serde_json::json;
use spool_core::{
    Ack, ClaimRequest, NewTask, Parent, ParentFailure, Payload, QueueName, Store, TaskId, TaskRef,
    TaskResult, TaskState,
};

fn job() -> NewTask {
    NewTask::new(Payload::json("{}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ack_on_one_node_wakes_a_claim_for_the_child_on_another() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    // A fallback poll far longer than the wait allowed: only the release's
    // notification can wake the claimer in time.
    let config = || {
        let mut c = test_config(&schema);
        c.poll_interval = Duration::from_secs(30);
        c
    };
    let (first, second) = (connect(config()).await, connect(config()).await);
    let parents = QueueName::new("parents").unwrap();
    let children = QueueName::new("children").unwrap();
    let parent = first.enqueue(&parents, vec![job()]).await.unwrap()[0].id;
    let child = second
        .enqueue(&children, vec![job().after(Parent::Task(parent))])
        .await
        .unwrap()[0]
        .id;
    assert_eq!(
        first.get(TaskRef::Id(child)).await.unwrap().state,
        TaskState::Pending
    );

    let waiting = {
        let (second, children) = (second.clone(), children.clone());
        tokio::spawn(async move {
            let req = ClaimRequest::new(children, "w").wait(Duration::from_secs(20));
            let got = second.claim(req).await.unwrap();
            (got, Instant::now())
        })
    };
    // Let the claim look once, find nothing (the child is pending) and sleep.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let leased = first
        .claim(ClaimRequest::new(parents, "w").max(1))
        .await
        .unwrap();
    let token = leased[0].lease.as_ref().unwrap().token;
    let acked_at = Instant::now();
    first.ack(parent, token, Ack::Done).await.unwrap();

    let (got, woke_at) = waiting.await.unwrap();
    assert_eq!(got.iter().map(|t| t.id).collect::<Vec<_>>(), vec![child]);
    let deps = got[0].deps.as_ref().unwrap();
    assert_eq!((deps.completed(), deps.failed), (1, 0));
    let waited = woke_at.duration_since(acked_at);
    assert!(waited < Duration::from_secs(1), "woken after {waited:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn parents_acked_at_once_from_two_nodes_release_their_callback_once() {
    const PARENTS: usize = 200;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let (a, b) = (
        connect(test_config(&schema)).await,
        connect(test_config(&schema)).await,
    );
    let q = QueueName::new("batch").unwrap();
    let mut batch: Vec<NewTask> = (0..PARENTS).map(|_| job()).collect();
    let callback = (0..PARENTS as u32)
        .fold(job().priority(10), |t, i| t.after(Parent::InBatch(i)))
        .if_parent_fails(ParentFailure::Run);
    batch.push(callback);
    let made = a.enqueue(&q, batch).await.unwrap();
    let callback = made[PARENTS].id;

    // Every parent leased first, then acked from both nodes at once: eight
    // workers, four a node, one ack a call; every other parent leaves its
    // id as a result, so concurrent acks also add to one row's results.
    let mut leases: Vec<(TaskId, spool_core::LeaseToken)> = Vec::new();
    while leases.len() < PARENTS {
        let got = a
            .claim(ClaimRequest::new(q.clone(), "w").max(100))
            .await
            .unwrap();
        assert!(!got.is_empty(), "the parents are claimable");
        for t in got {
            assert_ne!(t.id, callback, "the callback waits for every parent");
            leases.push((t.id, t.lease.unwrap().token));
        }
    }
    let workers: Vec<_> = leases
        .chunks(PARENTS / 8)
        .enumerate()
        .map(|(i, items)| {
            let store = if i % 2 == 0 { a.clone() } else { b.clone() };
            let items = items.to_vec();
            tokio::spawn(async move {
                for (id, token) in items {
                    let ack = if id.0 % 2 == 0 {
                        Ack::Result(TaskResult::new(&json!({ "parent": id.0 })).unwrap())
                    } else {
                        Ack::Done
                    };
                    store.ack(id, token, ack).await.unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }

    let claimed = b
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    assert_eq!(
        claimed.iter().map(|t| t.id).collect::<Vec<_>>(),
        vec![callback],
        "the callback, once"
    );
    let deps = claimed[0].deps.as_ref().unwrap();
    assert!(deps.waiting_on.is_empty());
    assert_eq!(
        (deps.after.len(), deps.completed() as usize, deps.failed),
        (PARENTS, PARENTS, 0)
    );
    let results: Vec<(TaskId, serde_json::Value)> =
        deps.results.iter().map(|(p, r)| (*p, r.value())).collect();
    let mut left: Vec<TaskId> = deps
        .after
        .iter()
        .copied()
        .filter(|p| p.0 % 2 == 0)
        .collect();
    left.sort_unstable();
    let want: Vec<(TaskId, serde_json::Value)> = left
        .into_iter()
        .map(|p| (p, json!({ "parent": p.0 })))
        .collect();
    assert_eq!(results, want, "every result, once, by parent id");
    let stats = a.stats().await.unwrap();
    let counts = stats.iter().find(|s| s.name == q).unwrap().counts;
    assert_eq!((counts.total(), counts.leased), (1, 1));
}

/// A parent acked with a result through one store: its child, claimed
/// through another store on the same schema, reads the result as given,
/// and a sibling acked without one leaves none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_result_left_on_one_node_is_read_on_another() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let (first, second) = (
        connect(test_config(&schema)).await,
        connect(test_config(&schema)).await,
    );
    let q = QueueName::new("results").unwrap();
    let made = first
        .enqueue(
            &q,
            vec![
                job(),
                job(),
                job()
                    .priority(10)
                    .after(Parent::InBatch(0))
                    .after(Parent::InBatch(1)),
            ],
        )
        .await
        .unwrap();
    let (with, without, child) = (made[0].id, made[1].id, made[2].id);
    let leased = first
        .claim(ClaimRequest::new(q.clone(), "w").max(2))
        .await
        .unwrap();
    assert_eq!(leased.len(), 2, "both parents, not the child");
    // Text that jsonb would rewrite (spacing, key order, a number's
    // exponent) and a \u0000 escape it could not store as a value.
    let text = r#"{"z": 1e3, "a": ["\u0000", null]}"#;
    for t in &leased {
        let token = t.lease.as_ref().unwrap().token;
        let ack = if t.id == with {
            Ack::Result(TaskResult::from_json(text).unwrap())
        } else {
            Ack::Done
        };
        first.ack(t.id, token, ack).await.unwrap();
    }

    let got = second
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    assert_eq!(got.iter().map(|t| t.id).collect::<Vec<_>>(), vec![child]);
    let deps = got[0].deps.as_ref().unwrap();
    assert_eq!((deps.completed(), deps.failed), (2, 0));
    let results: Vec<(TaskId, &str)> = deps.results.iter().map(|(p, r)| (*p, r.as_str())).collect();
    assert_eq!(results, vec![(with, text)], "nothing from {without}");
    // The row holds them as read through the first store, too.
    let seen = first.get(TaskRef::Id(child)).await.unwrap();
    assert_eq!(seen.deps.unwrap().results, deps.results);
}
