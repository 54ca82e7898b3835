//! Claim limits across nodes (docs/spec.md §4, §10): several stores on one
//! schema, several claimers each, and the limits hold for all of them
//! together, not per node. And the claims they hold back are counted
//! (docs/spec.md §7).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use spool_core::{ClaimRequest, NewTask, Payload, QueueName, QueueSettings, RateLimit, Store};
use spool_postgres::PgStore;

use crate::common::{
    admin, claim_for, connect, drain_across, fresh_schema, stores_on, test_config, Claimers,
    DropSchema,
};

const NODES: usize = 3;
const CLAIMERS_PER_NODE: usize = 4;

/// `NODES` stores on one fresh schema, and a queue of `tasks` tasks with
/// `settings`.
async fn nodes(
    schema: &str,
    settings: QueueSettings,
    tasks: usize,
) -> (Vec<Arc<PgStore>>, QueueName) {
    n_nodes(schema, NODES, settings, tasks).await
}

/// `n` stores on one fresh schema, and a queue of `tasks` tasks with
/// `settings`.
async fn n_nodes(
    schema: &str,
    n: usize,
    settings: QueueSettings,
    tasks: usize,
) -> (Vec<Arc<PgStore>>, QueueName) {
    let stores = stores_on(schema, n).await;
    let q = QueueName::new("limited").unwrap();
    stores[0].put_queue(&q, settings.into()).await.unwrap();
    let batch = (0..tasks)
        .map(|i| NewTask::new(Payload::binary(i.to_le_bytes().to_vec())))
        .collect();
    stores[0].enqueue(&q, batch).await.unwrap();
    (stores, q)
}

/// With max_leased 5, twelve claimers on three nodes never hold more than
/// five tasks at once between them, and do reach five. The count a
/// claimer keeps rises only after its claim answered and falls before it
/// acks, so it never exceeds what the store has leased. Claims of 3 find
/// room for four such claims only when nothing is leased: they take the
/// lock first, nearly always.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_leased_holds_across_nodes() {
    let most = max_leased_holds(5, 3, 150).await;
    assert_eq!(most, 5, "at most, and at last, 5 at once");
}

/// The same with max_leased 40 and claims of 5: while fewer than 20 are
/// leased the claims go ahead of the lock (README.md, "Claims ahead of the
/// lock"), and near the limit they take it first, so a drain goes back and
/// forth between the two, with claims ahead settled against each other on
/// three nodes. The limit holds all along and comes within a claim of
/// being reached (the count here lags the store's), every task is acked
/// once, and none was handed out on a second attempt: what claims ahead
/// gave back was as it had been.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_leased_holds_across_nodes_with_claims_ahead() {
    let most = max_leased_holds(40, 5, 3_000).await;
    assert!(
        (36..=40).contains(&most),
        "at most 40 at once, and near it: {most}"
    );
}

/// `tasks` tasks of a queue with `max` for max_leased, drained by twelve
/// claimers on three nodes taking up to `claim` at a time: each task acked
/// once, on its first attempt. Answers the most the claimers held at once.
async fn max_leased_holds(max: usize, claim: u32, tasks: usize) -> usize {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        max_leased: Some(max as u32),
        ..QueueSettings::default()
    };
    let (stores, q) = nodes(&schema, settings, tasks).await;
    let held = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let retried = Arc::new(AtomicUsize::new(0));
    let how = Claimers {
        per_node: CLAIMERS_PER_NODE,
        max: claim,
        hold: Duration::from_millis(5),
    };
    let (up, down, top, again) = (held.clone(), held.clone(), most.clone(), retried.clone());
    let acked = drain_across(
        &stores,
        &q,
        how,
        tasks,
        move |got| {
            let now = up.fetch_add(got.len(), Ordering::SeqCst) + got.len();
            top.fetch_max(now, Ordering::SeqCst);
            let later = got.iter().filter(|t| t.attempt != 1).count();
            again.fetch_add(later, Ordering::SeqCst);
        },
        move |_| {
            down.fetch_sub(1, Ordering::SeqCst);
        },
    )
    .await;
    assert_eq!(acked.len(), tasks);
    let distinct: std::collections::HashSet<_> = acked.iter().collect();
    assert_eq!(distinct.len(), tasks, "each task acked once");
    assert_eq!(
        retried.load(Ordering::SeqCst),
        0,
        "every task on its first attempt"
    );
    most.load(Ordering::SeqCst)
}

