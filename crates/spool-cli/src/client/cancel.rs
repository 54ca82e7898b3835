//! `spool cancel`: deletes a task in any state, addressed by its id or by
//! its queue and idempotency key (docs/spec.md §3, **cancel**).

use clap::Args;
use spool_core::{QueueName, Store, TaskId, TaskKey, TaskRef};

use super::args;
use super::connect::ServerArgs;

/// The long `--help` text of `spool cancel`.
pub(crate) const ABOUT: &str = "\
Cancels a task: deletes it in whatever state it is (scheduled, ready,
pending, leased or dead) and retires its key. A task being run is cut off:
its worker hears of the cancel within 100 ms, its handler's cancellation
fires, and the worker's late ack is refused. Tasks waiting for it follow
their policy, as for a task that failed (--if-parent-fails).

Name the task by its id, or with --queue and --key by the idempotency key
it was enqueued with.

Examples:
  spool cancel 42
  spool cancel --queue emails --key welcome:ada";

/// Options of `spool cancel` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct CancelArgs {
    /// The task's id.
    #[arg(
        value_name = "ID",
        required_unless_present = "key",
        conflicts_with = "key"
    )]
    pub id: Option<u64>,

    /// The queue of the task named by --key.
    #[arg(long, value_parser = args::queue, requires = "key")]
    pub queue: Option<QueueName>,

    /// The task's idempotency key, in the queue --queue names.
    #[arg(long, value_parser = args::key, requires = "queue")]
    pub key: Option<TaskKey>,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub(crate) fn run(args: CancelArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let (task, what) = match (args.id, args.queue, args.key) {
        (Some(id), _, _) => {
            let id = TaskId(id);
            (TaskRef::Id(id), format!("task {id}"))
        }
        (None, Some(queue), Some(key)) => {
            let what = format!("a task with key {key} in queue {queue}");
            (TaskRef::Key(queue, key), what)
        }
        // clap requires an id or both --queue and --key.
        _ => anyhow::bail!("name the task: an ID, or --queue and --key"),
    };
    super::block_on(server.call_on(&what, server.store.cancel(task)))?;
    super::print(&format!("cancelled {what}\n"))
}
