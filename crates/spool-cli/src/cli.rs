//! The command line: the top-level parser and one variant per command.
//!
//! Every command's own options live next to its code (`serve::ServeArgs`,
//! `check::CheckArgs`, `bench::BenchArgs`); doc comments here and there are
//! the `--help` text, which is meant to be the only documentation a new user
//! needs. The client commands of docs/spec.md §8 (enqueue, get, stats, tasks, retry,
//! cancel, pause/resume, queue, groups, schedule) talk to a running server; their modules are
//! under `client`.

use clap::{Parser, Subcommand};

use crate::bench::{self, BenchArgs};
use crate::check::{self, CheckArgs};
use crate::client::cancel::{self, CancelArgs};
use crate::client::enqueue::{self, EnqueueArgs};
use crate::client::get::{self, GetArgs};
use crate::client::groups::{self, GroupsArgs};
use crate::client::pause::{self, QueueArgs};
use crate::client::queue::{self, QueueSettingsArgs};
use crate::client::retry::{self, RetryArgs};
use crate::client::schedule::{self, ScheduleArgs};
use crate::client::stats::{self, StatsArgs};
use crate::client::tasks::{self, TasksArgs};
use crate::serve::{self, ServeArgs};

/// Spool: a durable task queue and scheduler.
///
/// Tasks are recorded durably (fdatasync before any acknowledgement) in a
/// data directory, claimed by workers under a lease, and acked or failed.
/// This binary serves the HTTP API, talks to a running server (enqueue, get,
/// stats, tasks, retry, cancel, pause/resume, queue, groups, schedule: `--url`/SPOOL_URL,
/// `--token`/SPOOL_TOKEN), checks data directories and benchmarks the store.
#[derive(Debug, Parser)]
#[command(name = "spool", version, propagate_version = true)]
#[command(after_help = "Logs go to stderr; set RUST_LOG (e.g. RUST_LOG=debug) to see more.")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Serve the HTTP/JSON API over the embedded engine in a data directory.
    #[command(long_about = serve::ABOUT)]
    Serve(ServeArgs),
    /// Verify a data directory offline: log, checkpoints, task counts.
    #[command(long_about = check::ABOUT)]
    Check(CheckArgs),
    /// Load generator: measure enqueue, claim/ack and pickup latency.
    #[command(long_about = bench::ABOUT, after_help = bench::EXAMPLES)]
    Bench(Box<BenchArgs>),
    /// Add a task, or a batch of them (--batch FILE), to a queue; print the ids.
    #[command(long_about = enqueue::ABOUT)]
    Enqueue(EnqueueArgs),
    /// One task by its id, with the tasks it waits for.
    #[command(long_about = get::ABOUT)]
    Get(GetArgs),
    /// Every queue: tasks per state, oldest ready age, paused.
    #[command(long_about = stats::ABOUT)]
    Stats(StatsArgs),
    /// List a queue's tasks (e.g. the dead ones, most attempts first).
    #[command(long_about = tasks::ABOUT)]
    Tasks(TasksArgs),
    /// Make one dead task, or all of a queue's, ready again.
    #[command(long_about = retry::ABOUT)]
    Retry(RetryArgs),
    /// Cancel a task in any state, a running one included.
    #[command(long_about = cancel::ABOUT)]
    Cancel(CancelArgs),
    /// Stop handing out a queue's tasks.
    #[command(long_about = pause::PAUSE_ABOUT)]
    Pause(QueueArgs),
    /// Hand out a paused queue's tasks again.
    #[command(long_about = pause::RESUME_ABOUT)]
    Resume(QueueArgs),
    /// Show a queue's settings, or change its claim limits.
    #[command(long_about = queue::ABOUT)]
    Queue(QueueSettingsArgs),
    /// A queue's busiest groups: tasks waiting and leased per group.
    #[command(long_about = groups::ABOUT)]
    Groups(GroupsArgs),
    /// Create, list or remove schedules (periodic or cron tasks).
    #[command(long_about = schedule::ABOUT)]
    Schedule(ScheduleArgs),
}

impl Command {
    /// What is logged without `RUST_LOG`: a server reports its life (start,
    /// stop, failed requests); the other commands only problems, so that a
    /// healthy run prints just its result.
    pub(crate) fn default_log_filter(&self) -> &'static str {
        match self {
            Command::Serve(_) => "info",
            Command::Check(_)
            | Command::Bench(_)
            | Command::Enqueue(_)
            | Command::Get(_)
            | Command::Stats(_)
            | Command::Tasks(_)
            | Command::Retry(_)
            | Command::Cancel(_)
            | Command::Pause(_)
            | Command::Resume(_)
            | Command::Queue(_)
            | Command::Groups(_)
            | Command::Schedule(_) => "warn",
        }
    }
}