/// Six claims of one process on a limited queue whose row another
/// transaction holds: one of them waits at the row's lock, the other five
/// in the process (README.md, "One at the row"); once the row is free,
/// all six are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_process_sends_one_claim_of_a_queue_at_a_time_to_its_row() {
    const CLAIMS: usize = 6;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        max_leased: Some(1_000),
        ..QueueSettings::default()
    };
    let stores = stores_on(&schema, 1).await;
    let store = stores[0].clone();
    let q = QueueName::new("limited").unwrap();
    store.put_queue(&q, settings.into()).await.unwrap();
    let batch = (0..CLAIMS + 1)
        .map(|i| NewTask::new(Payload::binary(i.to_le_bytes().to_vec())))
        .collect();
    store.enqueue(&q, batch).await.unwrap();
    // The first claim teaches the process that the queue is limited.
    let first = store
        .claim(ClaimRequest::new(q.clone(), "w"))
        .await
        .unwrap();
    assert_eq!(first.len(), 1);

    let mut holder = admin().await;
    let tx = holder.transaction().await.unwrap();
    let locked = format!("SELECT 1 FROM \"{schema}\".queues WHERE name = 'limited' FOR UPDATE");
    tx.batch_execute(&locked).await.unwrap();
    let holder_pid: i32 = tx
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let claims: Vec<_> = (0..CLAIMS)
        .map(|i| {
            let (store, q) = (store.clone(), q.clone());
            tokio::spawn(async move {
                store
                    .claim(ClaimRequest::new(q, format!("w{i}")))
                    .await
                    .unwrap()
                    .len()
            })
        })
        .collect();
    let watcher = admin().await;
    let waiting_at_the_row = || waiting_behind(&watcher, holder_pid);
    let deadline = Instant::now() + Duration::from_secs(10);
    while waiting_at_the_row().await < 1 {
        assert!(Instant::now() < deadline, "a claim should reach the row");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Time for any more of them to arrive at the row, were they sent.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        waiting_at_the_row().await,
        1,
        "one claim at the row, no more"
    );

    tx.commit().await.unwrap();
    let mut took = 0;
    for claim in claims {
        took += claim.await.unwrap();
    }
    assert_eq!(took, CLAIMS, "every claim answered once the row was free");
}

