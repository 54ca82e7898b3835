//! Measures drains, side by side in one run: Spool with each claim
//! strategy, and a hand-written two-transaction SKIP LOCKED queue (docs/spec.md
//! §11's baseline), at each number of consumers.
//!
//! ```text
//! cargo run --release -p spool-bench --bin drain -- [TASKS] [CONSUMERS,..] [BATCH] [HOLDER] [LIMIT_S]
//! ```
//! Defaults: 200,000 tasks, consumers 1,4,16, batches of 1,000; 100-byte
//! payloads. Each row fills the queue (4 producers, batches of 1,000), then
//! the consumers loop claim BATCH + ack the batch until it is empty. Each
//! figure comes with the WAL the drain wrote per task; a second table
//! gives each drain's claim calls (p50/p99 of their round trips), the
//! largest size of the system's tables and of their indexes and the most
//! dead tuples read during the drain (every second), and how long after
//! the release the tables were back near their size before the fill
//! (within twice it, or 1 MB above it; read every second, for at most
//! 60 s). HOLDER (`none`,
//! `writer` or `readers`, as in the `horizon` benchmark) holds the xmin
//! horizon from before each fill to the end of its drain; a drain still
//! running after LIMIT_S seconds stops there and reports what it did. Uses
//! `DATABASE_URL` (default: the local development server) and schemas of
//! its own, dropped at the end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod baseline;
mod spool;

use std::time::{Duration, Instant};

use clap::ValueEnum;
use hdrhistogram::Histogram;
pub(crate) use spool_bench::db::{connect, database_url, fresh_schema};
use spool_bench::holder::{self, Holder};
use spool_bench::tables::{self, Sizes, Watch};

/// How a drain is run: how many, how, and under what.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Drain {
    /// Tasks filled into the queue before the drain starts.
    pub(crate) tasks: usize,
    /// Consumers claiming and acking concurrently.
    pub(crate) consumers: usize,
    /// Tasks asked for per claim (and acked per ack).
    pub(crate) batch: usize,
    /// What holds the xmin horizon from before the fill to the end of the
    /// drain.
    pub(crate) holder: Holder,
    /// A drain still running after this stops.
    pub(crate) limit: Duration,
}

/// Producers filling the queue, taking batches of [`FILL_BATCH`] in turn.
pub(crate) const FILLERS: usize = 4;
/// Tasks per batch of the fill.
const FILL_BATCH: usize = 1000;

impl Drain {
    /// Whether consumers that started at `started` should stop now.
    pub(crate) fn past_limit(&self, started: Instant) -> bool {
        started.elapsed() > self.limit
    }

    /// The sizes of the batches producer `p` of [`FILLERS`] enqueues.
    pub(crate) fn fill_batches(&self, p: usize) -> impl Iterator<Item = usize> {
        let tasks = self.tasks;
        (p * FILL_BATCH..tasks)
            .step_by(FILLERS * FILL_BATCH)
            .map(move |start| FILL_BATCH.min(tasks - start))
    }

    /// Waits for the consumers of a drain that started at `started`, the
    /// WAL then at `wal` and `watch` reading `schema` (each consumer
    /// answers how many tasks it did and how long its claims took), then
    /// lets the horizon go and waits for the tables to be back within
    /// reach of `empty`, their size before the fill.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn finish(
        &self,
        schema: &str,
        empty: Sizes,
        fill: Duration,
        consumers: tokio::task::JoinSet<(usize, Histogram<u64>)>,
        started: Instant,
        wal: Wal,
        watch: Watch,
        held: holder::Held,
    ) -> Drained {
        let mut done = 0;
        let mut claims = claim_histogram();
        for (n, h) in consumers.join_all().await {
            done += n;
            claims.add(h).unwrap();
        }
        let drain = started.elapsed();
        let wal = Wal::since(wal).await;
        let peak = watch.stop().await;
        held.release().await;
        let within = (2 * empty.total()).max(empty.total() + 1_000_000);
        let back = tables::back_within(schema, within, BACK_LIMIT).await;
        assert!(done == self.tasks || self.past_limit(started));
        Drained {
            done,
            fill,
            drain,
            wal,
            claims,
            peak,
            back,
        }
    }
}

/// How long a drain's tables are watched after the release.
const BACK_LIMIT: Duration = Duration::from_secs(60);

/// A histogram of claim round trips, µs (1 µs to 10 min).
pub(crate) fn claim_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap()
}

/// Records one claim call that began at `began`.
pub(crate) fn claimed(claims: &mut Histogram<u64>, began: Instant) {
    claims.saturating_record(began.elapsed().as_micros().max(1) as u64);
}

/// Reads a fresh schema's tables, before the fill.
pub(crate) async fn empty_sizes(schema: &str) -> Sizes {
    tables::read(&connect().await, schema).await
}

/// Starts reading `schema`'s tables every second for the drain.
pub(crate) async fn watch(schema: &str) -> Watch {
    Watch::start(schema, Duration::from_secs(1)).await
}

/// The REPEATABLE READ readers' transactions, seconds.
const READER_TXN: u64 = 10;

