//! `spool retry`: dead tasks become ready again, one or all of a queue.

use clap::Args;
use spool_core::{QueueName, Store, TaskId, TaskRef, TaskState};

use super::args;
use super::connect::ServerArgs;

/// The long `--help` text of `spool retry`.
pub(crate) const ABOUT: &str = "\
Makes dead tasks of QUEUE ready again with their attempt count reset to 0:
the task with id ID, or with --all every dead task of the queue. Fix what
made them fail first (`spool tasks QUEUE --state dead` shows the errors).

Examples:
  spool retry emails 42
  spool retry emails --all";

/// Options of `spool retry` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct RetryArgs {
    /// The queue of the dead tasks.
    #[arg(value_parser = args::queue)]
    pub queue: QueueName,

    /// The id of one dead task to retry.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    pub id: Option<u64>,

    /// Retry every dead task of the queue.
    #[arg(long)]
    pub all: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub(crate) fn run(args: RetryArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let queue = &args.queue;
    let message = super::block_on(async {
        let Some(id) = args.id else {
            let n = server.call(server.store.retry_dead(queue)).await?;
            return Ok(format!("retried {n} dead task(s) of queue {queue}\n"));
        };
        let id = TaskId(id);
        // Checked first so that an id from the wrong queue, or a task that
        // is not dead, is refused with a reason rather than touched.
        let what = format!("task {id}");
        let task = server
            .call_on(&what, server.store.get(TaskRef::Id(id)))
            .await?;
        anyhow::ensure!(
            &task.queue == queue,
            "task {id} is in queue {}, not {queue}",
            task.queue
        );
        anyhow::ensure!(
            task.state == TaskState::Dead,
            "task {id} is {}, not dead: only dead tasks can be retried",
            task.state
        );
        let task = server.call_on(&what, server.store.retry(id)).await?;
        Ok(format!("retried task {id}: now {}\n", task.state))
    })?;
    super::print(&message)
}
