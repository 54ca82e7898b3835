//! The `spool` binary: parses the command line, starts logging, and hands
//! over to the module of the command that was asked for.
//!
//! Each command is a module with one entry point, `run(args)`; this file
//! only dispatches, and turns an error into a message and exit status 1. A new command is a new
//! variant in [`cli::Command`] and a new module.

mod allocator;
mod bench;
mod check;
mod cli;
mod client;
mod logging;
mod runtime;
mod serve;

use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    allocator::return_freed_memory_at_once();
    let cli = Cli::parse();
    logging::init(cli.command.default_log_filter());
    let outcome = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Check(args) => check::run(args),
        Command::Bench(args) => bench::run(*args),
        Command::Enqueue(args) => client::enqueue::run(args),
        Command::Get(args) => client::get::run(args),
        Command::Stats(args) => client::stats::run(args),
        Command::Tasks(args) => client::tasks::run(args),
        Command::Retry(args) => client::retry::run(args),
        Command::Cancel(args) => client::cancel::run(args),
        Command::Pause(args) => client::pause::run(args, true),
        Command::Resume(args) => client::pause::run(args, false),
        Command::Queue(args) => client::queue::run(args),
        Command::Groups(args) => client::groups::run(args),
        Command::Schedule(args) => client::schedule::run(args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` prints the whole context chain on one line: the
            // operation, then the file, then the OS error.
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
