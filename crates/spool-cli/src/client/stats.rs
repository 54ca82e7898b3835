//! `spool stats`: every queue with its counts per state, the age of its
//! oldest ready task and whether it is paused.

use clap::Args;
use spool_core::wire::CountsJson;
use spool_core::{QueueStats, Store};

use super::connect::ServerArgs;
use super::render;

/// The long `--help` text of `spool stats`.
pub(crate) const ABOUT: &str = "\
Shows every queue of the server: how many tasks are scheduled (waiting for
their run time), ready (claimable now), leased (being run by a worker),
dead (out of attempts; see `spool tasks QUEUE --state dead` and `spool
retry`) and pending (waiting for other tasks to end; see `spool tasks QUEUE
--state pending`), how long the oldest ready task has waited, and whether the queue is
paused. A growing OLDEST_READY means workers are not keeping up.";

/// Options of `spool stats` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct StatsArgs {
    /// Print JSON (counts per state and per kind) instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub(crate) fn run(args: StatsArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let queues = super::block_on(server.call(server.store.stats()))?;
    if args.json {
        let queues: Vec<_> = queues.iter().map(json).collect();
        return super::print_json(&serde_json::json!({ "queues": queues }));
    }
    if queues.is_empty() {
        return super::print("no queues yet: `spool enqueue QUEUE` creates one\n");
    }
    let rows: Vec<Vec<String>> = queues
        .iter()
        .map(|q| {
            vec![
                q.name.as_str().to_string(),
                q.counts.scheduled.to_string(),
                q.counts.ready.to_string(),
                q.counts.leased.to_string(),
                q.counts.dead.to_string(),
                q.counts.pending.to_string(),
                q.oldest_ready_age.map_or("-".into(), render::age),
                if q.paused { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect();
    let header = [
        "QUEUE",
        "SCHEDULED",
        "READY",
        "LEASED",
        "DEAD",
        "PENDING",
        "OLDEST_READY",
        "PAUSED",
    ];
    super::print(&render::table(&header, &rows))
}

fn counts(c: &spool_core::StateCounts) -> serde_json::Value {
    serde_json::json!(CountsJson::from(*c))
}

/// The shape of `GET /v1/queues`, so scripts can use either.
fn json(q: &QueueStats) -> serde_json::Value {
    let kinds: serde_json::Map<String, serde_json::Value> = q
        .kinds
        .iter()
        .map(|(kind, c)| (kind.as_str().to_string(), counts(c)))
        .collect();
    serde_json::json!({
        "name": q.name.as_str(),
        "paused": q.paused,
        "counts": counts(&q.counts),
        "kinds": kinds,
        "oldest_ready_age_ms": q.oldest_ready_age.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        "rate_tokens": q.rate_tokens,
    })
}
