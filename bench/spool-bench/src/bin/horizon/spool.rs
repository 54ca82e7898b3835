//! Spool's store under the load: single-task `enqueue`s, and claims (long
//! poll) followed by `ack_many`.

use std::time::Duration;

use spool_bench::db::drop_schema;
use spool_core::{ClaimRequest, NewTask, Payload, Store};
use spool_postgres::PgConfig;

use crate::meter::Run;
use crate::Options;

pub(crate) async fn run(o: &Options) -> Run {
    let schema = crate::fresh_schema("horizon");
    println!("spool (schema {schema})");
    let mut config = PgConfig {
        schema: schema.clone(),
        pool_size: o.producers + o.consumers + 4,
        ..PgConfig::default()
    };
    if let Some(ms) = o.rotate_ms {
        config.rotate_interval = Duration::from_millis(ms);
    }
    if let Some(bytes) = o.rotate_size {
        config.rotate_size = bytes;
    }
    let (store, q) = spool_bench::store::open(config, "horizon").await;

    let run = Run::new();
    let mut load = tokio::task::JoinSet::new();
    for _ in 0..o.producers {
        let (store, q, run) = (store.clone(), q.clone(), run.clone());
        load.spawn(async move {
            while !run.stopped() {
                let task = NewTask::new(Payload::binary(run.payload()));
                store.enqueue(&q, vec![task]).await.unwrap();
                run.enqueued(1);
            }
        });
    }
    for c in 0..o.consumers {
        let (store, q, run, batch) = (store.clone(), q.clone(), run.clone(), o.batch);
        load.spawn(async move {
            while !run.stopped() {
                let req = ClaimRequest::new(q.clone(), format!("consumer-{c}"))
                    .max(batch)
                    .wait(Duration::from_millis(500));
                let got = store.claim(req).await.unwrap();
                if got.is_empty() {
                    continue;
                }
                for t in &got {
                    run.picked_up(&t.payload.bytes);
                }
                spool_bench::store::ack_claimed(&store, &got).await;
                run.completed(got.len() as u64);
            }
        });
    }
    let scan = format!("SELECT state, count(*) FROM \"{schema}\".tasks GROUP BY state");
    crate::phases(o, &schema, &scan, &run).await;
    load.join_all().await;
    drop(store);
    drop_schema(&crate::database_url(), &schema).await;
    run
}
