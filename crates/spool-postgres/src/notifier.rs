//! Telling other processes that tasks are ready: NOTIFYs sent after the
//! change commits, coalesced, and without waiting for a disk flush.
//!
//! Why not NOTIFY inside each enqueue's transaction: PostgreSQL takes one
//! cluster-wide lock for a notifying commit and holds it through the WAL
//! flush, so notifying enqueues commit one at a time, one fsync each, and
//! group commit never forms (`spool bench --postgres`, 64 callers: 2,900
//! single enqueues/s that way, 9,300/s with this notifier). So operations
//! commit first and then [`Notifier::request`] a wake-up; one background
//! task sends whatever queues were requested meanwhile in one transaction
//! with `synchronous_commit = off` (a lost wake-up costs a fallback poll,
//! never a task), so the lock is held for microseconds and a burst of
//! enqueues costs one NOTIFY per queue.
//!
//! Rounds are at least [`MIN_GAP`] apart. A queue quiet for longer is
//! announced at once, so an idle consumer's pickup is as prompt as ever;
//! under load the requests of a few milliseconds share one round. Each
//! round costs a transaction here and, in every listening process, a
//! wake-up of its LISTEN backend and connection: sent after every commit,
//! they took as much of PostgreSQL's CPU as the enqueues themselves
//! (profile of single-task enqueues, docs/BENCHMARKS.md). A round is one
//! round trip: one simple query of `SET LOCAL` and the NOTIFYs, which runs
//! as one implicit transaction.
//!
//! Invariant: a request made after a commit leads to a NOTIFY sent after
//! that commit — the pending set is taken only by the sender, which
//! starts its transaction after taking it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use deadpool_postgres::Pool;

use crate::error;
use crate::floor::Ready;

/// Shortest time between the starts of two rounds of NOTIFYs: the most a
/// claimer waiting in another process hears of new work late while work
/// keeps coming.
pub(crate) const MIN_GAP: Duration = Duration::from_millis(5);

/// How long the sender rests after a failure (the database is down);
/// waiters poll meanwhile.
const RETRY: Duration = Duration::from_millis(200);

/// Queues that need a NOTIFY, and the sender's doorbell.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    // A std mutex: held for a map operation, never across an await.
    pending: Mutex<BTreeMap<String, Ready>>,
    kick: Notify,
}

impl Notifier {
    /// Asks for a NOTIFY of `queue` soon, saying where in claim order the
    /// tasks became ready ([`crate::floor`]). Never waits.
    pub(crate) fn request(&self, queue: &str, ready: Ready) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        match pending.get_mut(queue) {
            Some(r) => *r = r.merge(ready),
            None => {
                pending.insert(queue.to_string(), ready);
            }
        }
        drop(pending);
        // Stores a permit when the sender is busy, so it loops once more.
        self.kick.notify_one();
    }

    /// The payloads of every NOTIFY asked for since the last round.
    fn take(&self) -> Vec<String> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *pending)
            .into_iter()
            .map(|(queue, ready)| ready.payload(&queue))
            .collect()
    }
}

/// The sender of `notifier`'s requests on `channel`, over a connection of
/// `pool`: runs until the store's background tasks are aborted.
pub(crate) async fn run(notifier: Arc<Notifier>, pool: Pool, channel: String) {
    let mut last_round: Option<Instant> = None;
    loop {
        notifier.kick.notified().await;
        if let Some(last) = last_round {
            tokio::time::sleep_until(last + MIN_GAP).await;
        }
        let queues = notifier.take();
        if queues.is_empty() {
            continue;
        }
        last_round = Some(Instant::now());
        if let Err(e) = send(&pool, &channel, &queues).await {
            tracing::warn!(error = %e, "could not notify waiting claimers; they will poll");
            tokio::time::sleep(RETRY).await;
        }
    }
}

async fn send(pool: &Pool, channel: &str, queues: &[String]) -> Result<(), spool_core::StoreError> {
    let client = pool.get().await.map_err(error::pool)?;
    client
        .batch_execute(&round(channel, queues))
        .await
        .map_err(error::db)
}

/// One round as a simple query. Channel and queue names are validated
/// names (`[a-z0-9_.]`, `[A-Za-z0-9._:-]`), so quoting cannot be escaped;
/// quotes are doubled anyway.
fn round(channel: &str, queues: &[String]) -> String {
    let literal = |s: &str| format!("'{}'", s.replace('\'', "''"));
    let channel = literal(channel);
    let notifies: Vec<String> = queues
        .iter()
        .map(|q| format!("pg_notify({channel}, {})", literal(q)))
        .collect();
    format!(
        "SET LOCAL synchronous_commit = off; SELECT {}",
        notifies.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_one_implicit_transaction_without_a_flush() {
        let sql = round("jobs.ready", &["a".into(), "it's".into()]);
        assert_eq!(
            sql,
            "SET LOCAL synchronous_commit = off; \
             SELECT pg_notify('jobs.ready', 'a'), pg_notify('jobs.ready', 'it''s')"
        );
    }
}