/// Holds the horizon for a drain as `drain.holder` says; `scan` reads the
/// system's tables.
pub(crate) async fn hold(drain: &Drain, scan: String) -> holder::Held {
    holder::start(drain.holder, scan, READER_TXN).await
}

/// What one drain measured.
#[derive(Debug)]
pub(crate) struct Drained {
    /// Tasks drained: all of them, unless the limit stopped the drain.
    pub(crate) done: usize,
    /// How long filling the queue took.
    pub(crate) fill: Duration,
    /// How long the drain took, to its end or the limit.
    pub(crate) drain: Duration,
    /// WAL the whole cluster wrote during the drain (on a quiet machine,
    /// the drain's own).
    pub(crate) wal: Wal,
    /// Every claim call's round trip, µs.
    pub(crate) claims: Histogram<u64>,
    /// The largest figures read of the tables during the drain.
    pub(crate) peak: Sizes,
    /// How long after the release the tables were back near their size
    /// before the fill; `None` if not within [`BACK_LIMIT`].
    pub(crate) back: Option<Duration>,
}

impl Drained {
    /// The drain's row of the second table, after its system's name.
    fn details(&self) -> String {
        let q = |q: f64| self.claims.value_at_quantile(q) as f64 / 1000.0;
        let back = self.back.map_or_else(
            || format!("not within {} s", BACK_LIMIT.as_secs()),
            |b| format!("{:.0} s", b.as_secs_f64()),
        );
        format!(
            "{:.0} | {:.1} / {:.1} ms | {} | {} | {back}",
            self.done as f64 / self.drain.as_secs_f64(),
            q(0.5),
            q(0.99),
            self.peak.cell(),
            self.peak.dead,
        )
    }
}

/// WAL position in bytes (`pg_current_wal_lsn`), or the WAL written
/// between two readings. The position, not `pg_stat_wal`: backends flush
/// those counters lazily (at most once a second, later when idle), so a
/// store whose connections stay open would be read short.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Wal {
    /// Bytes: a position, or the difference of two.
    pub(crate) bytes: f64,
}

impl Wal {
    /// The cluster's WAL position now.
    pub(crate) async fn now() -> Wal {
        let row = connect()
            .await
            .query_one(
                "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::float8",
                &[],
            )
            .await
            .unwrap();
        Wal { bytes: row.get(0) }
    }

    /// The WAL written since `start` was read.
    pub(crate) async fn since(start: Wal) -> Wal {
        Wal {
            bytes: Wal::now().await.bytes - start.bytes,
        }
    }
}

/// Drops a schema a drain made, with everything in it.
pub(crate) async fn drop_schema(schema: &str) {
    spool_bench::db::drop_schema(&database_url(), schema).await;
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let tasks: usize = args.next().map_or(200_000, |a| a.parse().expect("TASKS"));
    let consumers: Vec<usize> = args.next().map_or(vec![1, 4, 16], |a| {
        a.split(',')
            .map(|c| c.parse().expect("CONSUMERS"))
            .collect()
    });
    let batch: usize = args.next().map_or(1000, |a| a.parse().expect("BATCH"));
    let holder = args.next().map_or(Holder::None, |a| {
        Holder::from_str(&a, true).expect("HOLDER")
    });
    let limit = Duration::from_secs(
        args.next()
            .map_or(u64::MAX / 4, |a| a.parse().expect("LIMIT_S")),
    );
    println!("{tasks} tasks, batches of {batch}, horizon held by {holder:?}; tasks/s");
    println!("| consumers | Spool, SkipLocked | Spool, GlobalLock | hand-written SQL |");
    println!("| ---: | ---: | ---: | ---: |");
    let mut details = Vec::new();
    for &n in &consumers {
        let drain = Drain {
            tasks,
            consumers: n,
            batch,
            holder,
            limit,
        };
        let rate = |d: Drained| {
            let unfinished = if d.done < tasks {
                format!(", stopped at {} of {tasks}", d.done)
            } else {
                String::new()
            };
            format!(
                "{:.0} ({:.0} B WAL/task{unfinished})",
                d.done as f64 / d.drain.as_secs_f64(),
                d.wal.bytes / d.done.max(1) as f64,
            )
        };
        let skip = spool::drain(&drain, spool_postgres::ClaimStrategy::SkipLocked).await;
        let global = spool::drain(&drain, spool_postgres::ClaimStrategy::GlobalLock).await;
        let raw = baseline::drain(&drain).await;
        for (system, d) in [
            ("Spool, SkipLocked", &skip),
            ("Spool, GlobalLock", &global),
            ("hand-written SQL", &raw),
        ] {
            details.push(format!("| {n} | {system} | {} |", d.details()));
        }
        eprintln!(
            "fills: {:.2?} {:.2?} {:.2?}",
            skip.fill, global.fill, raw.fill
        );
        println!(
            "| {n} | {} | {} | {} |",
            rate(skip),
            rate(global),
            rate(raw)
        );
    }
    println!();
    println!("| consumers | system | tasks/s | claim p50 / p99 | table + index, largest | dead tuples, most | back after release |");
    println!("| ---: | --- | ---: | ---: | ---: | ---: | --- |");
    for row in details {
        println!("{row}");
    }
}
