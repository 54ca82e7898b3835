//! Reads and edits of any task, whoever holds it: update, cancel, get,
//! retry, list, stats and groups.

use spool_core::deps::Ending;
use spool_core::groups::GroupStats;
use spool_core::{
    ListRequest, QueueName, QueueStats, StoreError, TaskId, TaskPatch, TaskRef, TaskState,
};

use crate::core::Core;
use crate::ops::{Next, Op, Settlement};
use crate::state::TaskView;

/// Tasks per settle record when many change at once.
const SETTLE_SLICE: usize = 4096;

impl Core {
    pub(crate) fn update(
        &mut self,
        task: TaskRef,
        patch: TaskPatch,
    ) -> Result<TaskView, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let id = self.state.find(&task)?;
        let (state, q) = match self.state.tasks.get(id) {
            Some(e) => (e.state, e.queue()),
            None => return Err(StoreError::NotFound),
        };
        if state == TaskState::Leased {
            return Err(StoreError::LeaseHeld);
        }
        if let Some(p) = &patch.payload {
            let max = self.state.queue(q).settings.max_payload;
            if p.len() as u64 > max {
                return Err(StoreError::PayloadTooLarge {
                    size: p.len() as u64,
                    max,
                });
            }
        }
        let now = self.now();
        self.commit(Op::Update { now, id, patch });
        self.view_or_missing(id)
    }

    pub(crate) fn cancel(&mut self, task: TaskRef) -> Result<(), StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let id = self.state.find(&task)?;
        let now = self.now();
        self.commit_delete(now, vec![id], Ending::Failed, None);
        Ok(())
    }

    pub(crate) fn get(&self, task: TaskRef) -> Result<TaskView, StoreError> {
        self.refuse_if_poisoned()?;
        let id = self.state.find(&task)?;
        self.state.view(id).ok_or(StoreError::NotFound)
    }

    pub(crate) fn retry(&mut self, id: TaskId) -> Result<TaskView, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let state = self.state.tasks.get(id.0).map(|e| e.state);
        if state.is_none() {
            return Err(StoreError::NotFound);
        }
        if state != Some(TaskState::Dead) {
            return Err(StoreError::bad_request("only a dead task can be retried"));
        }
        let now = self.now();
        self.settle_one(Settlement {
            id: id.0,
            attempt: 0,
            next: Next::Waiting(now),
            error: None,
        });
        self.view_or_missing(id.0)
    }

    pub(crate) fn retry_dead(&mut self, queue: &QueueName) -> Result<u64, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let q = self
            .state
            .queue_of(queue)
            .ok_or_else(|| StoreError::QueueNotFound(queue.clone()))?;
        let now = self.now();
        let dead: Vec<u64> = self.state.queue(q).members[TaskState::Dead.index()]
            .iter()
            .copied()
            .collect();
        // One record per slice: a queue of millions of dead tasks must not
        // make one record over the log's size limit.
        for ids in dead.chunks(SETTLE_SLICE) {
            let tasks = ids
                .iter()
                .map(|&id| Settlement {
                    id,
                    attempt: 0,
                    next: Next::Waiting(now),
                    error: None,
                })
                .collect();
            self.commit_settle(now, tasks);
        }
        Ok(dead.len() as u64)
    }

    pub(crate) fn list(
        &self,
        req: ListRequest,
    ) -> Result<(Vec<TaskView>, Option<String>), StoreError> {
        self.refuse_if_poisoned()?;
        self.state.list(&req)
    }

    pub(crate) fn stats(&mut self) -> Result<Vec<QueueStats>, StoreError> {
        self.refuse_if_poisoned()?;
        let now = self.now();
        Ok(self.state.stats(now))
    }

    pub(crate) fn groups(
        &mut self,
        queue: &QueueName,
        limit: usize,
    ) -> Result<Vec<GroupStats>, StoreError> {
        self.refuse_if_poisoned()?;
        let now = self.now();
        self.state.groups(queue, limit, now)
    }
}
