//! The baseline: a hand-written SKIP LOCKED queue, two transactions per
//! batch (lease the batch; delete it when done), as docs/spec.md §11's
//! "PostgreSQL 15, hand-written SQL" row. Same payloads, same batches,
//! same durability (`synchronous_commit = on`), prepared statements.

use std::sync::Arc;
use std::time::Instant;

use spool_bench::handwritten::{session, ACK, CLAIM, SCHEMA};

use crate::{Drain, Drained, FILLERS};

const FILL: &str = "INSERT INTO {s}.jobs (queue, payload) \
    SELECT 'drain', $1::bytea FROM generate_series(1, $2::int)";

pub(crate) async fn drain(d: &Drain) -> Drained {
    let Drain {
        consumers, batch, ..
    } = *d;
    let schema = crate::fresh_schema("baseline");
    let s = format!("\"{schema}\"");
    let setup = crate::connect().await;
    setup
        .batch_execute(&format!("CREATE SCHEMA {s};{}", SCHEMA.replace("{s}", &s)))
        .await
        .unwrap();
    let held = crate::hold(
        d,
        format!("SELECT count(*), count(locked_by) FROM {s}.jobs"),
    )
    .await;

    let empty = crate::empty_sizes(&schema).await;
    let started = Instant::now();
    let mut producers = tokio::task::JoinSet::new();
    for p in 0..FILLERS {
        let (fill, d) = (FILL.replace("{s}", &s), *d);
        let client = session().await;
        producers.spawn(async move {
            for n in d.fill_batches(p) {
                let n = n as i32;
                client.execute(&fill, &[&vec![7u8; 100], &n]).await.unwrap();
            }
        });
    }
    producers.join_all().await;
    let fill = started.elapsed();

    let wal = crate::Wal::now().await;
    let watch = crate::watch(&schema).await;
    let started = Instant::now();
    let claim = Arc::new(CLAIM.replace("{s}", &s));
    let ack = Arc::new(ACK.replace("{s}", &s));
    let mut workers = tokio::task::JoinSet::new();
    for c in 0..consumers {
        let client = session().await;
        let (claim, ack, d) = (claim.clone(), ack.clone(), *d);
        workers.spawn(async move {
            let claim = client.prepare(&claim).await.unwrap();
            let ack = client.prepare(&ack).await.unwrap();
            let worker = format!("consumer-{c}");
            let limit = batch as i64;
            let mut done = 0usize;
            let mut claims = crate::claim_histogram();
            while !d.past_limit(started) {
                let began = Instant::now();
                let rows = client
                    .query(&claim, &[&"drain", &worker, &limit])
                    .await
                    .unwrap();
                crate::claimed(&mut claims, began);
                if rows.is_empty() {
                    return (done, claims);
                }
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                let gone = client.execute(&ack, &[&ids, &worker]).await.unwrap();
                assert_eq!(gone as usize, ids.len());
                done += ids.len();
            }
            (done, claims)
        });
    }
    let drained = d
        .finish(&schema, empty, fill, workers, started, wal, watch, held)
        .await;
    drop(setup);
    crate::drop_schema(&schema).await;
    drained
}
