//! What the commands share: checking a lease, numbering a failure, and
//! writing a task's settlement or ending with what follows from it.

use spool_core::deps::Ending;
use spool_core::transition;
use spool_core::{LeaseToken, StoreError, TaskId, TaskResult, Timestamp};

use crate::core::Core;
use crate::ops::{Failure, Next, Op, Settlement};
use crate::state::TaskView;

/// Where a task goes after a failure or an expired lease, as the log says it.
pub(super) fn next_of(n: transition::Next) -> Next {
    match n {
        transition::Next::RetryAt(at) => Next::Waiting(at),
        transition::Next::Dead => Next::Dead,
    }
}

impl Core {
    /// Checks that the task's lease under `token` is still valid now.
    pub(super) fn valid_lease(&mut self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let now = self.now();
        self.valid_lease_at(id, token, now)
    }

    pub(super) fn valid_lease_at(
        &self,
        id: TaskId,
        token: LeaseToken,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let lease = self.state.leased(id.0, token)?;
        if lease.expires_at > now {
            Ok(())
        } else {
            Err(StoreError::LeaseLost)
        }
    }

    /// Task `id`'s next failure, numbered after those it has recorded.
    pub(super) fn failure(&self, id: u64, attempt: u32, message: String) -> Failure {
        let recorded = self.state.tasks.extra(id).map_or(0, |x| x.failures);
        Failure {
            attempt,
            number: Some(recorded + 1),
            message,
        }
    }

    pub(super) fn settle_one(&mut self, s: Settlement) {
        let now = self.now();
        self.commit_settle(now, vec![s]);
    }

    /// Commits settlements, with what those that go dead do to the tasks
    /// waiting for them (docs/spec.md §3.2).
    pub(super) fn commit_settle(&mut self, now: Timestamp, tasks: Vec<Settlement>) {
        let dead = tasks
            .iter()
            .filter(|s| s.next == Next::Dead)
            .map(|s| (s.id, Ending::Failed));
        let follow = self.state.follow(dead);
        self.commit(Op::Settle { now, tasks, follow });
    }

    /// Deletes tasks that ended as `ending` (acked: completed; cancelled:
    /// failed), with what that does to the tasks waiting for them; `result`
    /// is a single ack's result, logged only when a task waits for it.
    pub(super) fn commit_delete(
        &mut self,
        now: Timestamp,
        ids: Vec<u64>,
        ending: Ending,
        result: Option<TaskResult>,
    ) {
        let follow = self.state.follow(ids.iter().map(|&id| (id, ending)));
        let results = match (result, ids.as_slice()) {
            (Some(r), &[id]) if !follow.is_empty() => vec![(id, r)],
            _ => Vec::new(),
        };
        self.commit(Op::Delete {
            now,
            ids,
            follow,
            results,
        });
    }

    pub(super) fn view_or_missing(&self, id: u64) -> Result<TaskView, StoreError> {
        self.state
            .view(id)
            .ok_or_else(|| StoreError::Internal(format!("task {id} vanished during an update")))
    }
}
