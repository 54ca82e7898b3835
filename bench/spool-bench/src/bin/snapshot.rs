//! What a REPEATABLE READ transaction held open for a minute does to a
//! steadily loaded queue: throughput, claim latency and dead tuples of the
//! tasks table before, during and after.
//!
//! ```text
//! cargo run --release -p spool-bench --bin snapshot -- [RATE] [HOLD_S] [WARMUP_S] [HOLDER]
//! ```
//! HOLDER: `rr` (default), a REPEATABLE READ snapshot; `xid`, a transaction
//! that took an XID (`SELECT txid_current()`) and sits idle.
//! Defaults: 10,000 tasks/s offered (2 producers, batches of 100), 2
//! consumers (claim 100 + `ack_many`), the snapshot held 60 s after 20 s of
//! warm-up, then 30 s more. Every 5 s it VACUUMs the tasks table itself
//! (what a well-tuned autovacuum would do, and independent of whether the
//! server runs one) and then reads `n_dead_tup`: the dead tuples that
//! vacuum could not remove. Without truncation: truncating the table's
//! empty tail takes an ACCESS EXCLUSIVE lock, which stalled the claims for
//! seconds. Sizes are the task table's, every partition with its indexes,
//! and its `tasks_ready` indexes'. Prints one line every 5 s. Uses `DATABASE_URL`
//! and a schema of its own, dropped at the end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use spool_bench::db::{connect_to, database_url, drop_schema, fresh_schema};
use spool_core::{ClaimRequest, NewTask, Payload, QueueName, QueueSettings, Store};
use spool_postgres::{PgConfig, PgStore};

const WINDOW: Duration = Duration::from_secs(5);
const AFTER: Duration = Duration::from_secs(30);

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rate: u64 = args.next().map_or(10_000, |a| a.parse().expect("RATE"));
    let hold = Duration::from_secs(args.next().map_or(60, |a| a.parse().expect("HOLD_S")));
    let warmup = Duration::from_secs(args.next().map_or(20, |a| a.parse().expect("WARMUP_S")));
    let begin = match args.next().as_deref() {
        None | Some("rr") => "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pg_class",
        Some("xid") => "BEGIN; SELECT txid_current()",
        Some(other) => panic!("HOLDER is rr or xid, not {other:?}"),
    };
    let url = database_url();
    let schema = fresh_schema("snapshot");
    let config = PgConfig {
        schema: schema.clone(),
        pool_size: 8,
        ..PgConfig::default()
    };
    let store = Arc::new(PgStore::connect(&url, config).await.unwrap());
    let q = QueueName::new("steady").unwrap();
    store
        .put_queue(&q, QueueSettings::default().into())
        .await
        .unwrap();

    let enqueued = Arc::new(AtomicU64::new(0));
    let acked = Arc::new(AtomicU64::new(0));
    let claim_ms = Arc::new(Mutex::new(Vec::<f64>::new()));
    let total = warmup + hold + AFTER;
    let started = Instant::now();
    let mut load = tokio::task::JoinSet::new();
    for _ in 0..2 {
        let (store, q, enqueued) = (store.clone(), q.clone(), enqueued.clone());
        // Each producer offers half the rate, 100 tasks per batch.
        let every = Duration::from_secs_f64(200.0 / rate as f64);
        load.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            while started.elapsed() < total {
                tick.tick().await;
                let batch = (0..100)
                    .map(|_| NewTask::new(Payload::binary(vec![7u8; 100])))
                    .collect();
                store.enqueue(&q, batch).await.unwrap();
                enqueued.fetch_add(100, Ordering::Relaxed);
            }
        });
    }
    for c in 0..2 {
        let (store, q, acked, claim_ms) =
            (store.clone(), q.clone(), acked.clone(), claim_ms.clone());
        load.spawn(async move {
            while started.elapsed() < total {
                let req = ClaimRequest::new(q.clone(), format!("c{c}"))
                    .max(100)
                    .wait(Duration::from_millis(100));
                let t = Instant::now();
                let got = store.claim(req).await.unwrap();
                if got.is_empty() {
                    continue;
                }
                claim_ms
                    .lock()
                    .unwrap()
                    .push(t.elapsed().as_secs_f64() * 1e3);
                let acks = got
                    .iter()
                    .map(|t| (t.id, t.lease.as_ref().unwrap().token))
                    .collect();
                store.ack_many(acks).await.unwrap();
                acked.fetch_add(got.len() as u64, Ordering::Relaxed);
            }
        });
    }

    let holder = connect_to(&url).await;
    let stats = connect_to(&url).await;
    let vacuum_sql = format!("VACUUM (TRUNCATE false) \"{schema}\".tasks");
    // Every partition of the task table (migration 6), with its indexes.
    let stats_sql = "SELECT coalesce(sum(n_dead_tup), 0)::bigint, \
            coalesce(sum(n_live_tup), 0)::bigint, coalesce(sum(vacuum_count), 0)::bigint, \
            coalesce(sum(pg_total_relation_size(relid)), 0)::bigint, \
            (SELECT coalesce(sum(pg_relation_size(h.inhrelid)), 0)::bigint FROM pg_inherits h \
             WHERE h.inhparent = format('%I.tasks_ready', $1::text)::regclass) \
        FROM pg_stat_user_tables WHERE schemaname = $1 AND relname LIKE 'tasks\\_%'";
    println!("| t s | phase | enqueued/s | acked/s | claim p50 ms | claim p99 ms | backlog | vacuum ms | n_dead_tup after it | tasks + indexes MB | tasks_ready MB |");
    println!("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    let (mut last_e, mut last_a, mut last_at) = (0, 0, Duration::ZERO);
    let mut phase = "before";
    while started.elapsed() < total {
        tokio::time::sleep(WINDOW).await;
        let at = started.elapsed();
        if phase == "before" && at >= warmup {
            holder.batch_execute(begin).await.unwrap();
            phase = "during";
        } else if phase == "during" && at >= warmup + hold {
            holder.batch_execute("COMMIT").await.unwrap();
            phase = "after";
        }
        let (e, a) = (
            enqueued.load(Ordering::Relaxed),
            acked.load(Ordering::Relaxed),
        );
        let mut lat = std::mem::take(&mut *claim_ms.lock().unwrap());
        lat.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
                .copied()
                .unwrap_or(0.0)
        };
        let vacuumed = Instant::now();
        stats.batch_execute(&vacuum_sql).await.unwrap();
        let vacuum_ms = vacuumed.elapsed().as_millis();
        // The statistics collector reports a little later than the vacuum.
        tokio::time::sleep(Duration::from_millis(600)).await;
        let row = stats.query_one(stats_sql, &[&schema]).await.unwrap();
        let (dead, _live, _vacuums, size, ready): (i64, i64, i64, i64, i64) =
            (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4));
        let secs = (at - last_at).as_secs_f64();
        println!(
            "| {:.0} | {phase} | {:.0} | {:.0} | {:.1} | {:.1} | {} | {vacuum_ms} | {dead} | {:.1} | {:.1} |",
            at.as_secs_f64(),
            (e - last_e) as f64 / secs,
            (a - last_a) as f64 / secs,
            pct(0.5),
            pct(0.99),
            e - a,
            size as f64 / 1e6,
            ready as f64 / 1e6,
        );
        (last_e, last_a, last_at) = (e, a, at);
    }
    load.join_all().await;
    drop(holder);
    drop(store);
    drop_schema(&url, &schema).await;
}
