//! Task groups across nodes (docs/spec.md §4, "Groups"; README.md,
//! "Groups"): several stores on one schema, and group_concurrency, each
//! group's rate limit and the claims' turns hold for all of them together,
//! not per node.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spool_core::{
    Ack, ClaimRequest, NewTask, Payload, QueueName, QueueSettings, RateLimit, Store, Task,
    TaskGroup,
};
use spool_postgres::PgStore;
use tokio_postgres::NoTls;

use crate::common::{
    claim_for, connect, database_url, drain_across, fresh_schema, stores_on, test_config, Claimers,
    DropSchema,
};

const NODES: usize = 3;

/// `NODES` stores on one schema, and queue `q` with `settings`.
async fn nodes(schema: &str, settings: QueueSettings) -> (Vec<Arc<PgStore>>, QueueName) {
    let stores = stores_on(schema, NODES).await;
    let q = QueueName::new("grouped").unwrap();
    stores[0].put_queue(&q, settings.into()).await.unwrap();
    (stores, q)
}

fn group(name: &str) -> TaskGroup {
    TaskGroup::new(name).unwrap()
}

/// `n` tasks of group `g`, the i-th with payload i.
fn tasks_of(g: &str, n: usize) -> Vec<NewTask> {
    (0..n)
        .map(|i| NewTask::new(Payload::binary(i.to_le_bytes().to_vec())).group(group(g)))
        .collect()
}

fn group_of(task: &Task) -> String {
    task.group
        .as_ref()
        .map_or(String::new(), |g| g.as_str().to_string())
}

/// With group_concurrency 2, twelve claimers on three nodes never hold more
/// than two tasks of one group at once between them, and do reach two in
/// every group; every task is handed out once. The count a claimer keeps
/// rises only after its claim answered and falls before it acks, so it
/// never exceeds what the store has leased.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn group_concurrency_holds_across_nodes() {
    const MAX: usize = 2;
    const GROUPS: usize = 5;
    const PER_GROUP: usize = 30;
    const TASKS: usize = GROUPS * PER_GROUP;
    const CLAIMERS_PER_NODE: usize = 4;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        group_concurrency: Some(MAX as u32),
        ..QueueSettings::default()
    };
    let (stores, q) = nodes(&schema, settings).await;
    let names: Vec<String> = (0..GROUPS).map(|g| format!("customer-{g}")).collect();
    for name in &names {
        stores[0]
            .enqueue(&q, tasks_of(name, PER_GROUP))
            .await
            .unwrap();
    }
    let counters = || -> Arc<HashMap<String, AtomicUsize>> {
        Arc::new(
            names
                .iter()
                .map(|n| (n.clone(), AtomicUsize::new(0)))
                .collect(),
        )
    };
    let (held, most) = (counters(), counters());
    // Each claimer holds its tasks 50 ms, long enough for other claims to
    // come meanwhile: claims of one queue take turns.
    let how = Claimers {
        per_node: CLAIMERS_PER_NODE,
        max: 2,
        hold: Duration::from_millis(50),
    };
    let (up, down, top) = (held.clone(), held.clone(), most.clone());
    let mut acked = drain_across(
        &stores,
        &q,
        how,
        TASKS,
        move |got| {
            for t in got {
                let g = group_of(t);
                let now = up[&g].fetch_add(1, Ordering::SeqCst) + 1;
                top[&g].fetch_max(now, Ordering::SeqCst);
            }
        },
        move |t| {
            down[&group_of(t)].fetch_sub(1, Ordering::SeqCst);
        },
    )
    .await;
    assert_eq!(acked.len(), TASKS);
    acked.sort();
    acked.dedup();
    assert_eq!(acked.len(), TASKS, "every task handed out once");
    let most: Vec<usize> = names
        .iter()
        .map(|name| most[name].load(Ordering::SeqCst))
        .collect();
    assert_eq!(
        most,
        vec![MAX; GROUPS],
        "at most, and at last, {MAX} of each group at once"
    );
}

