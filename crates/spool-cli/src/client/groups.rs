//! `spool groups`: a queue's busiest groups, with their tasks waiting and
//! leased and, under a group rate limit, their tokens left (docs/spec.md
//! §4, "Groups").

use clap::Args;
use spool_core::groups::MAX_GROUP_STATS;
use spool_core::{QueueName, Store};

use super::args;
use super::connect::ServerArgs;
use super::render;

/// The long `--help` text of `spool groups`.
pub(crate) const ABOUT: &str = "\
Shows the groups of QUEUE that have tasks waiting (ready or scheduled) or
leased, most waiting first, then most leased. Tasks are put in a group at
enqueue (`spool enqueue QUEUE --group G`); claims take from the groups in
turn, and the queue's group concurrency (`spool queue QUEUE
--group-concurrency N`) caps each group's tasks leased at once. A group
whose LEASED sits at that cap while its WAITING grows is being held back.
Under a group rate limit (`--group-rate-limit`), TOKENS is what is left in
each group's bucket: a group at 0 waits for its refill.

Examples:
  spool groups fetch
  spool groups fetch --limit 5 --json";

/// Options of `spool groups` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct GroupsArgs {
    /// The queue.
    #[arg(value_parser = args::queue)]
    pub queue: QueueName,

    /// Most groups to show (1 to 1000).
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..=MAX_GROUP_STATS as u64))]
    pub limit: u64,

    /// Print `{"groups": [{"group", "waiting", "leased", "rate_tokens"}]}`
    /// instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub(crate) fn run(args: GroupsArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let limit = usize::try_from(args.limit).unwrap_or(MAX_GROUP_STATS);
    let groups = super::block_on(server.call(server.store.groups(&args.queue, limit)))?;
    if args.json {
        let groups: Vec<_> = groups
            .iter()
            .map(|g| {
                serde_json::json!({
                    "group": g.group.as_str(),
                    "waiting": g.waiting,
                    "leased": g.leased,
                    "rate_tokens": g.rate_tokens,
                })
            })
            .collect();
        return super::print_json(&serde_json::json!({ "groups": groups }));
    }
    if groups.is_empty() {
        return super::print(&format!(
            "no groups with tasks in queue {}: `spool enqueue {} --group G` puts a task in one\n",
            args.queue, args.queue
        ));
    }
    // Every group has tokens under a group rate limit, none without one.
    let rated = groups.iter().any(|g| g.rate_tokens.is_some());
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|g| {
            let mut row = vec![
                render::cell(g.group.as_str(), GROUP_WIDTH),
                g.waiting.to_string(),
                g.leased.to_string(),
            ];
            row.extend(g.rate_tokens.map(|n| n.to_string()));
            row
        })
        .collect();
    let heads: &[&str] = if rated {
        &["GROUP", "WAITING", "LEASED", "TOKENS"]
    } else {
        &["GROUP", "WAITING", "LEASED"]
    };
    super::print(&render::table(heads, &rows))
}

/// Longest group name in the table; `--json` has all of it.
const GROUP_WIDTH: usize = 60;
