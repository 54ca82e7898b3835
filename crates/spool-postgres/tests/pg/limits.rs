//! Claim limits across nodes (docs/spec.md §4, §10): several stores on one
//! schema, several claimers each, and the limits hold for all of them
//! together, not per node.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use spool_core::{ClaimRequest, NewTask, Payload, QueueName, QueueSettings, RateLimit, Store};
use spool_postgres::PgStore;

use crate::common::{drain_across, fresh_schema, stores_on, Claimers, DropSchema};

const NODES: usize = 3;
const CLAIMERS_PER_NODE: usize = 4;

/// `NODES` stores on one fresh schema, and a queue of `tasks` tasks with
/// `settings`.
async fn nodes(
    schema: &str,
    settings: QueueSettings,
    tasks: usize,
) -> (Vec<Arc<PgStore>>, QueueName) {
    let stores = stores_on(schema, NODES).await;
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
/// acks, so it never exceeds what the store has leased.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_leased_holds_across_nodes() {
    const MAX: usize = 5;
    const TASKS: usize = 150;
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let settings = QueueSettings {
        max_leased: Some(MAX as u32),
        ..QueueSettings::default()
    };
    let (stores, q) = nodes(&schema, settings, TASKS).await;
    let held = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let how = Claimers {
        per_node: CLAIMERS_PER_NODE,
        max: 3,
        hold: Duration::from_millis(5),
    };
    let (up, down, top) = (held.clone(), held.clone(), most.clone());
    let acked = drain_across(
        &stores,
        &q,
        how,
        TASKS,
        move |got| {
            let now = up.fetch_add(got.len(), Ordering::SeqCst) + got.len();
            top.fetch_max(now, Ordering::SeqCst);
        },
        move |_| {
            down.fetch_sub(1, Ordering::SeqCst);
        },
    )
    .await;
    assert_eq!(acked.len(), TASKS);
    assert_eq!(
        most.load(Ordering::SeqCst),
        MAX,
        "at most, and at last, {MAX} at once"
    );
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
    let started = Instant::now();
    let mut claimers = Vec::new();
    for (n, store) in stores.iter().enumerate() {
        for c in 0..CLAIMERS_PER_NODE {
            let (store, q, taken) = (store.clone(), q.clone(), taken.clone());
            claimers.push(tokio::spawn(async move {
                let req = ClaimRequest::new(q, format!("node{n}-{c}"))
                    .max(10)
                    .wait(Duration::from_millis(100));
                while started.elapsed() < RUN {
                    let got = store.claim(req.clone()).await.unwrap();
                    taken.fetch_add(got.len(), Ordering::SeqCst);
                }
            }));
        }
    }
    for c in claimers {
        c.await.unwrap();
    }
    let elapsed = started.elapsed();
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
