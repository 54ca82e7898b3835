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
//! Invariant: a request made after a commit leads to a NOTIFY sent after
//! that commit — the pending set is taken only by the sender, which
//! starts its transaction after taking it.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;

use crate::error;
use crate::store::Shared;

/// How long the sender rests after a failure (the database is down);
/// waiters poll meanwhile.
const RETRY: Duration = Duration::from_millis(200);

/// Queues that need a NOTIFY, and the sender's doorbell.
#[derive(Debug, Default)]
pub(crate) struct Notifier {
    // A std mutex: held for a set operation, never across an await.
    pending: Mutex<BTreeSet<String>>,
    kick: Notify,
}

impl Notifier {
    /// Asks for a NOTIFY of `queue` soon. Never waits.
    pub(crate) fn request(&self, queue: &str) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if !pending.contains(queue) {
            pending.insert(queue.to_string());
        }
        drop(pending);
        // Stores a permit when the sender is busy, so it loops once more.
        self.kick.notify_one();
    }

    fn take(&self) -> Vec<String> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut *pending).into_iter().collect()
    }
}

/// The sender: runs until the store's background tasks are aborted.
pub(crate) async fn run(shared: Arc<Shared>) {
    loop {
        shared.notifier.kick.notified().await;
        let queues = shared.notifier.take();
        if queues.is_empty() {
            continue;
        }
        if let Err(e) = send(&shared, &queues).await {
            tracing::warn!(error = %e, "could not notify waiting claimers; they will poll");
            tokio::time::sleep(RETRY).await;
        }
    }
}

async fn send(shared: &Shared, queues: &[String]) -> Result<(), spool_core::StoreError> {
    let mut client = shared.client().await?;
    let tx = client.transaction().await.map_err(error::db)?;
    tx.batch_execute("SET LOCAL synchronous_commit = off")
        .await
        .map_err(error::db)?;
    tx.query(&shared.sql.notify, &[&queues])
        .await
        .map_err(error::db)?;
    tx.commit().await.map_err(error::db)
}
