//! Dependencies across processes (docs/spec.md §3.2; README.md,
//! "Dependencies"): a parent ending through one store releases its child
//! for a claim waiting in another store on the same schema, woken by the
//! NOTIFY of the release; and many parents of one child acked at once
//! from two stores release it exactly once, with every ending counted and
//! every result kept. A result left through one store is read through
//! another (docs/spec.md §3.2 "Results"). A wide callback holds every
//! result, and a child that ends, however, leaves nothing beside its row
//! (migration 13); `wide` measures what each ending writes.

use std::time::{Duration, Instant};

use crate::common::{connect, fresh_schema, side_rows, test_config, DropSchema};
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

/// Children that end leave no rows in `task_results` (nor edges): one
/// completed after receiving results, one cancelled by the user after
/// receiving one, and one cancelled by its policy when its other parent
/// failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn children_that_end_leave_no_results_behind() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let store = connect(test_config(&schema)).await;
    let q = QueueName::new("ends").unwrap();
    let both = |t: NewTask| {
        t.priority(10)
            .after(Parent::InBatch(0))
            .after(Parent::InBatch(1))
    };
    let made = store
        .enqueue(
            &q,
            vec![
                job(),
                job(),
                job(),
                both(job()).if_parent_fails(ParentFailure::Run),
                both(job()),
                job()
                    .priority(10)
                    .after(Parent::InBatch(0))
                    .after(Parent::InBatch(2)),
            ],
        )
        .await
        .unwrap();
    let ids: Vec<TaskId> = made.iter().map(|o| o.id).collect();
    let [first, second, third, completes, cancelled, follows] = ids[..] else {
        panic!("six ids");
    };
    let leased = store
        .claim(ClaimRequest::new(q.clone(), "w").max(3))
        .await
        .unwrap();
    assert_eq!(leased.len(), 3, "the parents");
    let token = |id: TaskId| {
        leased
            .iter()
            .find(|t| t.id == id)
            .unwrap()
            .lease
            .as_ref()
            .unwrap()
            .token
    };
    let result = |v| Ack::Result(TaskResult::new(&v).unwrap());
    store
        .ack(first, token(first), result(json!("first")))
        .await
        .unwrap();
    let (held, _) = side_rows(&schema).await;
    assert_eq!(held, 3, "each child holds the first parent's result");

    store.cancel(TaskRef::Id(cancelled)).await.unwrap();
    store.cancel(TaskRef::Id(third)).await.unwrap();
    let gone = store.get(TaskRef::Id(follows)).await.unwrap_err();
    assert_eq!(
        gone,
        spool_core::StoreError::NotFound,
        "cancelled by its policy"
    );
    assert_eq!(side_rows(&schema).await.0, 1, "only the waiting child's");

    store
        .ack(second, token(second), result(json!("second")))
        .await
        .unwrap();
    let got = store
        .claim(ClaimRequest::new(q.clone(), "w"))
        .await
        .unwrap();
    assert_eq!(got.iter().map(|t| t.id).collect::<Vec<_>>(), [completes]);
    assert_eq!(got[0].deps.as_ref().unwrap().results.len(), 2);
    assert_eq!(side_rows(&schema).await.0, 2);
    let token = got[0].lease.as_ref().unwrap().token;
    store.ack(completes, token, Ack::Done).await.unwrap();
    assert_eq!(
        side_rows(&schema).await,
        (0, 0),
        "nothing left beside the rows"
    );
}

/// A callback of `parents` members, each leased; answers the callback's id
/// and the leases.
async fn wide_callback(
    store: &spool_postgres::PgStore,
    q: &QueueName,
    parents: usize,
) -> (TaskId, Vec<(TaskId, spool_core::LeaseToken)>) {
    let mut batch: Vec<NewTask> = (0..parents).map(|_| job()).collect();
    let callback = (0..parents as u32)
        .fold(job().priority(10), |t, i| t.after(Parent::InBatch(i)))
        .if_parent_fails(ParentFailure::Run);
    batch.push(callback);
    let made = store.enqueue(q, batch).await.unwrap();
    let mut leases = Vec::with_capacity(parents);
    while leases.len() < parents {
        let got = store
            .claim(ClaimRequest::new(q.clone(), "w").max(1000))
            .await
            .unwrap();
        assert!(!got.is_empty(), "the parents are claimable");
        leases.extend(got.into_iter().map(|t| (t.id, t.lease.unwrap().token)));
    }
    (made[parents].id, leases)
}

