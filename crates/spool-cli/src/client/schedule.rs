//! `spool schedule set|list|rm`: tasks enqueued on a fixed period or a cron
//! expression, fired by the server (each tick once, however many servers).

use std::time::Duration;

use clap::{ArgGroup, Args, Subcommand};
use spool_core::{Cadence, Kind, Payload, QueueName, Schedule, ScheduleSpec, Store};

use super::args;
use super::connect::ServerArgs;
use super::render;

/// The long `--help` text of `spool schedule`.
pub(crate) const ABOUT: &str = "\
Manages schedules: named rules that enqueue a task into a queue every period
(--every 30s) or on a cron expression (--cron: 5 fields, 6 with seconds first,
or @hourly/@daily/@weekly/@monthly/@yearly; in UTC or --tz). The server fires them; every tick is enqueued exactly once, with the
key `sched:NAME:TICK`. A schedule's tasks are ordinary tasks: see them with
`spool tasks QUEUE`.

Examples:
  spool schedule set heartbeat --queue ops --every 1s
  spool schedule set nightly --queue reports --cron '0 0 3 * * *' --tz Europe/Berlin
  spool schedule list
  spool schedule rm heartbeat";

/// Options of `spool schedule`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ScheduleArgs {
    #[command(subcommand)]
    pub action: ScheduleAction,
}

#[derive(Debug, Clone, Subcommand)]
pub(crate) enum ScheduleAction {
    /// Create a schedule, or replace one (keeping when it last fired).
    Set(SetArgs),
    /// Every schedule with its cadence, last and next fire time.
    List(ListArgs),
    /// Delete a schedule; tasks it already enqueued stay.
    Rm(RmArgs),
}

/// Options of `spool schedule set`.
#[derive(Debug, Clone, Args)]
#[command(group(ArgGroup::new("cadence").required(true).args(["every", "cron"])))]
pub(crate) struct SetArgs {
    /// The schedule's name (1-128 characters of A-Z a-z 0-9 . _ : -).
    #[arg(value_parser = args::kind)]
    pub name: Kind,

    /// The queue its tasks go to.
    #[arg(long, value_parser = args::queue)]
    pub queue: QueueName,

    /// Fire every period (at least 100ms), e.g. 1s, 5m, 1h.
    #[arg(long, value_name = "DURATION", value_parser = args::duration)]
    pub every: Option<Duration>,

    /// Fire on a cron expression: "min hour day month weekday" (e.g. "*/5 * * * *",
    /// every 5 minutes), 6 fields with seconds first, or a macro such as @daily.
    #[arg(long, value_name = "EXPR")]
    pub cron: Option<String>,

    /// The IANA time zone of --cron (e.g. Europe/Berlin); default UTC.
    #[arg(long, value_name = "ZONE", requires = "cron")]
    pub tz: Option<String>,

    /// The payload of every task, as JSON. Defaults to null.
    #[arg(long, value_name = "JSON", value_parser = args::payload)]
    pub payload: Option<Payload>,

    /// The tasks' kind; defaults to the queue's name.
    #[arg(long, value_parser = args::kind)]
    pub kind: Option<Kind>,

    /// How long a tick's task may run (its lease), e.g. 500ms, 30s.
    #[arg(long, value_name = "DURATION", value_parser = args::duration)]
    pub deadline: Option<Duration>,

    #[command(flatten)]
    pub server: ServerArgs,
}

/// Options of `spool schedule list`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ListArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub server: ServerArgs,
}

/// Options of `spool schedule rm`.
#[derive(Debug, Clone, Args)]
pub(crate) struct RmArgs {
    /// The schedule to delete.
    #[arg(value_parser = args::kind)]
    pub name: Kind,

    #[command(flatten)]
    pub server: ServerArgs,
}

pub(crate) fn run(args: ScheduleArgs) -> anyhow::Result<()> {
    match args.action {
        ScheduleAction::Set(a) => set(a),
        ScheduleAction::List(a) => list(a),
        ScheduleAction::Rm(a) => rm(a),
    }
}

fn set(args: SetArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    // The group on `every`/`cron` makes exactly one of them present.
    let cadence = match (args.every, args.cron) {
        (Some(every), _) => Cadence::Every(every),
        (None, Some(expr)) => Cadence::Cron { expr, tz: args.tz },
        (None, None) => anyhow::bail!("give --every or --cron"),
    };
    let spec = ScheduleSpec {
        name: args.name,
        queue: args.queue,
        kind: args.kind,
        payload: args.payload.unwrap_or_else(args::no_payload),
        cadence,
        deadline: args.deadline,
    };
    let schedule = super::block_on(server.call(server.store.put_schedule(spec)))?;
    let next = schedule.next_fire_at().map_or("never".into(), render::time);
    super::print(&format!(
        "schedule {} set: {} into queue {}; next fire {next}\n",
        schedule.spec.name,
        cadence_text(&schedule.spec.cadence),
        schedule.spec.queue,
    ))
}

fn list(args: ListArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let schedules = super::block_on(server.call(server.store.list_schedules()))?;
    if args.json {
        let schedules: Vec<_> = schedules.iter().map(json).collect();
        return super::print_json(&serde_json::json!({ "schedules": schedules }));
    }
    if schedules.is_empty() {
        return super::print("no schedules: `spool schedule set` creates one\n");
    }
    let rows: Vec<Vec<String>> = schedules
        .iter()
        .map(|s| {
            vec![
                s.spec.name.as_str().to_string(),
                s.spec.queue.as_str().to_string(),
                s.spec
                    .kind
                    .as_ref()
                    .map_or("-".into(), |k| k.as_str().to_string()),
                cadence_text(&s.spec.cadence),
                s.last_fire_at.map_or("never".into(), render::time),
                s.next_fire_at().map_or("never".into(), render::time),
            ]
        })
        .collect();
    let header = ["NAME", "QUEUE", "KIND", "CADENCE", "LAST_FIRE", "NEXT_FIRE"];
    super::print(&render::table(&header, &rows))
}

fn rm(args: RmArgs) -> anyhow::Result<()> {
    let server = args.server.connect()?;
    let what = format!("schedule {}", args.name);
    super::block_on(server.call_on(&what, server.store.delete_schedule(&args.name)))?;
    super::print(&format!("schedule {} removed\n", args.name))
}

fn cadence_text(c: &Cadence) -> String {
    match c {
        Cadence::Every(d) => format!("every {}", render::duration(*d)),
        Cadence::Cron { expr, tz } => {
            format!("cron {expr} ({})", tz.as_deref().unwrap_or("UTC"))
        }
    }
}

fn json(s: &Schedule) -> serde_json::Value {
    let spec = &s.spec;
    let (every_ms, cron, tz) = match &spec.cadence {
        Cadence::Every(d) => (Some(d.as_millis()), None, None),
        Cadence::Cron { expr, tz } => (None, Some(expr.as_str()), tz.as_deref()),
    };
    serde_json::json!({
        "name": spec.name.as_str(),
        "queue": spec.queue.as_str(),
        "kind": spec.kind.as_ref().map(|k| k.as_str()),
        "every_ms": every_ms,
        "cron": cron,
        "tz": tz,
        "deadline_ms": spec.deadline.map(|d| d.as_millis()),
        "last_fire_at": s.last_fire_at.map(render::time_json),
        "next_fire_at": s.next_fire_at().map(render::time_json),
    })
}
