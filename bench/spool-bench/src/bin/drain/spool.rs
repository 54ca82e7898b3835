//! The drain through Spool: `enqueue` batches, then `claim` + `ack_many`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use spool_core::{ClaimRequest, NewTask, Payload, QueueName, QueueSettings, Store};
use spool_postgres::{ClaimStrategy, PgConfig, PgStore};

use crate::{Drain, Drained};

pub(crate) async fn drain(d: &Drain, claim: ClaimStrategy) -> Drained {
    let Drain {
        tasks,
        consumers,
        batch,
        ..
    } = *d;
    let schema = crate::fresh_schema("drain");
    let config = PgConfig {
        schema: schema.clone(),
        pool_size: consumers + 4,
        claim,
        ..PgConfig::default()
    };
    let store = Arc::new(
        PgStore::connect(&crate::database_url(), config)
            .await
            .unwrap(),
    );
    let q = QueueName::new("drain").unwrap();
    let settings = QueueSettings {
        lease: Duration::from_secs(600),
        ..QueueSettings::default()
    };
    store.put_queue(&q, settings.into()).await.unwrap();
    let held = crate::hold(
        d,
        format!("SELECT state, count(*) FROM \"{schema}\".tasks GROUP BY state"),
    )
    .await;

    let started = Instant::now();
    let mut producers = tokio::task::JoinSet::new();
    for p in 0..4 {
        let (store, q) = (store.clone(), q.clone());
        producers.spawn(async move {
            for start in (p * 1000..tasks).step_by(4000) {
                let n = 1000.min(tasks - start);
                let batch = (0..n)
                    .map(|_| NewTask::new(Payload::binary(vec![7u8; 100])))
                    .collect();
                store.enqueue(&q, batch).await.unwrap();
            }
        });
    }
    producers.join_all().await;
    let fill = started.elapsed();

    let wal = crate::Wal::now().await;
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for c in 0..consumers {
        let (store, q, d) = (store.clone(), q.clone(), *d);
        workers.spawn(async move {
            let mut done = 0usize;
            while !d.past_limit(started) {
                let req = ClaimRequest::new(q.clone(), format!("consumer-{c}")).max(batch as u32);
                let got = store.claim(req).await.unwrap();
                if got.is_empty() {
                    return done;
                }
                let acks = got
                    .iter()
                    .map(|t| (t.id, t.lease.as_ref().unwrap().token))
                    .collect();
                let results = store.ack_many(acks).await.unwrap();
                assert!(results.iter().all(|r| r.is_ok()));
                done += got.len();
            }
            done
        });
    }
    let done: usize = workers.join_all().await.into_iter().sum();
    let drain = started.elapsed();
    let wal = crate::Wal::since(wal).await;
    held.release().await;
    assert!(done == tasks || d.past_limit(started));
    drop(store);
    crate::drop_schema(&schema).await;
    Drained {
        done,
        fill,
        drain,
        wal,
    }
}
