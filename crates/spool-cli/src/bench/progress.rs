//! A progress bar per workload on stderr, drawn only for a person at a
//! terminal (never into a pipe or a log file).
//!
//! Workers only bump the budget's atomic counter; a separate task redraws
//! from it a few times a second, so drawing never sits on the hot path.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::task::JoinHandle;

use super::budget::Budget;

const REDRAW: Duration = Duration::from_millis(100);
const TEMPLATE: &str =
    "{prefix:>15} [{elapsed_precise}] {wide_bar} {human_pos}/{human_len} ({per_sec}, eta {eta})";

#[derive(Debug)]
pub(crate) struct Progress {
    shown: Option<(ProgressBar, JoinHandle<()>)>,
}

impl Progress {
    /// Starts drawing `budget`'s progress towards `total`, labelled `name`.
    pub(crate) fn start(name: &'static str, total: u64, budget: Arc<Budget>) -> Progress {
        if !std::io::stderr().is_terminal() {
            return Progress { shown: None };
        }
        let bar = ProgressBar::new(total).with_prefix(name);
        if let Ok(style) = ProgressStyle::with_template(TEMPLATE) {
            bar.set_style(style);
        }
        let drawn = bar.clone();
        let redraw = tokio::spawn(async move {
            loop {
                drawn.set_position(budget.done());
                tokio::time::sleep(REDRAW).await;
            }
        });
        Progress {
            shown: Some((bar, redraw)),
        }
    }

    /// Removes the bar; the summary table reports the result.
    pub(crate) fn finish(self) {
        if let Some((bar, redraw)) = self.shown {
            redraw.abort();
            bar.finish_and_clear();
        }
    }
}