/// Claims ahead of the lock (README.md, "Claims ahead of the lock"): five
/// nodes each claim 2 of a queue with max_leased 8 while another
/// transaction holds its row, so each counts room for four claims of its
/// size and leases its tasks before the lock. Settled in turn once the
/// row is free, four keep theirs and the fifth gives its tasks back: 8
/// leased, never more, and the other 12 ready as they were, none of them
/// charged an attempt.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_ahead_of_the_lock_keep_to_the_limit_and_give_back_the_rest() {
    const NODES_AHEAD: usize = 5;
    const MAX: u32 = 8;
    const TASKS: usize = 20;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        max_leased: Some(MAX),
        ..QueueSettings::default()
    };
    let (stores, q) = n_nodes(&schema, NODES_AHEAD, settings, TASKS).await;

    let mut holder = admin().await;
    let tx = holder.transaction().await.unwrap();
    let locked = format!("SELECT 1 FROM \"{schema}\".queues WHERE name = 'limited' FOR UPDATE");
    tx.batch_execute(&locked).await.unwrap();
    let claims: Vec<_> = stores
        .iter()
        .enumerate()
        .map(|(i, store)| {
            let (store, q) = (store.clone(), q.clone());
            tokio::spawn(async move {
                let req = ClaimRequest::new(q, format!("w{i}")).max(2);
                store.claim(req).await.unwrap()
            })
        })
        .collect();
    let watcher = admin().await;
    let count = |sql: String| {
        let watcher = &watcher;
        async move { watcher.query_one(&sql, &[]).await.unwrap().get::<_, i64>(0) }
    };
    let holder_pid: i32 = tx
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    // Every claim leased its tasks ahead of the lock and waits at the row.
    let deadline = Instant::now() + Duration::from_secs(10);
    while waiting_behind(&watcher, holder_pid).await < NODES_AHEAD as i64 {
        assert!(
            Instant::now() < deadline,
            "every claim should reach the row"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM \"{schema}\".tasks WHERE state = 'leased'"
        ))
        .await,
        0,
        "nothing claimed ahead is seen before it is settled"
    );
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM (SELECT 1 FROM \"{schema}\".tasks \
             WHERE state = 'ready' FOR UPDATE SKIP LOCKED) free"
        ))
        .await,
        (TASKS - 2 * NODES_AHEAD) as i64,
        "each claim holds the two tasks it leased ahead of the lock"
    );
    tx.commit().await.unwrap();

    let mut took = Vec::new();
    for claim in claims {
        took.push(claim.await.unwrap());
    }
    let kept: usize = took.iter().map(Vec::len).sum();
    assert_eq!(
        kept, MAX as usize,
        "the claims keep max_leased between them"
    );
    assert_eq!(
        took.iter().filter(|t| t.is_empty()).count(),
        1,
        "the last to settle gives its tasks back: {took:?}"
    );
    assert!(took.iter().flatten().all(|t| t.attempt == 1));
    let tasks = format!("\"{schema}\".tasks");
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM {tasks} WHERE state = 'leased'"
        ))
        .await,
        i64::from(MAX)
    );
    assert_eq!(
        count(format!(
            "SELECT count(*) FROM {tasks} WHERE state = 'ready' AND attempt = 0 \
             AND lease_token IS NULL AND lease_owner IS NULL"
        ))
        .await,
        (TASKS - MAX as usize) as i64,
        "the tasks given back are ready as they were"
    );
}

/// How many sessions wait behind `holder`, directly or behind another
/// waiter (a row's later waiters queue on its first one).
async fn waiting_behind(watcher: &tokio_postgres::Client, holder: i32) -> i64 {
    watcher
        .query_one(
            "WITH RECURSIVE behind(pid) AS ( \
                 SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) \
                 UNION \
                 SELECT a.pid FROM pg_stat_activity a, behind b \
                 WHERE b.pid = ANY(pg_blocking_pids(a.pid))) \
             SELECT count(*) FROM behind",
            &[&holder],
        )
        .await
        .unwrap()
        .get::<_, i64>(0)
}

/// A rate limit of 50 a second (burst 10) holds for twelve claimers on
/// three nodes together: what they took in a run is at most the burst and
/// the rate over its length, and close to it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rate_limit_holds_across_nodes() {
    const LIMIT: u32 = 50;
    const BURST: u32 = 10;
    const RUN: Duration = Duration::from_secs(2);
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        rate_limit: Some(RateLimit {
            limit: LIMIT,
            period: Duration::from_secs(1),
            burst: BURST,
        }),
        ..QueueSettings::default()
    };
    let (stores, q) = nodes(&schema, settings, 1000).await;
    let taken = Arc::new(AtomicUsize::new(0));
    let counted = taken.clone();
    let elapsed = claim_for(&stores, &q, CLAIMERS_PER_NODE, RUN, move |got| {
        counted.fetch_add(got.len(), Ordering::SeqCst);
    })
    .await;
    let taken = taken.load(Ordering::SeqCst) as f64;
    let allowed = f64::from(BURST) + f64::from(LIMIT) * elapsed.as_secs_f64();
    assert!(
        taken <= allowed,
        "{taken} tasks in {elapsed:?}; the limit allows {allowed}"
    );
    let expected = f64::from(BURST) + f64::from(LIMIT) * RUN.as_secs_f64();
    assert!(
        taken >= 0.8 * expected,
        "{taken} tasks in {elapsed:?}; the limit should let about {expected} through"
    );
}

/// Counts the throttled claims counted on the thread that installed it
/// ([`metrics::set_default_local_recorder`]), by their `queue` label:
/// tests run in parallel, and a global recorder would count the throttled
/// claims of every test.
#[derive(Default)]
struct Counters(Mutex<HashMap<String, Arc<AtomicU64>>>);

