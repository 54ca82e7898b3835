//! The steady state while something holds the xmin horizon, side by side in
//! one run: Spool's store and a hand-written SKIP LOCKED queue, under the
//! same load generator.
//!
//! ```text
//! cargo run --release -p spool-bench --bin horizon -- \
//!     --holder writer --before 30 --hold 600 --after 60
//! ```
//! For each system, on a schema of its own: `--producers` (8) callers
//! enqueue one 100-byte task per call, as fast as they are answered, while
//! `--consumers` (8) claim up to `--batch` (100) at a time and ack them.
//! After `--before` seconds of baseline, the holder takes the horizon for
//! `--hold` seconds, then lets it go; `--after` seconds follow. Holders:
//! - `writer`: one session runs `BEGIN; SELECT txid_current();` and sits
//!   idle in that transaction;
//! - `readers`: four REPEATABLE READ sessions scan the system's tables,
//!   each in transactions of `--reader-txn` seconds (a scan every 200 ms),
//!   one after another, for the whole hold;
//! - `none`: nothing (the run is all baseline).
//!
//! Every `--every` seconds (5) a line: tasks completed and enqueued per
//! second, pickup p50/p99 (enqueue call to claim answer), the size of the
//! system's tables and of their indexes (every table of its schema) and
//! their dead tuples (`pg_stat_user_tables`). Then a summary per system:
//! the hold against the baseline (throughput ratio, pickup, median and
//! largest size over the baseline's largest) and how long after the
//! release size and pickup were back. Uses `DATABASE_URL` (default:
//! the local development server).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod handwritten;
mod meter;
mod spool;

use std::time::Duration;

use clap::Parser;
pub(crate) use spool_bench::db::{connect, database_url, fresh_schema};
use spool_bench::holder::{self, Holder};

use crate::meter::{Phase, Run};

/// The steady state under a held horizon, Spool beside hand-written SQL.
#[derive(Parser, Debug, Clone)]
pub(crate) struct Options {
    /// What holds the horizon.
    #[arg(long, value_enum, default_value = "writer")]
    pub(crate) holder: Holder,
    /// Seconds of baseline before the hold.
    #[arg(long, default_value_t = 30)]
    pub(crate) before: u64,
    /// Seconds the horizon is held.
    #[arg(long, default_value_t = 60)]
    pub(crate) hold: u64,
    /// Seconds after the hold ends.
    #[arg(long, default_value_t = 60)]
    pub(crate) after: u64,
    /// Callers enqueuing one task per call.
    #[arg(long, default_value_t = 8)]
    pub(crate) producers: usize,
    /// Claim loops.
    #[arg(long, default_value_t = 8)]
    pub(crate) consumers: usize,
    /// Most tasks one claim takes.
    #[arg(long, default_value_t = 100)]
    pub(crate) batch: u32,
    /// Length of each reader's REPEATABLE READ transaction, seconds.
    #[arg(long, default_value_t = 10)]
    pub(crate) reader_txn: u64,
    /// Seconds between samples.
    #[arg(long, default_value_t = 5)]
    pub(crate) every: u64,
    /// Spool's `rotate_interval`, ms (its default when absent).
    #[arg(long)]
    pub(crate) rotate_ms: Option<u64>,
    /// Spool's `rotate_size`, bytes (its default when absent).
    #[arg(long)]
    pub(crate) rotate_size: Option<u64>,
    /// Which systems, in order.
    #[arg(long, value_delimiter = ',', default_value = "spool,handwritten")]
    pub(crate) systems: Vec<String>,
}

#[tokio::main]
async fn main() {
    let o = Options::parse();
    println!(
        "{} producers (one task per call) + {} consumers (claim up to {} + ack); \
         holder {:?} for {} s after {} s, {} s after",
        o.producers, o.consumers, o.batch, o.holder, o.hold, o.before, o.after
    );
    let mut summaries = Vec::new();
    for system in &o.systems {
        let run = match system.as_str() {
            "spool" => spool::run(&o).await,
            "handwritten" => handwritten::run(&o).await,
            other => panic!("unknown system {other:?}: spool or handwritten"),
        };
        summaries.push((system.clone(), run));
    }
    println!();
    println!("{}", meter::SUMMARY_HEAD);
    for (system, run) in &summaries {
        println!(
            "| {system} | {} |",
            run.summary(Duration::from_secs(o.every))
        );
    }
}

/// Samples one system through its phases while its producers and
/// consumers run (they stop once `run` says so); `scan` is the readers'
/// query over its tables.
pub(crate) async fn phases(o: &Options, schema: &str, scan: &str, run: &Run) {
    let every = Duration::from_secs(o.every);
    run.sample_for(Phase::Before, Duration::from_secs(o.before), every, schema)
        .await;
    let held = holder::start(o.holder, scan.to_string(), o.reader_txn).await;
    run.sample_for(Phase::Held, Duration::from_secs(o.hold), every, schema)
        .await;
    held.release().await;
    run.sample_for(Phase::After, Duration::from_secs(o.after), every, schema)
        .await;
    run.stop();
}
