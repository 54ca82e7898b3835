//! The drain through Spool: `enqueue` batches, then `claim` + `ack_many`.

use std::time::Instant;

use spool_core::{ClaimRequest, NewTask, Payload, Store};
use spool_postgres::{ClaimStrategy, PgConfig};

use crate::{Drain, Drained, FILLERS};

pub(crate) async fn drain(d: &Drain, claim: ClaimStrategy) -> Drained {
    let Drain {
        consumers, batch, ..
    } = *d;
    let schema = crate::fresh_schema("drain");
    let config = PgConfig {
        schema: schema.clone(),
        pool_size: consumers + 4,
        claim,
        ..PgConfig::default()
    };
    let (store, q) = spool_bench::store::open(config, "drain").await;
    let held = crate::hold(
        d,
        format!("SELECT state, count(*) FROM \"{schema}\".tasks GROUP BY state"),
    )
    .await;

    let empty = crate::empty_sizes(&schema).await;
    let started = Instant::now();
    let mut producers = tokio::task::JoinSet::new();
    for p in 0..FILLERS {
        let (store, q, d) = (store.clone(), q.clone(), *d);
        producers.spawn(async move {
            for n in d.fill_batches(p) {
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
    let watch = crate::watch(&schema).await;
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for c in 0..consumers {
        let (store, q, d) = (store.clone(), q.clone(), *d);
        workers.spawn(async move {
            let mut done = 0usize;
            let mut claims = crate::claim_histogram();
            while !d.past_limit(started) {
                let began = Instant::now();
                let req = ClaimRequest::new(q.clone(), format!("consumer-{c}")).max(batch as u32);
                let got = store.claim(req).await.unwrap();
                crate::claimed(&mut claims, began);
                if got.is_empty() {
                    return (done, claims);
                }
                spool_bench::store::ack_claimed(&store, &got).await;
                done += got.len();
            }
            (done, claims)
        });
    }
    let drained = d
        .finish(&schema, empty, fill, workers, started, wal, watch, held)
        .await;
    drop(store);
    crate::drop_schema(&schema).await;
    drained
}
