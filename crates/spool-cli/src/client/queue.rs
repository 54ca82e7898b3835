//! `spool queue`: show a queue's settings, or change its claim limits
//! (docs/spec.md §4) live.
//!
//! Only the limits named on the command line change: the server applies
//! the change to the settings in force, so nothing another operator set
//! meanwhile is undone.

use std::time::Duration;

use clap::Args;
use spool_core::wire::SettingsJson;
use spool_core::{QueueChange, QueueName, RateLimit, Store};

use super::args;
use super::connect::ServerArgs;

/// The long `--help` text of `spool queue`.
pub(crate) const ABOUT: &str = "\
Shows QUEUE's settings, or changes its claim limits live. A rate limit
hands out at most LIMIT tasks per PERIOD (`--rate-limit 100/1s`), in bursts
of at most `--burst` (default: LIMIT); `--max-leased N` caps the queue's
tasks leased at once across every worker. `--no-rate-limit` and
`--no-max-leased` remove them. Other settings keep their values.";

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
        let rate_limit = match (self.rate_limit, self.no_rate_limit) {
            (Some((limit, period)), _) => Some(Some(RateLimit {
                limit,
                period,
                burst: self.burst.unwrap_or(limit),
            })),
            (None, true) => Some(None),
            (None, false) => None,
        };
        let max_leased = match (self.max_leased, self.no_max_leased) {
            (Some(n), _) => Some(Some(n)),
            (None, true) => Some(None),
            (None, false) => None,
        };
        (rate_limit.is_some() || max_leased.is_some()).then_some(QueueChange {
            rate_limit,
            max_leased,
            ..QueueChange::default()
        })
    }
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
    let rate = json.rate_limit.map_or("none".to_string(), |r| {
        format!("{}/{}ms, burst {}", r.limit, r.period_ms, r.burst)
    });
    let leased = json
        .max_leased
        .map_or("none".to_string(), |n| n.to_string());
    super::print(&format!(
        "queue {}\n  lease {}ms, max attempts {}, paused {}\n  rate limit {rate}\n  max leased {leased}\n",
        args.queue, json.lease_ms, json.max_attempts, json.paused
    ))
}
