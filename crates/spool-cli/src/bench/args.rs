//! `spool bench`'s options and the workloads it can run.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

/// The long `--help` text of `spool bench`.
pub(crate) const ABOUT: &str = "\
Runs load against a store and reports throughput and latency percentiles
(p50, p99, p99.9, max) as a table, and with --json FILE as JSON together with
the exact parameters and notes on the machine.

The store is the embedded engine, in this process, with its real durable
settings: every acknowledged call waited for fdatasync of the log. By default
it lives in a fresh temporary directory, deleted afterwards; --data DIR keeps
it (each run uses queues of its own there). --url URL measures a running
server over HTTP instead, and --postgres URL the PostgreSQL store in this
process.

Workloads (--workload; `all` runs them in this order):

  enqueue-batch   PRODUCERS callers enqueue batches of BATCH tasks until TASKS
                  are in: throughput, and latency per call.
  enqueue-single  CONCURRENCY callers enqueue one task per call until TASKS
                  are in: throughput, and latency per call.
  cycle           PRODUCERS enqueue batches while CONSUMERS claim up to
                  CLAIM_BATCH tasks (long poll) and ack them with one ack_many:
                  end-to-end tasks/s, and pickup latency (enqueue call to
                  claim returned).
  pickup          one consumer long-polls an empty queue while a producer
                  enqueues one task every PICKUP_INTERVAL_MS: latency from the
                  enqueue's acknowledgement to the claim returning the task.

Each workload stops after MAX_SECONDS and reports what it did. After each,
the tasks it left are claimed and acked, untimed, so that every workload
starts from an empty store. The report also gives the CPU each workload used:
the whole machine's, this process's, and its threads' (the engine's core and
log threads, the async workers), to tell a CPU limit from waiting.";

/// Examples shown at the end of `spool bench --help`.
pub(crate) const EXAMPLES: &str = "\
Examples:
  spool bench
  spool bench --workload cycle --tasks 500000 --consumers 2
  spool bench --workload all --data ./bench-data --json bench.json";

/// Options of `spool bench` (see [`ABOUT`]).
#[derive(Debug, Clone, Args, Serialize)]
pub(crate) struct BenchArgs {
    /// The workload to run.
    #[arg(long, value_enum, default_value_t = WorkloadChoice::All)]
    pub workload: WorkloadChoice,

    /// Benchmark a running Spool server at this URL instead of the embedded
    /// engine (token from SPOOL_TOKEN).
    #[arg(long, value_name = "URL", conflicts_with = "data")]
    pub url: Option<String>,

    /// Benchmark the PostgreSQL store at this URL, in this process, instead
    /// of the embedded engine (e.g. postgres://postgres@127.0.0.1/test).
    #[arg(long, value_name = "URL", conflicts_with_all = ["url", "data"])]
    pub postgres: Option<String>,

    /// Schema of the PostgreSQL store under --postgres (created if missing).
    #[arg(long, value_name = "NAME", default_value = "spool_bench")]
    pub pg_schema: String,

    /// Data directory of the embedded engine, created if missing and kept
    /// afterwards. Without it, a temporary directory is used and deleted.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// Tasks per throughput workload [default: 2000000 for enqueue-batch
    /// and cycle, 300000 for enqueue-single]. The pickup workload counts
    /// samples instead (--pickup-samples).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub tasks: Option<u64>,

    /// Size of each task's payload in bytes (at least 8: cycle stamps the
    /// enqueue time into the first 8).
    #[arg(long, value_name = "BYTES", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(8..=1_048_576))]
    pub payload_bytes: u32,

    /// Concurrent producers in enqueue-batch and cycle.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub producers: u32,

    /// Tasks per enqueue call in enqueue-batch and cycle (at most 10000).
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub batch: u32,

    /// Concurrent callers in enqueue-single.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=65_536))]
    pub concurrency: u32,

    /// Concurrent consumers in cycle.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub consumers: u32,

    /// Most tasks per claim in cycle (at most 1000).
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub claim_batch: u32,

    /// Latency samples the pickup workload takes.
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub pickup_samples: u64,

    /// Pause between the pickup workload's enqueues, in milliseconds, so
    /// that each task arrives at an idle, long-polling consumer.
    #[arg(long, value_name = "MS", default_value_t = 2)]
    pub pickup_interval_ms: u64,

    /// Time limit of each workload in seconds; a workload that reaches it
    /// stops and reports what it did.
    #[arg(long, value_name = "SECS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_seconds: u64,

    /// Also write the results, parameters and machine notes as JSON here.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Log segment size in bytes (small values make many segments; tests).
    #[arg(long, value_name = "BYTES", hide = true)]
    pub segment_size: Option<u64>,
}

/// What `--workload` accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum WorkloadChoice {
    All,
    EnqueueBatch,
    EnqueueSingle,
    Cycle,
    Pickup,
}

/// One workload to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workload {
    EnqueueBatch,
    EnqueueSingle,
    Cycle,
    Pickup,
}

impl WorkloadChoice {
    /// The workloads to run, in order.
    pub(crate) fn workloads(self) -> Vec<Workload> {
        match self {
            WorkloadChoice::All => vec![
                Workload::EnqueueBatch,
                Workload::EnqueueSingle,
                Workload::Cycle,
                Workload::Pickup,
            ],
            WorkloadChoice::EnqueueBatch => vec![Workload::EnqueueBatch],
            WorkloadChoice::EnqueueSingle => vec![Workload::EnqueueSingle],
            WorkloadChoice::Cycle => vec![Workload::Cycle],
            WorkloadChoice::Pickup => vec![Workload::Pickup],
        }
    }
}

impl Workload {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::EnqueueBatch => "enqueue-batch",
            Workload::EnqueueSingle => "enqueue-single",
            Workload::Cycle => "cycle",
            Workload::Pickup => "pickup",
        }
    }
}

impl BenchArgs {
    /// How many tasks (or, for pickup, samples) `workload` runs.
    pub(crate) fn count(&self, workload: Workload) -> u64 {
        match workload {
            Workload::EnqueueBatch | Workload::Cycle => self.tasks.unwrap_or(2_000_000),
            Workload::EnqueueSingle => self.tasks.unwrap_or(300_000),
            Workload::Pickup => self.pickup_samples,
        }
    }
}
