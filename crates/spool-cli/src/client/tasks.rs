//! `spool tasks`: a queue's tasks as a table, most attempts first when one
//! state is asked for (where an operator looks in a crisis).

use clap::Args;
use spool_core::wire::DepsJson;
use spool_core::{ListOrder, ListRequest, PayloadFormat, QueueName, Store, Task, TaskState};

use super::args;
use super::connect::ServerArgs;
use super::render;

/// The long `--help` text of `spool tasks`.
pub(crate) const ABOUT: &str = "\
Lists the tasks of QUEUE: id, kind, state, attempt/max attempts, run time
(UTC), the tasks it still waits for and the last error. Without --state the
oldest tasks come first; with --state the tasks with the most attempts come
first.

States: scheduled (waiting for its run time), ready (claimable), leased (being
run), dead (out of attempts: fix the cause, then `spool retry QUEUE --all`),
pending (waiting for the tasks it was enqueued --after to end). Completed
tasks are deleted, so they never show. --json adds each task's dependencies:
after, waiting_on, parents_failed, parents_completed, if_parent_fails.

Examples:
  spool tasks emails
  spool tasks emails --state dead --limit 20
  spool tasks reports --state pending";

/// Options of `spool tasks` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct TasksArgs {
    /// The queue to list.
    #[arg(value_parser = args::queue)]
    pub queue: QueueName,

    /// Only tasks in this state: scheduled, ready, leased, dead or pending.
    #[arg(long)]
    pub state: Option<TaskState>,

    /// Most tasks to show.
    #[arg(long, value_name = "N", default_value_t = 100,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: u64,

    /// Print JSON (every error, JSON payloads) instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

/// Longest last-error text in the table; `--json` has all of it.
const ERROR_WIDTH: usize = 60;

/// Longest list of ids waited for in the table; `--json` has all of them.
const WAITING_WIDTH: usize = 30;

pub(crate) fn run(args: TasksArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let wanted = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let mut req = ListRequest::new(args.queue.clone());
    req.state = args.state;
    if args.state.is_some() {
        req.order = ListOrder::AttemptsDesc;
    }
    let tasks = super::block_on(async {
        let mut tasks = Vec::new();
        // The server pages at most 1000 tasks; follow the cursor for more.
        loop {
            req.limit = (wanted - tasks.len()).min(spool_core::store::MAX_LIST_LIMIT);
            let page = server.call(server.store.list(req.clone())).await?;
            tasks.extend(page.tasks);
            match page.next_cursor {
                Some(cursor) if tasks.len() < wanted => req.cursor = Some(cursor),
                _ => return Ok(tasks),
            }
        }
    })?;
    if args.json {
        let tasks: Vec<_> = tasks.iter().map(json).collect();
        return super::print_json(&serde_json::json!({ "tasks": tasks }));
    }
    if tasks.is_empty() {
        let which = args.state.map_or(String::new(), |s| format!("{s} "));
        return super::print(&format!("no {which}tasks in queue {}\n", args.queue));
    }
    let rows: Vec<Vec<String>> = tasks.iter().map(row).collect();
    let header = [
        "ID",
        "KIND",
        "STATE",
        "ATTEMPT",
        "RUN_AT",
        "WAITING_ON",
        "LAST_ERROR",
    ];
    super::print(&render::table(&header, &rows))
}

fn row(t: &Task) -> Vec<String> {
    vec![
        t.id.to_string(),
        t.kind.as_str().to_string(),
        t.state.to_string(),
        format!("{}/{}", t.attempt, t.max_attempts),
        render::time(t.run_at),
        waiting_on(t),
        t.errors
            .last()
            .map_or("-".into(), |e| render::cell(&e.message, ERROR_WIDTH)),
    ]
}

/// The ids a task still waits for, `-` when none.
fn waiting_on(t: &Task) -> String {
    match t.deps.as_deref() {
        Some(d) if !d.waiting_on.is_empty() => {
            let ids: Vec<String> = d.waiting_on.iter().map(ToString::to_string).collect();
            render::cell(&ids.join(","), WAITING_WIDTH)
        }
        _ => "-".into(),
    }
}

/// A task as JSON, for `--json` here and in `spool get`.
pub(super) fn json(t: &Task) -> serde_json::Value {
    let errors: Vec<_> = t
        .errors
        .iter()
        .map(|e| {
            serde_json::json!({
                "attempt": e.attempt,
                "at": render::time_json(e.at),
                "message": e.message,
            })
        })
        .collect();
    // A JSON payload is shown as JSON; a binary one only by its size, since
    // bytes are not text.
    let (payload, payload_bytes) = match t.payload.format {
        PayloadFormat::Json => (
            serde_json::from_slice::<serde_json::Value>(&t.payload.bytes).ok(),
            None,
        ),
        PayloadFormat::Binary => (None, Some(t.payload.len())),
    };
    let mut task = serde_json::json!({
        "id": t.id.0,
        "queue": t.queue.as_str(),
        "kind": t.kind.as_str(),
        "state": t.state.as_str(),
        "attempt": t.attempt,
        "max_attempts": t.max_attempts,
        "priority": t.priority,
        "run_at": render::time_json(t.run_at),
        "key": t.key.as_ref().map(|k| k.as_str()),
        "group": t.group.as_ref().map(|g| g.as_str()),
        "payload": payload,
        "payload_bytes": payload_bytes,
        "errors": errors,
        "created_at": render::time_json(t.created_at),
    });
    // The fields of the HTTP API's task, present only when it has them.
    if let (Some(d), Some(fields)) = (t.deps.as_deref(), task.as_object_mut()) {
        if let serde_json::Value::Object(deps) = serde_json::json!(DepsJson::from(d)) {
            fields.extend(deps);
        }
    }
    task
}