/// A parent's result: `bytes` of hex that TOAST cannot compress, behind
/// the parent's id.
fn wide_result(parent: TaskId, bytes: usize) -> TaskResult {
    let pad: String = (0..bytes / 2)
        .map(|_| format!("{:02x}", rand::random::<u8>()))
        .collect();
    TaskResult::new(&json!({ "parent": parent.0, "pad": pad })).unwrap()
}

/// A callback of 2,000 members, each acked with a result of ~100 bytes by
/// four workers: the callback is claimed once, holding every result,
/// exactly, by parent id.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wide_callback_holds_every_result_exactly() {
    const PARENTS: usize = 2_000;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let store = connect(test_config(&schema)).await;
    let q = QueueName::new("wide").unwrap();
    let (callback, leases) = wide_callback(&store, &q, PARENTS).await;
    let results: Vec<(TaskId, TaskResult)> = leases
        .iter()
        .map(|(id, _)| (*id, wide_result(*id, 100)))
        .collect();
    let workers: Vec<_> = leases
        .chunks(PARENTS / 4)
        .zip(results.chunks(PARENTS / 4))
        .map(|(leases, results)| {
            let (store, leases, results) = (store.clone(), leases.to_vec(), results.to_vec());
            tokio::spawn(async move {
                for ((id, token), (_, r)) in leases.into_iter().zip(results) {
                    store.ack(id, token, Ack::Result(r)).await.unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }

    let got = store
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    assert_eq!(got.iter().map(|t| t.id).collect::<Vec<_>>(), [callback]);
    let deps = got[0].deps.as_ref().unwrap();
    assert_eq!((deps.completed() as usize, deps.failed), (PARENTS, 0));
    let mut want = results;
    want.sort_unstable_by_key(|(p, _)| *p);
    assert!(deps.results == want, "every result, exactly, by parent id");
    let token = got[0].lease.as_ref().unwrap().token;
    store.ack(callback, token, Ack::Done).await.unwrap();
    assert_eq!(side_rows(&schema).await, (0, 0));
}

/// What acking a wide callback's members writes, per ack, at three widths
/// (not asserted: the machine's load moves it; README.md, "Dependencies").
/// Run alone, so that no other test's writes are counted:
/// `cargo test -p spool-postgres --test pg deps::wide_callback_write_cost -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn wide_callback_write_cost() {
    use crate::common::admin;
    let admin = admin().await;
    let lsn = || async {
        admin
            .query_one(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8",
                &[],
            )
            .await
            .unwrap()
            .get::<_, f64>(0)
    };
    for (parents, bytes) in [(500, 1_000), (1_000, 1_000), (2_000, 1_000), (2_000, 100)] {
        let schema = fresh_schema();
        let _drop = DropSchema(schema.clone());
        let store = connect(test_config(&schema)).await;
        let q = QueueName::new("cost").unwrap();
        let (callback, leases) = wide_callback(&store, &q, parents).await;
        let results: Vec<TaskResult> = leases
            .iter()
            .map(|(id, _)| wide_result(*id, bytes))
            .collect();
        let (before, started) = (lsn().await, Instant::now());
        for ((id, token), r) in leases.into_iter().zip(results) {
            store.ack(id, token, Ack::Result(r)).await.unwrap();
        }
        let (wal, took) = (lsn().await - before, started.elapsed());
        let child = store.get(TaskRef::Id(callback)).await.unwrap();
        assert_eq!(child.deps.unwrap().results.len(), parents);
        println!(
            "{parents} parents x {bytes} B: {:.1} ms/ack, {:.1} kB WAL/ack, {:.1} MB WAL in all",
            took.as_secs_f64() * 1e3 / parents as f64,
            wal / 1e3 / parents as f64,
            wal / 1e6,
        );
    }
}
