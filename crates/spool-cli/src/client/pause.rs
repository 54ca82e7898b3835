//! `spool pause` and `spool resume`: stop and restart handing out a
//! queue's tasks.

use clap::Args;
use spool_core::{QueueName, Store};

use super::args;
use super::connect::ServerArgs;

/// The long `--help` text of `spool pause`.
pub(crate) const PAUSE_ABOUT: &str = "\
Pauses QUEUE: workers' claims get no tasks until `spool resume QUEUE`. Tasks
already leased run to the end; enqueueing still works, so nothing is lost.";

/// The long `--help` text of `spool resume`.
pub(crate) const RESUME_ABOUT: &str = "\
Resumes a queue paused with `spool pause`: its ready tasks are handed out
again.";

/// Options of `spool pause` and `spool resume`.
#[derive(Debug, Clone, Args)]
pub(crate) struct QueueArgs {
    /// The queue.
    #[arg(value_parser = args::queue)]
    pub queue: QueueName,

    #[command(flatten)]
    pub server: ServerArgs,
}

/// Pauses (`paused`) or resumes the queue.
pub(crate) fn run(args: QueueArgs, paused: bool) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    super::block_on(server.call(server.store.set_paused(&args.queue, paused)))?;
    let now = if paused { "paused" } else { "resumed" };
    super::print(&format!("queue {} {now}\n", args.queue))
}