/// With a rate limit of 20 per second (burst 5) for each group, twelve
/// claimers on three nodes take from each of three groups at most what
/// one bucket allows over the run, and about that much: the buckets are
/// the schema's, not each node's. Tasks without a group are not held.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_group_rate_limit_holds_across_nodes() {
    const LIMIT: u32 = 20;
    const BURST: u32 = 5;
    const GROUPS: usize = 3;
    const RUN: Duration = Duration::from_secs(2);
    const CLAIMERS_PER_NODE: usize = 4;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        group_rate_limit: Some(RateLimit {
            limit: LIMIT,
            period: Duration::from_secs(1),
            burst: BURST,
        }),
        ..QueueSettings::default()
    };
    let (stores, q) = nodes(&schema, settings).await;
    let names: Vec<String> = (0..GROUPS).map(|g| format!("host-{g}")).collect();
    for name in &names {
        stores[0].enqueue(&q, tasks_of(name, 500)).await.unwrap();
    }
    stores[0]
        .enqueue(&q, vec![NewTask::new(Payload::binary(vec![0])); 50])
        .await
        .unwrap();
    let taken: Arc<HashMap<String, AtomicUsize>> = Arc::new(
        names
            .iter()
            .chain([&String::new()])
            .map(|n| (n.clone(), AtomicUsize::new(0)))
            .collect(),
    );
    let counted = taken.clone();
    let elapsed = claim_for(&stores, &q, CLAIMERS_PER_NODE, RUN, move |got| {
        for t in got {
            counted[&group_of(t)].fetch_add(1, Ordering::SeqCst);
        }
    })
    .await;
    let allowed = f64::from(BURST) + f64::from(LIMIT) * elapsed.as_secs_f64();
    let expected = f64::from(BURST) + f64::from(LIMIT) * RUN.as_secs_f64();
    for name in &names {
        let n = taken[name].load(Ordering::SeqCst) as f64;
        assert!(
            n <= allowed,
            "{n} tasks of {name} in {elapsed:?}; its bucket allows {allowed}"
        );
        assert!(
            n >= 0.8 * expected,
            "{n} tasks of {name} in {elapsed:?}; its bucket should let about {expected} through"
        );
    }
    assert_eq!(
        taken[""].load(Ordering::SeqCst),
        50,
        "tasks without a group are not held"
    );
}

/// One sequence of claims, each on the next node, goes round the groups
/// in name order as one store's would: the cursor is the queue's, in the
/// database. A claim of many on yet another node then starts after the
/// group the last one served.
#[tokio::test]
async fn claims_on_every_node_take_the_groups_in_one_turn() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let (stores, q) = nodes(&schema, QueueSettings::default()).await;
    stores[0].enqueue(&q, tasks_of("a", 100)).await.unwrap();
    stores[1].enqueue(&q, tasks_of("b", 4)).await.unwrap();
    stores[2].enqueue(&q, tasks_of("c", 4)).await.unwrap();
    let mut turns = Vec::new();
    for i in 0..10 {
        let req = ClaimRequest::new(q.clone(), format!("w{i}"));
        let got = stores[i % NODES].claim(req).await.unwrap();
        assert_eq!(got.len(), 1);
        turns.push(group_of(&got[0]));
    }
    assert_eq!(turns, ["a", "b", "c", "a", "b", "c", "a", "b", "c", "a"]);
    // After a: b, c, then a (b and c run out at their fourth turn).
    let req = ClaimRequest::new(q.clone(), "many").max(6);
    let got: Vec<String> = stores[1]
        .claim(req)
        .await
        .unwrap()
        .iter()
        .map(group_of)
        .collect();
    assert_eq!(got, ["b", "c", "a", "a", "a", "a"]);
}

