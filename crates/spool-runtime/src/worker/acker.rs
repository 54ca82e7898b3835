//! Acks gathered into `ack_many` calls: one call in flight at a time, taking
//! every ack that arrived meanwhile, so the batch grows with load (the same
//! group-commit idea as the engine's log).
//!
//! A run hands its ack over and frees its slot; the channel is bounded, so a
//! store that cannot keep up holds runs (and so claims) back. An ack call
//! the store could not take is tried again while the leases last; after
//! that the tasks run again (at least once).

use std::sync::Arc;

use spool_core::{LeaseToken, Store, StoreError, TaskId};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::backoff::ErrorBackoff;

/// Acks waiting to be sent, at most.
pub(crate) const CAPACITY: usize = 16_384;
/// Most acks in one call.
const BATCH: usize = 4096;

#[derive(Debug)]
pub(crate) struct QueuedAck {
    pub id: TaskId,
    pub token: LeaseToken,
    /// When the lease runs out here: no point acking after it.
    pub expires: Instant,
}

/// Sends acks until `done` (everything sent before it is flushed) or until
/// every sender is gone.
pub(crate) async fn run(
    store: Arc<dyn Store>,
    mut rx: mpsc::Receiver<QueuedAck>,
    done: CancellationToken,
) {
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        let got = tokio::select! {
            n = rx.recv_many(&mut batch, BATCH) => n,
            () = done.cancelled() => {
                while let Ok(a) = rx.try_recv() {
                    batch.push(a);
                }
                flush(store.as_ref(), &mut batch).await;
                return;
            }
        };
        if got == 0 {
            return;
        }
        flush(store.as_ref(), &mut batch).await;
    }
}

async fn flush(store: &dyn Store, batch: &mut Vec<QueuedAck>) {
    let mut backoff = ErrorBackoff::new();
    while !batch.is_empty() {
        let now = Instant::now();
        batch.retain(|a| a.expires > now);
        if batch.is_empty() {
            tracing::warn!("acks dropped: their leases ran out while the store was unavailable");
            return;
        }
        let items: Vec<_> = batch.iter().map(|a| (a.id, a.token)).collect();
        match store.ack_many(items).await {
            Ok(results) => {
                for (ack, result) in batch.iter().zip(results) {
                    if let Err(e) = result {
                        log_lost(ack.id, &e);
                    }
                }
                batch.clear();
            }
            Err(e @ StoreError::Unavailable(_)) => {
                let wait = backoff.next_delay();
                tracing::warn!(error = %e, acks = batch.len(), retry_in = ?wait, "ack failed");
                tokio::time::sleep(wait).await;
            }
            Err(e) => {
                tracing::error!(error = %e, acks = batch.len(), "ack refused; the tasks will run again");
                batch.clear();
            }
        }
    }
}

fn log_lost(id: TaskId, e: &StoreError) {
    match e {
        // The lease ran out (the task will run again) or the task was
        // cancelled: the work is done either way.
        StoreError::LeaseLost | StoreError::NotFound => {
            tracing::warn!(task = id.0, error = %e, "ack refused")
        }
        _ => tracing::error!(task = id.0, error = %e, "ack failed"),
    }
}
