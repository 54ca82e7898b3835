//! `spool queue`: show a queue's settings, or change its claim limits
//! (docs/spec.md §4) live.
//!
//! Only the limits named on the command line change: the server applies
//! the change to the settings in force, so nothing another operator set
//! meanwhile is undone.

use std::time::Duration;

use clap::Args;
use spool_core::wire::{RateLimitJson, SettingsJson};
use spool_core::{QueueChange, QueueName, RateLimit, Store};

use super::args;
use super::connect::ServerArgs;

/// The long `--help` text of `spool queue`.
pub(crate) const ABOUT: &str = "\
Shows QUEUE's settings, or changes its claim limits live. A rate limit
hands out at most LIMIT tasks per PERIOD (`--rate-limit 100/1s`), in bursts
of at most `--burst` (default: LIMIT); `--max-leased N` caps the queue's
tasks leased at once across every worker; `--group-concurrency N` caps the
tasks of any one group (`spool enqueue --group`) leased at once;
`--group-rate-limit 10/1s` gives each group a rate limit of its own (burst
`--group-burst`, default: its LIMIT). `--no-rate-limit`, `--no-max-leased`,
`--no-group-concurrency` and `--no-group-rate-limit` remove them. Other
settings keep their values.";

/// Options of `spool queue`.
#[derive(Debug, Clone, Args)]
pub(crate) struct QueueSettingsArgs {
    /// The queue.
    #[arg(value_parser = args::queue)]
    pub queue: QueueName,

    /// At most LIMIT tasks handed out per PERIOD, e.g. `1000/1s`.
    #[arg(long, value_parser = rate, conflicts_with = "no_rate_limit")]
    pub rate_limit: Option<(u32, Duration)>,

    /// The rate limit's burst: the most tasks handed out at once after a
    /// quiet spell (default: its LIMIT).
    #[arg(long, requires = "rate_limit")]
    pub burst: Option<u32>,

    /// Removes the queue's rate limit.
    #[arg(long)]
    pub no_rate_limit: bool,

    /// At most N of the queue's tasks leased at once.
    #[arg(long, conflicts_with = "no_max_leased")]
    pub max_leased: Option<u32>,

    /// Removes the queue's limit on tasks leased at once.
    #[arg(long)]
    pub no_max_leased: bool,

    /// At most N tasks of any one group leased at once.
    #[arg(long, value_name = "N", conflicts_with = "no_group_concurrency")]
    pub group_concurrency: Option<u32>,

    /// Removes the queue's limit on tasks of one group leased at once.
    #[arg(long)]
    pub no_group_concurrency: bool,

    /// At most LIMIT tasks of any one group handed out per PERIOD, each
    /// group with a bucket of its own, e.g. `10/1s`.
    #[arg(long, value_parser = rate, conflicts_with = "no_group_rate_limit")]
    pub group_rate_limit: Option<(u32, Duration)>,

    /// The group rate limit's burst (default: its LIMIT).
    #[arg(long, requires = "group_rate_limit")]
    pub group_burst: Option<u32>,

    /// Removes the queue's rate limit per group.
    #[arg(long)]
    pub no_group_rate_limit: bool,

    /// Print the settings as JSON.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

/// `LIMIT/PERIOD`, e.g. `1000/1s` or `5/250ms`.
fn rate(s: &str) -> Result<(u32, Duration), String> {
    let (limit, period) = s
        .split_once('/')
        .ok_or_else(|| format!("invalid rate {s:?}: expected LIMIT/PERIOD, e.g. 1000/1s"))?;
    let limit = limit
        .trim()
        .parse()
        .map_err(|_| format!("invalid rate {s:?}: LIMIT must be a whole number"))?;
    Ok((limit, args::duration(period)?))
}

impl QueueSettingsArgs {
    /// The change the options ask for; `None` when they ask for none.
    fn change(&self) -> Option<QueueChange> {
        let change = QueueChange {
            rate_limit: rate_change(self.rate_limit, self.burst, self.no_rate_limit),
            max_leased: limit_change(self.max_leased, self.no_max_leased),
            group_concurrency: limit_change(self.group_concurrency, self.no_group_concurrency),
            group_rate_limit: rate_change(
                self.group_rate_limit,
                self.group_burst,
                self.no_group_rate_limit,
            ),
            ..QueueChange::default()
        };
        (change != QueueChange::default()).then_some(change)
    }
}

/// `--RATE LIMIT/PERIOD` (with its burst) sets a rate limit, `--no-RATE`
/// removes it; neither keeps it.
fn rate_change(
    set: Option<(u32, Duration)>,
    burst: Option<u32>,
    remove: bool,
) -> Option<Option<RateLimit>> {
    match (set, remove) {
        (Some((limit, period)), _) => Some(Some(RateLimit {
            limit,
            period,
            burst: burst.unwrap_or(limit),
        })),
        (None, true) => Some(None),
        (None, false) => None,
    }
}

/// `--LIMIT N` sets a limit, `--no-LIMIT` removes it; neither keeps it.
fn limit_change(set: Option<u32>, remove: bool) -> Option<Option<u32>> {
    match (set, remove) {
        (Some(n), _) => Some(Some(n)),
        (None, true) => Some(None),
        (None, false) => None,
    }
}

/// A limit for people: the number, or `none`.
fn shown(limit: Option<u32>) -> String {
    limit.map_or("none".to_string(), |n| n.to_string())
}

pub(crate) fn run(args: QueueSettingsArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let settings = match args.change() {
        Some(change) => super::block_on(server.call(server.store.put_queue(&args.queue, change)))?,
        None => super::block_on(server.call(server.store.get_queue(&args.queue)))?,
    };
    let json = SettingsJson::from(&settings);
    if args.json {
        return super::print_json(&serde_json::to_value(&json)?);
    }
    let rate = |r: Option<RateLimitJson>| {
        r.map_or("none".to_string(), |r| {
            format!("{}/{}ms, burst {}", r.limit, r.period_ms, r.burst)
        })
    };
    super::print(&format!(
        "queue {}\n  lease {}ms, max attempts {}, paused {}\n  rate limit {}\n  max leased {}\n  group concurrency {}\n  group rate limit {}\n",
        args.queue,
        json.lease_ms,
        json.max_attempts,
        json.paused,
        rate(json.rate_limit),
        shown(json.max_leased),
        shown(json.group_concurrency),
        rate(json.group_rate_limit),
    ))
}
