//! `spool get`: one task, field by field, with the tasks it waits for.

use clap::Args;
use spool_core::{Store, Task, TaskId, TaskRef};

use super::connect::ServerArgs;
use super::render;

/// The long `--help` text of `spool get`.
pub(crate) const ABOUT: &str = "\
Shows one task by its id: queue, kind, state, attempts, run time, key, group
and last error. A task enqueued with --after also shows the tasks it waits
for, those it still waits on (it is pending until none is left), how many
completed or failed, and what a failed one does to it. Completed tasks are
deleted: their ids answer not_found.

Examples:
  spool get 42
  spool get 42 --json";

/// Options of `spool get` (see [`ABOUT`]).
#[derive(Debug, Clone, Args)]
pub(crate) struct GetArgs {
    /// The task's id.
    #[arg(value_name = "ID")]
    pub id: u64,

    /// Print the task as JSON (as `spool tasks --json` does) instead of text.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub(crate) fn run(args: GetArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let id = TaskId(args.id);
    let what = format!("task {id}");
    let task = super::block_on(server.call_on(&what, server.store.get(TaskRef::Id(id))))?;
    if args.json {
        return super::print_json(&super::tasks::json(&task));
    }
    super::print(&text(&task))
}

/// `name: value` lines, the dependencies last.
fn text(t: &Task) -> String {
    let none = || "-".to_string();
    let mut lines = vec![
        ("id", t.id.to_string()),
        ("queue", t.queue.as_str().to_string()),
        ("kind", t.kind.as_str().to_string()),
        ("state", t.state.to_string()),
        ("attempt", format!("{}/{}", t.attempt, t.max_attempts)),
        ("run_at", render::time(t.run_at)),
        ("key", t.key.as_ref().map_or_else(none, |k| k.to_string())),
        (
            "group",
            t.group.as_ref().map_or_else(none, |g| g.to_string()),
        ),
        (
            "last_error",
            t.errors.last().map_or_else(none, |e| e.message.clone()),
        ),
    ];
    if let Some(d) = t.deps.as_deref() {
        let ids = |ids: &[TaskId]| match ids {
            [] => none(),
            ids => ids
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        };
        lines.extend([
            ("after", ids(&d.after)),
            ("waiting_on", ids(&d.waiting_on)),
            ("parents_completed", d.completed().to_string()),
            ("parents_failed", d.failed.to_string()),
            ("if_parent_fails", d.if_parent_fails.as_str().to_string()),
        ]);
    }
    let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    lines
        .iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}
