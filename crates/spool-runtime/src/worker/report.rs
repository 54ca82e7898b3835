//! Telling the store how a run ended: ack (through the acker), fail, snooze
//! or release, under the run's lease token.
//!
//! A store that is unavailable is asked again, with the error backoff, while
//! the lease lasts; after that the store's own lease expiry takes over (the
//! task runs again). A refusal (`lease_lost`: the lease ran out first;
//! `not_found`: the task was cancelled) is logged and is final.

use std::future::Future;

use spool_core::{Ack, FailRequest, LeaseToken, StoreError, Task, TaskId, TaskResult, Timestamp};
use tokio::time::Instant;

use super::acker::QueuedAck;
use super::pool::Pool;
use crate::backoff::ErrorBackoff;

pub(crate) struct Reporter<'a> {
    pub pool: &'a Pool,
    pub id: TaskId,
    pub token: LeaseToken,
    /// The lease's expiry here.
    pub expires: Instant,
}

impl Reporter<'_> {
    /// Acks through the acker's batches; an ack with a result, which
    /// `ack_many` does not carry, goes on its own.
    pub(crate) async fn ack(&self, result: Option<TaskResult>) {
        let store = &self.pool.shared.store;
        let direct = match result {
            Some(r) => Ack::Result(r),
            None => {
                let ack = QueuedAck {
                    id: self.id,
                    token: self.token,
                    expires: self.expires,
                };
                if self.pool.shared.acks.send(ack).await.is_ok() {
                    return;
                }
                // The acker is gone (the worker was dropped).
                Ack::Done
            }
        };
        self.persist("ack", || store.ack(self.id, self.token, direct.clone()))
            .await;
    }

    pub(crate) async fn fail(&self, req: FailRequest) -> Option<Task> {
        let store = &self.pool.shared.store;
        self.persist("record the failure", || {
            store.fail(self.id, self.token, req.clone())
        })
        .await
    }

    pub(crate) async fn snooze(&self, run_at: Timestamp) -> bool {
        let store = &self.pool.shared.store;
        self.persist("snooze", || store.snooze(self.id, self.token, run_at))
            .await
            .is_some()
    }

    pub(crate) async fn release(&self) -> bool {
        let store = &self.pool.shared.store;
        self.persist("release", || store.release(self.id, self.token))
            .await
            .is_some()
    }

    async fn persist<T, F, Fut>(&self, what: &str, mut call: F) -> Option<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, StoreError>>,
    {
        let mut backoff = ErrorBackoff::new();
        loop {
            match call().await {
                Ok(v) => return Some(v),
                Err(e @ StoreError::Unavailable(_)) => {
                    let wait = backoff.next_delay();
                    if Instant::now() + wait >= self.expires {
                        tracing::warn!(error = %e, "could not {what} before the lease ran out; the task will run again");
                        return None;
                    }
                    tracing::warn!(error = %e, retry_in = ?wait, "could not {what}");
                    tokio::time::sleep(wait).await;
                }
                Err(e @ (StoreError::LeaseLost | StoreError::NotFound)) => {
                    tracing::warn!(error = %e, "could not {what}: the lease ran out or the task is gone");
                    return None;
                }
                Err(e) => {
                    tracing::error!(error = %e, "could not {what}");
                    return None;
                }
            }
        }
    }
}
