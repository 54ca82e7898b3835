//! `spool enqueue`: adds one task to a queue and prints its id.

use std::time::Duration;

use clap::Args;
use spool_core::{
    Kind, NewTask, Parent, ParentFailure, Payload, QueueName, Store, TaskGroup, TaskId, TaskKey,
};

use super::args;
use super::connect::ServerArgs;

/// The long `--help` text of `spool enqueue`.
pub(crate) const ABOUT: &str = "\
Adds one task to QUEUE (created on first use unless the server runs with
--strict-queues) and prints its id. With --key, a task whose key is already
live (or was completed within the queue's dedup window) is not created again:
the existing task's id is printed, followed by `duplicate`. With --group, the
task belongs to that group of its queue (a customer, an API host): claims
take from the groups in turn, and the queue's group concurrency (`spool queue
QUEUE --group-concurrency N`) bounds each group's tasks leased at once.

With --after ID (repeatable), the task waits for those tasks, in any queue:
it is pending, claimed by no one, until each has ended. When one ends dead
or cancelled, --if-parent-fails decides: cancel (the default) cancels this
task too, run lets it run once every parent has ended. `spool tasks QUEUE
--state pending` lists the waiting tasks and what they still wait for.

Examples:
  spool enqueue emails --kind send --payload '{\"to\": \"ada@example.com\"}'
  spool enqueue reports --delay 5m --key report-2026-11 --max-attempts 3
  spool enqueue fetch --group api.example.com --payload '\"/v1/items\"'
  spool enqueue reports --after 41 --after 42 --if-parent-fails run";

/// Options of `spool enqueue` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct EnqueueArgs {
    /// The queue (1-128 characters of A-Z a-z 0-9 . _ : -).
    #[arg(value_parser = args::queue)]
    pub queue: QueueName,

    /// The handler name workers dispatch on; defaults to the queue's name.
    #[arg(long, value_parser = args::kind)]
    pub kind: Option<Kind>,

    /// The task's payload, as JSON (a string needs its quotes: '"text"').
    /// Defaults to null.
    #[arg(long, value_name = "JSON", value_parser = args::payload)]
    pub payload: Option<Payload>,

    /// Run no earlier than this from now, e.g. 250ms, 5s, 2m, 1h.
    #[arg(long, value_name = "DURATION", value_parser = args::duration)]
    pub delay: Option<Duration>,

    /// Idempotency key: at most one live task per key and queue.
    #[arg(long, value_parser = args::key)]
    pub key: Option<TaskKey>,

    /// Lower runs first; ties go to the earliest run time.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    pub priority: i16,

    /// Attempts before the task is dead; defaults to the queue's setting.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_attempts: Option<u32>,

    /// The task's group in its queue (1-128 bytes of text): a customer, an
    /// API host. Claims take from the groups in turn.
    #[arg(long, value_name = "G", value_parser = args::group)]
    pub group: Option<TaskGroup>,

    /// A task this one waits for (its id; repeat for more): it stays
    /// pending until each has ended.
    #[arg(long, value_name = "ID")]
    pub after: Vec<u64>,

    /// What a parent that ends dead or cancelled does to this task: cancel
    /// it too (the default), or run it once every parent has ended.
    #[arg(long, value_name = "POLICY", value_parser = args::parent_failure)]
    pub if_parent_fails: Option<ParentFailure>,

    /// Print `{"id": N, "duplicate": bool}` instead of text.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub(crate) fn run(args: EnqueueArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let mut task =
        NewTask::new(args.payload.unwrap_or_else(args::no_payload)).priority(args.priority);
    task.kind = args.kind;
    task.key = args.key;
    task.max_attempts = args.max_attempts;
    task.group = args.group;
    task.after = args
        .after
        .into_iter()
        .map(|id| Parent::Task(TaskId(id)))
        .collect();
    task.if_parent_fails = args.if_parent_fails.unwrap_or_default();
    if let Some(delay) = args.delay {
        task = task.delay(delay);
    }
    let outcomes = super::block_on(server.call(server.store.enqueue(&args.queue, vec![task])))?;
    let outcome = outcomes
        .first()
        .ok_or_else(|| anyhow::anyhow!("the server answered without the task's id"))?;
    if args.json {
        return super::print_json(&serde_json::json!({
            "id": outcome.id.0,
            "duplicate": outcome.duplicate,
        }));
    }
    let note = if outcome.duplicate { " duplicate" } else { "" };
    super::print(&format!("{}{note}\n", outcome.id))
}
