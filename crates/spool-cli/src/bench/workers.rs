//! Joining a workload's concurrent workers.

use anyhow::Context;
use tokio::task::JoinSet;

use super::budget::Budget;

/// Waits for every worker and returns their results. When one fails, the
/// budget is stopped so the others wind down, and the first error is
/// returned only after all have ended: no worker outlives its workload.
pub(crate) async fn join_all<T: 'static>(
    mut workers: JoinSet<anyhow::Result<T>>,
    budget: &Budget,
) -> anyhow::Result<Vec<T>> {
    let mut results = Vec::with_capacity(workers.len());
    let mut first_error = None;
    while let Some(joined) = workers.join_next().await {
        match joined
            .context("a benchmark worker panicked")
            .and_then(|r| r)
        {
            Ok(value) => results.push(value),
            Err(e) => {
                budget.stop();
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(results),
    }
}