/// A lease that runs out frees its group's slot for a claim on another
/// node at once, before any sweeper writes the expiry down; and a claim
/// waiting on a full group on one node wakes when another node acks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slot_freed_on_one_node_serves_another() {
    const LEASE: Duration = Duration::from_millis(400);
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        group_concurrency: Some(1),
        ..QueueSettings::default()
    };
    let (stores, q) = nodes(&schema, settings).await;
    stores[0].enqueue(&q, tasks_of("a", 3)).await.unwrap();
    let first = stores[0]
        .claim(ClaimRequest::new(q.clone(), "w0").lease(LEASE))
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    let other = ClaimRequest::new(q.clone(), "w1").max(10);
    assert!(stores[1].claim(other.clone()).await.unwrap().is_empty());
    tokio::time::sleep(LEASE + Duration::from_millis(20)).await;
    let second = stores[1].claim(other.clone()).await.unwrap();
    assert_eq!(second.len(), 1, "the expired lease's slot takes one task");
    assert!(stores[2].claim(other.clone()).await.unwrap().is_empty());

    let waiter = stores[2].clone();
    let waiting = tokio::spawn(async move {
        waiter
            .claim(other.wait(Duration::from_secs(5)))
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "the full group handed out a task");
    let acked = Instant::now();
    let token = second[0].lease.as_ref().unwrap().token;
    stores[1].ack(second[0].id, token, Ack::Done).await.unwrap();
    let got = waiting.await.unwrap();
    let waited = acked.elapsed();
    assert_eq!(got.len(), 1);
    assert!(
        waited < Duration::from_millis(900),
        "the claim on another node waited {waited:?} after the ack"
    );
}

/// A queue stays on the ordinary claim path until a grouped task comes:
/// then the enqueue marks it, a transactional enqueue inside the caller's
/// transaction too (and a rolled-back one does not), and the rotation of
/// the ring moves grouped tasks with their group. (Multi-threaded: the
/// schema is dropped while the rotation, aborted with the store, may still
/// hold its transaction until a worker lets the task go.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_enqueues_mark_their_queue_and_groups_survive_the_ring() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let store = connect(spool_postgres::PgConfig {
        rotate_interval: Duration::from_millis(100),
        ..test_config(&schema)
    })
    .await;
    let (mut admin, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let marked = format!("SELECT has_groups FROM \"{schema}\".queues WHERE name = $1");
    let q = QueueName::new("plain").unwrap();
    let plain = (0..3)
        .map(|i| NewTask::new(Payload::binary(vec![i])))
        .collect();
    store.enqueue(&q, plain).await.unwrap();
    let flag = |rows: Vec<tokio_postgres::Row>| -> bool { rows[0].get(0) };
    assert!(!flag(admin.query(&marked, &[&"plain"]).await.unwrap()));

    let tx = admin.transaction().await.unwrap();
    store.enqueue_in(&tx, &q, tasks_of("x", 1)).await.unwrap();
    tx.rollback().await.unwrap();
    assert!(
        !flag(admin.query(&marked, &[&"plain"]).await.unwrap()),
        "a rolled-back enqueue marks nothing"
    );
    let tx = admin.transaction().await.unwrap();
    let ids = store.enqueue_in(&tx, &q, tasks_of("x", 2)).await.unwrap();
    tx.commit().await.unwrap();
    assert!(flag(admin.query(&marked, &[&"plain"]).await.unwrap()));
    assert_eq!(
        store.get(ids[0].id.into()).await.unwrap().group,
        Some(group("x"))
    );

    // Two turns of the ring move every task out of the partition it was
    // written to.
    let ring = format!("SELECT current FROM \"{schema}\".ring");
    let start: i16 = admin.query_one(&ring, &[]).await.unwrap().get(0);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut turned = 0;
    let mut last = start;
    while turned < 2 {
        assert!(Instant::now() < deadline, "the ring did not turn");
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now: i16 = admin.query_one(&ring, &[]).await.unwrap().get(0);
        if now != last {
            turned += 1;
            last = now;
        }
    }
    // The ungrouped tasks, then x, in turns: the three plain ones are one
    // group, named ''.
    let got = store
        .claim(ClaimRequest::new(q.clone(), "w").max(10))
        .await
        .unwrap();
    let turns: Vec<String> = got.iter().map(group_of).collect();
    assert_eq!(turns, ["", "x", "", "x", ""]);
}

