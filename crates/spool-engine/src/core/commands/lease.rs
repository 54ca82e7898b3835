//! What a lease holder does with its task (ack, fail, release, snooze,
//! extend), the leases a holder asks about, and leases that run out.

use std::time::Duration;

use spool_core::deps::Ending;
use spool_core::transition::{self, after_failure, after_lease_expiry, LEASE_EXPIRED};
use spool_core::{backoff, Ack, FailRequest, LeaseToken, StoreError, TaskId, Timestamp};

use super::commit::next_of;
use crate::core::Core;
use crate::ops::{Next, Op, Settlement};
use crate::state::TaskView;

/// Ids per delete record (8 bytes each: far below the record limit).
const DELETE_SLICE: usize = 1 << 20;

impl Core {
    pub(crate) fn ack(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        ack: Ack,
    ) -> Result<(), StoreError> {
        self.valid_lease(id, token)?;
        let result = match ack {
            Ack::Reschedule(at) => {
                self.settle_one(Settlement {
                    id: id.0,
                    attempt: 0,
                    next: Next::Waiting(at),
                    error: None,
                });
                return Ok(());
            }
            Ack::Done => None,
            Ack::Result(r) => Some(r),
        };
        let now = self.now();
        self.commit_delete(now, vec![id.0], Ending::Completed, result);
        Ok(())
    }

    pub(crate) fn ack_many(
        &mut self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let now = self.now();
        let mut ids = Vec::with_capacity(acks.len());
        let results = acks
            .into_iter()
            .map(|(id, token)| {
                let r = self.valid_lease_at(id, token, now);
                if r.is_ok() {
                    ids.push(id.0);
                }
                r
            })
            .collect();
        // The same ack twice in one call succeeds twice and deletes once.
        ids.sort_unstable();
        ids.dedup();
        // A library caller may ack millions at once: one record each slice,
        // so none outgrows the log's record limit.
        for slice in ids.chunks(DELETE_SLICE) {
            self.commit_delete(now, slice.to_vec(), Ending::Completed, None);
        }
        Ok(results)
    }

    pub(crate) fn fail(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<TaskView, StoreError> {
        self.valid_lease(id, token)?;
        let now = self.now();
        let (attempt, max_attempts, q) = match self.state.tasks.get(id.0) {
            Some(e) => (e.attempt, e.max_attempts, e.queue()),
            None => return Err(StoreError::NotFound),
        };
        let settings = &self.state.queue(q).settings;
        let delay = backoff::delay(attempt, settings.backoff_base, settings.backoff_max);
        let next = after_failure(attempt, max_attempts, req.discard, req.retry_at, now, delay);
        let message = transition::truncate_message(&req.message).to_string();
        let error = self.failure(id.0, attempt, message);
        self.settle_one(Settlement {
            id: id.0,
            attempt,
            next: next_of(next),
            error: Some(error),
        });
        self.view_or_missing(id.0)
    }

    /// Gives the task back without counting the attempt, to run at `run_at`.
    fn give_back(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        run_at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        self.valid_lease(id, token)?;
        let attempt = self
            .state
            .tasks
            .get(id.0)
            .map_or(0, |e| e.attempt.saturating_sub(1));
        let now = self.now();
        self.settle_one(Settlement {
            id: id.0,
            attempt,
            next: Next::Waiting(run_at.unwrap_or(now)),
            error: None,
        });
        Ok(())
    }

    pub(crate) fn release(&mut self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.give_back(id, token, None)
    }

    pub(crate) fn snooze(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<TaskView, StoreError> {
        self.give_back(id, token, Some(run_at))?;
        self.view_or_missing(id.0)
    }

    pub(crate) fn extend(
        &mut self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<TaskView, StoreError> {
        if lease.is_zero() {
            return Err(StoreError::bad_request("lease_ms must be at least 1"));
        }
        self.valid_lease(id, token)?;
        let now = self.now();
        self.commit(Op::Extend {
            now,
            id: id.0,
            expires_at: now.plus(lease),
        });
        self.view_or_missing(id.0)
    }

    /// The leases among `leases` not held now (docs/spec.md §3): a look
    /// that changes nothing.
    pub(crate) fn leases_lost(
        &mut self,
        leases: &[(TaskId, LeaseToken)],
    ) -> Result<Vec<TaskId>, StoreError> {
        self.refuse_if_poisoned()?;
        let now = self.now();
        Ok(leases
            .iter()
            .filter(|&&(id, token)| self.valid_lease_at(id, token, now).is_err())
            .map(|&(id, _)| id)
            .collect())
    }

    /// Expired leases: ready again (the attempt was counted at claim), or
    /// dead on the last attempt, with "lease expired" recorded.
    pub(in crate::core) fn expire_leases(&mut self, now: Timestamp) {
        if !self.can_write() {
            // Logged once there is room; reads derive the state meanwhile.
            return;
        }
        let ids = self.state.expired_leases(now, crate::core::EXPIRY_SLICE);
        if ids.is_empty() {
            return;
        }
        let tasks = ids
            .into_iter()
            .filter_map(|id| Some((id, self.state.tasks.get(id)?)))
            .map(|(id, e)| {
                // Ready since the moment the lease ran out, however late the
                // core noticed: claim order and queue age stay exact.
                let expired_at = self
                    .state
                    .tasks
                    .extra(id)
                    .and_then(|x| x.lease.as_ref())
                    .map_or(now, |l| l.expires_at);
                Settlement {
                    id,
                    attempt: e.attempt,
                    next: next_of(after_lease_expiry(e.attempt, e.max_attempts, expired_at)),
                    error: Some(self.failure(id, e.attempt, LEASE_EXPIRED.to_string())),
                }
            })
            .collect();
        self.commit_settle(now, tasks);
    }
}
