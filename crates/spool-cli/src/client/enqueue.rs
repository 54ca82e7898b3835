//! `spool enqueue`: adds one task to a queue, or with `--batch` many in one
//! atomic enqueue (module `batch`), and prints their ids.

mod batch;

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use spool_core::{
    EnqueueOutcome, Kind, NewTask, Parent, ParentFailure, Payload, QueueName, Store, TaskGroup,
    TaskId, TaskKey, TraceParent,
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

With --traceparent, the task carries the producer's W3C trace context
(00-<trace id>-<parent id>-<flags>), which every run of it joins.

With --batch FILE (`-` reads stdin), every task of FILE is enqueued in one
atomic request, all or none, and their ids are printed one per line in the
file's order (with --json, as {\"tasks\": [{\"id\", \"duplicate\"}, ...]}).
FILE is the body of the HTTP API's batch enqueue, {\"tasks\": [...]}, each
task an object with the API's fields: payload or payload_base64, kind,
key, priority, delay_ms, run_at, max_attempts, lease_ms, group,
traceparent, after, after_batch and if_parent_fails. after_batch names
earlier tasks of the same file by position, from 0: a batch callback is a
last task with every member's position in after_batch and
\"if_parent_fails\": \"run\", pending until all of them have ended. The options that describe one task (--kind,
--payload, ...) do not go with --batch: each task of FILE says its own.

Examples:
  spool enqueue emails --kind send --payload '{\"to\": \"ada@example.com\"}'
  spool enqueue reports --delay 5m --key report-2026-11 --max-attempts 3
  spool enqueue fetch --group api.example.com --payload '\"/v1/items\"'
  spool enqueue reports --after 41 --after 42 --if-parent-fails run
  spool enqueue emails --traceparent 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
  spool enqueue thumbs --batch workflow.json
  echo '{\"tasks\": [{\"payload\": \"a.png\"}, {\"payload\": \"b.png\"},
        {\"kind\": \"zip\", \"after_batch\": [0, 1], \"if_parent_fails\": \"run\"}]}' |
    spool enqueue thumbs --batch -";

/// The options that describe the one task of a single enqueue; a batch
/// file's tasks carry their own, so none of them goes with `--batch`.
const SINGLE_TASK_OPTIONS: [&str; 10] = [
    "kind",
    "payload",
    "delay",
    "key",
    "priority",
    "max_attempts",
    "group",
    "after",
    "if_parent_fails",
    "traceparent",
];

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

    /// The producer's W3C trace context, which every run of the task joins:
    /// 00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>.
    #[arg(long, value_name = "VALUE", value_parser = traceparent)]
    pub traceparent: Option<String>,

    /// Enqueue every task of FILE (`-`: stdin) in one atomic request
    /// instead: the HTTP API's batch body, {"tasks": [...]}, whose tasks may
    /// wait for earlier ones by position (after_batch).
    #[arg(long, value_name = "FILE", conflicts_with_all = SINGLE_TASK_OPTIONS)]
    pub batch: Option<PathBuf>,

    /// Print `{"id": N, "duplicate": bool}` instead of text; with --batch,
    /// `{"tasks": [...]}` of those.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

/// Checked here as the server checks it (`spool_core`'s own parser), so a
/// malformed value is refused before anything is sent.
fn traceparent(s: &str) -> Result<String, String> {
    TraceParent::parse(s).map_err(|e| e.to_string())?;
    Ok(s.to_string())
}

pub(crate) fn run(args: EnqueueArgs) -> anyhow::Result<()> {
    if let Some(file) = &args.batch {
        // Read and checked whole before connecting: a bad file sends nothing.
        let tasks = batch::read(file)?;
        let server = args.server.connect()?;
        let outcomes = super::block_on(server.call(server.store.enqueue(&args.queue, tasks)))?;
        return print_batch(&outcomes, args.json);
    }
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
    task.traceparent = args.traceparent;
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
    super::print(&line(outcome))
}

/// The line a single enqueue prints: the id, and `duplicate` for one.
fn line(outcome: &EnqueueOutcome) -> String {
    let note = if outcome.duplicate { " duplicate" } else { "" };
    format!("{}{note}\n", outcome.id)
}

/// A batch's answers in the file's order: a single enqueue's line each, or
/// the HTTP API's `{"tasks": [...]}` with `--json`.
fn print_batch(outcomes: &[EnqueueOutcome], json: bool) -> anyhow::Result<()> {
    if json {
        let tasks: Vec<_> = outcomes
            .iter()
            .map(|o| serde_json::json!({"id": o.id.0, "duplicate": o.duplicate}))
            .collect();
        return super::print_json(&serde_json::json!({ "tasks": tasks }));
    }
    super::print(&outcomes.iter().map(line).collect::<String>())
}