/// A queue whose groups are done goes back to the ordinary claim: the claim
/// that finds no grouped task ready or leased clears the mark, and a grouped
/// task that comes later marks the queue again, whichever way it becomes
/// ready: its enqueue, or the sweeper for a scheduled one that falls due
/// after the mark was cleared, and for one whose enqueue saw the mark still
/// set and committed after a claim cleared it (made here by clearing the
/// mark by hand). The mark stays while a group_concurrency is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queue_whose_groups_are_done_claims_the_ordinary_way_again() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let store = connect(test_config(&schema)).await;
    let (admin, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let marked = format!("SELECT has_groups FROM \"{schema}\".queues WHERE name = $1");
    let is_marked = |q: &'static str| {
        let admin = &admin;
        let marked = &marked;
        async move {
            let row = admin.query_one(marked, &[&q]).await.unwrap();
            row.get::<_, bool>(0)
        }
    };
    let q = QueueName::new("mixed").unwrap();
    let claim = |max: u32| ClaimRequest::new(q.clone(), "w").max(max);
    let ack_all = |tasks: Vec<Task>| {
        let store = &store;
        async move {
            for t in tasks {
                let token = t.lease.as_ref().unwrap().token;
                store.ack(t.id, token, Ack::Done).await.unwrap();
            }
        }
    };
    // A long poll gets the one task of group `g` within `bound` of `since`.
    let waiting_claim_gets = |g: &'static str, since: Instant, bound: Duration| {
        let store = &store;
        let claim = &claim;
        let ack_all = &ack_all;
        async move {
            let got = store
                .claim(claim(10).wait(Duration::from_secs(5)))
                .await
                .unwrap();
            let waited = since.elapsed();
            assert_eq!(got.iter().map(group_of).collect::<Vec<_>>(), [g]);
            assert!(
                waited < bound,
                "the task of group {g} was claimed after {waited:?}"
            );
            ack_all(got).await;
        }
    };

    let mut tasks = tasks_of("a", 2);
    tasks.push(NewTask::new(Payload::binary(vec![9])));
    store.enqueue(&q, tasks).await.unwrap();
    assert!(is_marked("mixed").await);
    let got = store.claim(claim(10)).await.unwrap();
    assert_eq!(got.len(), 3);
    assert!(store.claim(claim(10)).await.unwrap().is_empty());
    assert!(
        is_marked("mixed").await,
        "cleared while grouped tasks were leased"
    );
    ack_all(got).await;
    assert!(store.claim(claim(10)).await.unwrap().is_empty());
    assert!(
        !is_marked("mixed").await,
        "a claim that found no grouped task left the mark"
    );
    store
        .enqueue(&q, vec![NewTask::new(Payload::binary(vec![1]))])
        .await
        .unwrap();
    let got = store.claim(claim(10)).await.unwrap();
    assert_eq!(got.len(), 1);
    ack_all(got).await;

    // Enqueued grouped: marked at once.
    store.enqueue(&q, tasks_of("b", 1)).await.unwrap();
    assert!(is_marked("mixed").await);
    let got = store.claim(claim(10)).await.unwrap();
    assert_eq!(got.iter().map(group_of).collect::<Vec<_>>(), ["b"]);
    ack_all(got).await;

    // Scheduled grouped: the mark goes while it waits, and comes back when
    // the sweeper makes it ready.
    let due_in = Duration::from_millis(600);
    let later = NewTask::new(Payload::binary(vec![2]))
        .group(group("c"))
        .delay(due_in);
    let enqueued = Instant::now();
    store.enqueue(&q, vec![later]).await.unwrap();
    assert!(store.claim(claim(10)).await.unwrap().is_empty());
    assert!(!is_marked("mixed").await);
    waiting_claim_gets("c", enqueued, due_in + Duration::from_millis(900)).await;

    // Ready grouped with the mark cleared under it: the sweeper marks the
    // queue and wakes the waiting claim.
    store.enqueue(&q, tasks_of("d", 1)).await.unwrap();
    let unmark = format!("UPDATE \"{schema}\".queues SET has_groups = false WHERE name = 'mixed'");
    admin.execute(&unmark, &[]).await.unwrap();
    waiting_claim_gets("d", Instant::now(), Duration::from_millis(900)).await;

    let bounded = QueueName::new("bounded").unwrap();
    store
        .put_queue(
            &bounded,
            QueueSettings {
                group_concurrency: Some(1),
                ..QueueSettings::default()
            }
            .into(),
        )
        .await
        .unwrap();
    store.enqueue(&bounded, tasks_of("e", 1)).await.unwrap();
    let got = store
        .claim(ClaimRequest::new(bounded.clone(), "w").max(10))
        .await
        .unwrap();
    ack_all(got).await;
    assert!(store
        .claim(ClaimRequest::new(bounded.clone(), "w"))
        .await
        .unwrap()
        .is_empty());
    assert!(
        is_marked("bounded").await,
        "cleared the mark of a queue with a group_concurrency"
    );
}