impl Counters {
    /// The throttled claims counted on `queue`.
    fn get(&self, queue: &QueueName) -> u64 {
        let counters = self.0.lock().unwrap();
        counters
            .get(queue.as_str())
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }
}

impl Recorder for Counters {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        if key.name() != THROTTLED {
            return Counter::noop();
        }
        let queue = key
            .labels()
            .find(|l| l.key() == "queue")
            .map_or_else(String::new, |l| l.value().to_string());
        let mut counters = self.0.lock().unwrap();
        Counter::from_arc(counters.entry(queue).or_default().clone())
    }

    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }

    fn register_histogram(&self, _: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::noop()
    }
}

const THROTTLED: &str = "spool_claims_throttled_total";

/// A queue named `name` with `settings` and `tasks` ready tasks.
async fn queue_of(store: &PgStore, name: &str, settings: QueueSettings, tasks: usize) -> QueueName {
    let q = QueueName::new(name).unwrap();
    store.put_queue(&q, settings.into()).await.unwrap();
    if tasks > 0 {
        let batch = (0..tasks)
            .map(|i| NewTask::new(Payload::binary(i.to_le_bytes().to_vec())))
            .collect();
        store.enqueue(&q, batch).await.unwrap();
    }
    q
}

/// A claim that a queue's limits hold back while tasks are ready counts
/// once as `spool_claims_throttled_total` with its queue's label
/// (docs/spec.md §7), as in the
/// embedded engine; a long poll counts once, however often it looks; a
/// claim that finds nothing ready, limits or not, does not count. On the
/// test's own thread (a current-thread runtime), so the counter is this
/// test's alone.
#[tokio::test]
async fn claims_the_limits_hold_back_count_as_throttled() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let counters = Counters::default();
    let _local = metrics::set_default_local_recorder(&counters);
    let store = connect(test_config(&schema)).await;
    let claim = |q: &QueueName, wait: Duration| {
        let req = ClaimRequest::new(q.clone(), "w").max(1).wait(wait);
        store.claim(req)
    };

    // Without limits, nothing ready: not throttled.
    let plain = queue_of(&store, "plain", QueueSettings::default(), 0).await;
    assert!(claim(&plain, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(counters.get(&plain), 0);

    // A rate limit of 1 a minute and two ready tasks: the first claim
    // spends the token, the second takes nothing and counts.
    let per_minute = QueueSettings {
        rate_limit: Some(RateLimit {
            limit: 1,
            period: Duration::from_secs(60),
            burst: 1,
        }),
        ..QueueSettings::default()
    };
    let rated = queue_of(&store, "rated", per_minute.clone(), 2).await;
    assert_eq!(claim(&rated, Duration::ZERO).await.unwrap().len(), 1);
    assert_eq!(counters.get(&rated), 0, "the first claim took a task");
    assert!(claim(&rated, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(counters.get(&rated), 1, "the second was held back");

    // A long poll held back (paced: it reads the bucket, sleeps, reads it
    // again) counts once.
    assert!(claim(&rated, Duration::from_millis(300))
        .await
        .unwrap()
        .is_empty());
    assert_eq!(counters.get(&rated), 2, "a long poll counts once");

    // The token spent, but nothing ready: not throttled.
    let empty = queue_of(&store, "rated_empty", per_minute, 1).await;
    assert_eq!(claim(&empty, Duration::ZERO).await.unwrap().len(), 1);
    assert!(claim(&empty, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(counters.get(&empty), 0, "nothing was ready");

    // max_leased 1 and two ready tasks: the second claim counts.
    let one_at_a_time = QueueSettings {
        max_leased: Some(1),
        ..QueueSettings::default()
    };
    let capped = queue_of(&store, "capped", one_at_a_time, 2).await;
    assert_eq!(claim(&capped, Duration::ZERO).await.unwrap().len(), 1);
    assert!(claim(&capped, Duration::ZERO).await.unwrap().is_empty());
    assert_eq!(counters.get(&capped), 1, "max_leased held it back");
    assert_eq!(counters.get(&rated), 2, "each queue counts its own");
}
