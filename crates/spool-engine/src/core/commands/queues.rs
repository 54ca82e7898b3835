//! A queue's settings: changed, read, paused and resumed.

use spool_core::{QueueChange, QueueName, QueueSettings, StoreError};

use crate::core::Core;
use crate::ops::Op;

impl Core {
    /// The change is applied here, on the core thread, to the settings in
    /// force: no other change of the queue can come in between.
    pub(crate) fn put_queue(
        &mut self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let current = self
            .state
            .queue_of(queue)
            .map_or_else(QueueSettings::default, |q| {
                self.state.queue(q).settings.clone()
            });
        let settings = change.apply(current)?;
        self.state.admit(queue, [])?;
        self.commit(Op::PutQueue {
            queue: queue.clone(),
            settings: settings.clone(),
        });
        Ok(settings)
    }

    pub(crate) fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        self.refuse_if_poisoned()?;
        self.state
            .queue_of(queue)
            .map(|q| self.state.queue(q).settings.clone())
            .ok_or_else(|| StoreError::QueueNotFound(queue.clone()))
    }

    pub(crate) fn set_paused(&mut self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        if self.get_queue(queue)?.paused != paused {
            let change = QueueChange {
                paused: Some(paused),
                ..QueueChange::default()
            };
            self.put_queue(queue, change)?;
        }
        Ok(())
    }
}