/// A node sends the claim its last claim of a queue took, for a queue
/// without groups or with, together with the lock (src/ops/claim_limits.rs,
/// "One round trip"). When another node has since given the queue a
/// group_concurrency and grouped tasks, the claim sent takes nothing and
/// the node claims again as the lock statement says: the group's bound
/// holds from the first claim. And back: with the bound gone and the
/// groups done, a node that last claimed in turns still claims every
/// task.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_follows_a_queue_that_gains_groups_on_another() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        max_leased: Some(100),
        ..QueueSettings::default()
    };
    let (stores, q) = nodes(&schema, settings.clone()).await;
    let (a, b) = (&stores[0], &stores[1]);
    let claim = |max: u32| ClaimRequest::new(q.clone(), "w").max(max);
    let ack_all = |tasks: Vec<Task>| async move {
        for t in tasks {
            let token = t.lease.as_ref().unwrap().token;
            a.ack(t.id, token, Ack::Done).await.unwrap();
        }
    };
    let plain = |n: u8| {
        (0..n)
            .map(|i| NewTask::new(Payload::binary(vec![i])))
            .collect::<Vec<_>>()
    };

    b.enqueue(&q, plain(1)).await.unwrap();
    let got = a.claim(claim(10)).await.unwrap();
    assert_eq!(got.len(), 1);
    ack_all(got).await;

    let bounded = QueueSettings {
        group_concurrency: Some(1),
        ..settings.clone()
    };
    b.put_queue(&q, bounded.into()).await.unwrap();
    b.enqueue(&q, tasks_of("g", 3)).await.unwrap();
    let first = a.claim(claim(10)).await.unwrap();
    assert_eq!(
        first.len(),
        1,
        "the first claim takes what group_concurrency 1 allows"
    );
    assert!(a.claim(claim(10)).await.unwrap().is_empty());
    ack_all(first).await;
    let second = a.claim(claim(10)).await.unwrap();
    assert_eq!(second.len(), 1);
    ack_all(second).await;
    ack_all(a.claim(claim(10)).await.unwrap()).await;

    b.put_queue(&q, settings.into()).await.unwrap();
    assert!(a.claim(claim(10)).await.unwrap().is_empty());
    b.enqueue(&q, plain(3)).await.unwrap();
    assert_eq!(a.claim(claim(10)).await.unwrap().len(), 3);
}
