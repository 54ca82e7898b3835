//! Where the systems under test live, and the sizes of every workload.
//! Every default is what `bench/run.sh` uses on the development machine.

use std::path::PathBuf;

use clap::Parser;

#[derive(Parser, Debug, Clone)]
#[command(
    about = "Runs the same workloads against Spool and its peers, in one run, \
and writes a JSON file of every figure."
)]
pub struct Config {
    /// Systems to run, comma separated, in this order.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "spool-embedded,spool-server,spool-resp,spool-postgres,pg-skip-locked,redis,rabbitmq-classic,rabbitmq-quorum,nats-jetstream,graphile-worker,apalis-postgres"
    )]
    pub systems: Vec<String>,

    /// Workloads to run, comma separated: single, batch-drain, steady, big.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "single,batch-drain,steady,big"
    )]
    pub workloads: Vec<String>,

    /// Concurrent clients for single enqueues.
    #[arg(long, value_delimiter = ',', default_value = "1,16,256")]
    pub clients: Vec<usize>,

    /// Seconds each single-enqueue measurement runs.
    #[arg(long, default_value_t = 5)]
    pub single_secs: u64,

    /// Payload size in bytes for the main workloads.
    #[arg(long, default_value_t = 100)]
    pub payload: usize,

    /// Tasks pre-filled (batched enqueue) and then drained.
    #[arg(long, default_value_t = 1_000_000)]
    pub fill: u64,

    /// Tasks per batched enqueue call.
    #[arg(long, default_value_t = 1000)]
    pub batch: usize,

    /// Concurrent producers of the batched fill.
    #[arg(long, default_value_t = 4)]
    pub fill_producers: usize,

    /// Concurrent consumers of the drain and the steady state.
    #[arg(long, default_value_t = 16)]
    pub consumers: usize,

    /// Most tasks a consumer takes at once (claim batch, prefetch, fetch).
    #[arg(long, default_value_t = 100)]
    pub claim_batch: usize,

    /// Longest a fill or a drain may run before it is cut short (the
    /// report then shows the rate reached and says so).
    #[arg(long, default_value_t = 120)]
    pub max_secs: u64,

    /// Offered rate of the steady state, tasks per second.
    #[arg(long, default_value_t = 2000)]
    pub steady_rate: u64,

    /// Producers sharing the steady offered rate.
    #[arg(long, default_value_t = 16)]
    pub steady_clients: usize,

    /// Seconds the steady state runs.
    #[arg(long, default_value_t = 10)]
    pub steady_secs: u64,

    /// During `steady`, hold the xmin horizon on the PostgreSQL database
    /// for the systems that keep their tasks there: an idle writing
    /// transaction, or four REPEATABLE READ readers scanning the system's
    /// tables. The run then reports the phases before, during and after.
    /// During `batch-drain`, the horizon is held from before the fill to
    /// the end of the drain.
    #[arg(long, value_enum)]
    pub hold: Option<crate::hold::Hold>,

    /// Seconds of steady state before the hold begins.
    #[arg(long, default_value_t = 30)]
    pub hold_after: u64,

    /// Seconds the horizon is held; the steady state runs on to
    /// --steady-secs after it.
    #[arg(long, default_value_t = 120)]
    pub hold_for: u64,

    /// Length of each reader's REPEATABLE READ transaction, seconds.
    #[arg(long, default_value_t = 10)]
    pub reader_txn: u64,

    /// Seconds between samples of the tables during a hold.
    #[arg(long, default_value_t = 10)]
    pub sample_every: u64,

    /// Larger payloads run through the `big` workload.
    #[arg(long, value_delimiter = ',', default_value = "1024,65536")]
    pub big_payloads: Vec<usize>,

    /// Systems the `big` workload runs against.
    #[arg(long, value_delimiter = ',', default_value = "spool-server")]
    pub big_systems: Vec<String>,

    /// Bytes of payload the `big` workload fills per size at most.
    #[arg(long, default_value_t = 256 << 20)]
    pub big_fill_bytes: u64,

    /// PostgreSQL for Spool's store, the hand-written queue and the crates.
    #[arg(
        long,
        env = "DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    pub postgres: String,

    #[arg(long, default_value = "redis://127.0.0.1:6379/")]
    pub redis: String,

    #[arg(long, default_value = "amqp://guest:guest@127.0.0.1:5672/%2f")]
    pub amqp: String,

    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    pub nats: String,

    /// The `spool` binary that `spool-server` starts.
    #[arg(long, default_value = "target/release/spool")]
    pub spool_bin: PathBuf,

    /// Only rewrite the table and the chart from the JSON at --out.
    #[arg(long)]
    pub render_only: bool,

    /// Where the JSON of every figure goes.
    #[arg(long, default_value = "bench/results/compare.json")]
    pub out: PathBuf,
}
