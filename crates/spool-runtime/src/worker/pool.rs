//! One queue's pool: its slots and handlers, shared by the queue's
//! acquisition loop ([`super::acquire`]) and the runs it starts
//! ([`super::run`]). The slots bound how many of the queue's tasks run at
//! once; a claim asks for as many tasks as it holds free slots.

use std::collections::HashMap;
use std::sync::Arc;

use spool_core::store::MAX_CLAIM;
use spool_core::{Kind, QueueName};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{QueueConfig, Shared};
use crate::handler::ErasedHandler;
use crate::metrics::QueueMetrics;

pub(crate) struct Pool {
    pub queue: QueueName,
    pub config: QueueConfig,
    pub handlers: HashMap<Kind, Arc<dyn ErasedHandler>>,
    pub metrics: QueueMetrics,
    pub shared: Arc<Shared>,
    slots: Arc<Semaphore>,
}

impl Pool {
    pub(crate) fn new(
        queue: QueueName,
        config: QueueConfig,
        handlers: HashMap<Kind, Arc<dyn ErasedHandler>>,
        metrics: QueueMetrics,
        shared: Arc<Shared>,
    ) -> Self {
        let slots = Arc::new(Semaphore::new(config.concurrency));
        Pool {
            queue,
            config,
            handlers,
            metrics,
            shared,
            slots,
        }
    }

    pub(crate) fn concurrency(&self) -> usize {
        self.config.concurrency
    }

    pub(crate) fn slots(&self) -> &Semaphore {
        &self.slots
    }

    /// Waits for `at_least` free slots, then takes every other free one too
    /// (up to a claim's maximum).
    pub(super) async fn free_slots(&self, at_least: u32) -> Option<OwnedSemaphorePermit> {
        let mut permit = self.slots.clone().acquire_many_owned(at_least).await.ok()?;
        let more = self
            .slots
            .available_permits()
            .min(MAX_CLAIM as usize - permit.num_permits());
        if more > 0 {
            if let Ok(p) = self.slots.clone().try_acquire_many_owned(more as u32) {
                permit.merge(p);
            }
        }
        Some(permit)
    }

    /// Free slots a claim beside one in flight needs.
    pub(super) fn second_claim_size(&self) -> u32 {
        let half = (self.config.concurrency / 2).max(1);
        half.min(MAX_CLAIM as usize) as u32
    }
}
