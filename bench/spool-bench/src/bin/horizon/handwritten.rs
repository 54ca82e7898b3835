//! The hand-written SKIP LOCKED queue under the same load (docs/spec.md
//! §11's "PostgreSQL 15, hand-written SQL" row): one INSERT per task; a
//! consumer leases a batch in one transaction and deletes it in a second,
//! and polls every 5 ms while the queue is empty (it has no wake-ups).
//! Same payloads, same durability (`synchronous_commit = on`), prepared
//! statements, a connection per producer and consumer.

use std::time::Duration;

use spool_bench::db::drop_schema;
use spool_bench::handwritten::{session, ACK, CLAIM, SCHEMA};

use crate::meter::Run;
use crate::Options;

const QUEUE: &str = "horizon";
const ENQUEUE: &str = "INSERT INTO {s}.jobs (queue, payload) VALUES ('horizon', $1)";

pub(crate) async fn run(o: &Options) -> Run {
    let schema = crate::fresh_schema("handwritten");
    println!("hand-written SKIP LOCKED queue (schema {schema})");
    let s = format!("\"{schema}\"");
    crate::connect()
        .await
        .batch_execute(&format!("CREATE SCHEMA {s};{}", SCHEMA.replace("{s}", &s)))
        .await
        .unwrap();

    let run = Run::new();
    let mut load = tokio::task::JoinSet::new();
    for _ in 0..o.producers {
        let (sql, run) = (ENQUEUE.replace("{s}", &s), run.clone());
        let c = session().await;
        load.spawn(async move {
            let enqueue = c.prepare(&sql).await.unwrap();
            while !run.stopped() {
                c.execute(&enqueue, &[&run.payload()]).await.unwrap();
                run.enqueued(1);
            }
        });
    }
    for n in 0..o.consumers {
        let (claim, ack, run) = (
            CLAIM.replace("{s}", &s),
            ACK.replace("{s}", &s),
            run.clone(),
        );
        let limit = i64::from(o.batch);
        let c = session().await;
        load.spawn(async move {
            let claim = c.prepare(&claim).await.unwrap();
            let ack = c.prepare(&ack).await.unwrap();
            let worker = format!("consumer-{n}");
            while !run.stopped() {
                let rows = c.query(&claim, &[&QUEUE, &worker, &limit]).await.unwrap();
                if rows.is_empty() {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                for r in &rows {
                    run.picked_up(r.get::<_, &[u8]>(1));
                }
                let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
                let gone = c.execute(&ack, &[&ids, &worker]).await.unwrap();
                assert_eq!(gone as usize, ids.len());
                run.completed(gone);
            }
        });
    }
    let scan = format!("SELECT count(*), count(locked_by) FROM {s}.jobs");
    crate::phases(o, &schema, &scan, &run).await;
    load.join_all().await;
    drop_schema(&crate::database_url(), &schema).await;
    run
}
