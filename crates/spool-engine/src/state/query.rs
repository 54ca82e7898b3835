//! Read-only questions about state: one task, a page of tasks, statistics.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use spool_core::{
    Lease, LeaseToken, ListOrder, ListRequest, QueueStats, StoreError, Task, TaskId, TaskPage,
    TaskState, Timestamp,
};

use super::State;

/// Where a list page resumes, encoded as the opaque cursor string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cursor {
    /// Resume after this id (id order).
    Id(u64),
    /// Resume after this (attempt, id) (attempts-descending order).
    Attempts(u32, u64),
}

impl Cursor {
    fn parse(s: &str) -> Result<Cursor, StoreError> {
        let bad = || StoreError::bad_request("invalid cursor");
        let mut parts = s.split(':');
        let c = match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some("i"), Some(id), None, None) => Cursor::Id(id.parse().map_err(|_| bad())?),
            (Some("a"), Some(a), Some(id), None) => Cursor::Attempts(
                a.parse().map_err(|_| bad())?,
                id.parse().map_err(|_| bad())?,
            ),
            _ => return Err(bad()),
        };
        Ok(c)
    }

    fn render(self) -> String {
        match self {
            Cursor::Id(id) => format!("i:{id}"),
            Cursor::Attempts(a, id) => format!("a:{a}:{id}"),
        }
    }
}

impl State {
    /// The task at `slot` as the API shows it.
    pub(crate) fn view(&self, slot: u32) -> Option<Task> {
        let e = self.tasks.get(slot)?;
        let queue = self.queue(e.queue);
        Some(Task {
            id: TaskId(e.id),
            queue: queue.name.clone(),
            kind: self.kinds[e.kind as usize].clone(),
            payload: e.payload.load(),
            priority: e.priority,
            run_at: e.run_at,
            key: e.key.clone(),
            attempt: e.attempt,
            max_attempts: e.max_attempts,
            lease_ms: e.lease_ms,
            state: e.state,
            lease: e.lease.as_ref().map(|l| Lease {
                owner: l.owner.to_string(),
                token: LeaseToken(l.token),
                expires_at: l.expires_at,
            }),
            errors: e.errors.clone(),
            created_at: e.created_at,
            updated_at: e.updated_at,
        })
    }

    pub(crate) fn view_id(&self, id: u64) -> Option<Task> {
        self.view(self.tasks.slot_of(id)?)
    }

    pub(crate) fn list(&self, req: &ListRequest) -> Result<TaskPage, StoreError> {
        req.validate()?;
        let cursor = req.cursor.as_deref().map(Cursor::parse).transpose()?;
        let Some(q) = self.queue_of(&req.queue) else {
            return Ok(TaskPage {
                tasks: Vec::new(),
                next_cursor: None,
            });
        };
        let queue = self.queue(q);
        let states: Vec<TaskState> = match req.state {
            Some(s) => vec![s],
            None => TaskState::ALL.to_vec(),
        };
        let want = req.limit + 1;
        let mut page: Vec<(u32, u64)> = match (req.order, cursor) {
            (ListOrder::Id, c @ (None | Some(Cursor::Id(_)))) => {
                let after = match c {
                    Some(Cursor::Id(id)) => id.saturating_add(1),
                    _ => 0,
                };
                let mut ids: Vec<u64> = states
                    .iter()
                    .flat_map(|s| queue.members[s.index()].range(after..).take(want))
                    .copied()
                    .collect();
                ids.sort_unstable();
                ids.truncate(want);
                ids.into_iter().map(|id| (0, id)).collect()
            }
            (ListOrder::AttemptsDesc, c @ (None | Some(Cursor::Attempts(..)))) => {
                // Key (Reverse(attempt), id) ascending is the page order; a
                // bounded max-heap keeps the `want` smallest keys past the cursor.
                let after = match c {
                    Some(Cursor::Attempts(a, id)) => Some((Reverse(a), id)),
                    _ => None,
                };
                let mut heap: BinaryHeap<(Reverse<u32>, u64)> = BinaryHeap::with_capacity(want + 1);
                for s in &states {
                    for &id in &queue.members[s.index()] {
                        let Some(e) = self.tasks.by_id(id) else {
                            continue;
                        };
                        let k = (Reverse(e.attempt), id);
                        if after.is_some_and(|a| k <= a) {
                            continue;
                        }
                        heap.push(k);
                        if heap.len() > want {
                            heap.pop();
                        }
                    }
                }
                heap.into_sorted_vec()
                    .into_iter()
                    .map(|(Reverse(a), id)| (a, id))
                    .collect()
            }
            _ => return Err(StoreError::bad_request("cursor does not match the order")),
        };
        let next_cursor = if page.len() > req.limit {
            page.truncate(req.limit);
            page.last().map(|&(a, id)| match req.order {
                ListOrder::Id => Cursor::Id(id).render(),
                ListOrder::AttemptsDesc => Cursor::Attempts(a, id).render(),
            })
        } else {
            None
        };
        Ok(TaskPage {
            tasks: page
                .iter()
                .filter_map(|&(_, id)| self.view_id(id))
                .collect(),
            next_cursor,
        })
    }

    pub(crate) fn stats(&self, now: Timestamp) -> Vec<QueueStats> {
        let mut out: Vec<QueueStats> = self
            .queues
            .iter()
            .map(|queue| QueueStats {
                name: queue.name.clone(),
                paused: queue.settings.paused,
                counts: queue.counts,
                kinds: queue
                    .kinds
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.total() > 0)
                    .map(|(k, &c)| (self.kinds[k].clone(), c))
                    .collect(),
                oldest_ready_age: queue.oldest_ready_age(now),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        for c in [Cursor::Id(42), Cursor::Attempts(3, 7)] {
            assert_eq!(Cursor::parse(&c.render()).ok(), Some(c));
        }
        for bad in ["", "i:", "i:x", "a:1", "z:1", "i:1:2", "a:1:2:3"] {
            assert!(Cursor::parse(bad).is_err(), "{bad}");
        }
    }
}
