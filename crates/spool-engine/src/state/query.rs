//! Read-only questions about state: one task, a page of tasks, statistics.

use std::cmp::Reverse;

use bytes::Bytes;
use spool_core::groups::{busiest_first, GroupStats};
use spool_core::{
    Lease, LeaseToken, ListOrder, ListRequest, Payload, QueueName, QueueStats, StoreError, Task,
    TaskId, TaskState, Timestamp,
};

use super::{front, Entry, PayloadRef, QueueState, State};

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

/// (attempt, id): a list page's sort key, and what its cursor holds.
type PageKey = (u32, u64);

/// A task as the API shows it, but for its payload, still in the log: the
/// engine handle reads it once the answer is durable, off the core thread.
#[derive(Debug)]
pub(crate) struct TaskView {
    pub task: Task,
    pub payload: PayloadRef,
    /// The payload itself where the core still held it: a task handed to a
    /// waiting claim in the loop turn that enqueued it needs no read.
    pub in_hand: Option<Bytes>,
}

/// Ready tasks a list page looks at before it answers with what it found
/// and a cursor to go on: listing ready tasks walks the task table (they
/// have no per-state id set), and the core must not stall on a small queue
/// beside a big one.
const READY_SCAN: usize = 100_000;

impl State {
    /// The task as the API shows it (payload still to load).
    pub(crate) fn view(&self, id: u64) -> Option<TaskView> {
        let e = self.tasks.get(id)?;
        let x = self.tasks.extra(id);
        let queue = self.queue(e.queue());
        Some(TaskView {
            task: Task {
                id: TaskId(id),
                queue: queue.name.clone(),
                kind: self.kinds[e.kind() as usize].clone(),
                payload: Payload {
                    format: e.format(),
                    bytes: Default::default(),
                },
                priority: e.priority,
                run_at: e.run_at,
                key: x.and_then(|x| x.key.clone()),
                attempt: e.attempt,
                max_attempts: e.max_attempts,
                lease_ms: x.and_then(|x| x.lease_ms),
                state: e.state,
                lease: x.and_then(|x| x.lease.as_ref()).map(|l| Lease {
                    owner: l.owner.to_string(),
                    token: LeaseToken(l.token),
                    expires_at: l.expires_at,
                }),
                errors: x.map(|x| x.errors.clone()).unwrap_or_default(),
                created_at: e.created_at,
                updated_at: x.map_or(e.created_at, |x| x.updated_at),
                traceparent: x.and_then(|x| x.traceparent.as_deref()).map(String::from),
                group: self.group_of(id).cloned(),
                deps: x.and_then(|x| x.deps.clone()),
            },
            payload: e.payload,
            in_hand: None,
        })
    }

    pub(crate) fn list(
        &self,
        req: &ListRequest,
    ) -> Result<(Vec<TaskView>, Option<String>), StoreError> {
        req.validate()?;
        let cursor = req.cursor.as_deref().map(Cursor::parse).transpose()?;
        let Some(q) = self.queue_of(&req.queue) else {
            return Ok((Vec::new(), None));
        };
        let states: Vec<TaskState> = match req.state {
            Some(s) => vec![s],
            None => TaskState::ALL.to_vec(),
        };
        let want = req.limit + 1;
        let (mut page, scanned_to) = match (req.order, cursor) {
            (ListOrder::Id, c @ (None | Some(Cursor::Id(_)))) => {
                let after = match c {
                    Some(Cursor::Id(id)) => id.saturating_add(1),
                    _ => 0,
                };
                let (ids, scanned_to) = self.ids_in_states(q, &states, after, want, |_| true);
                (
                    ids.into_iter().map(|id| (0, id)).collect::<Vec<_>>(),
                    scanned_to,
                )
            }
            (ListOrder::AttemptsDesc, c @ (None | Some(Cursor::Attempts(..)))) => {
                let after = match c {
                    Some(Cursor::Attempts(a, id)) => Some((Reverse(a), id)),
                    _ => None,
                };
                self.by_attempts_page(q, &states, after, want)
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
            scanned_to.map(|(a, id)| match req.order {
                ListOrder::Id => Cursor::Id(id).render(),
                ListOrder::AttemptsDesc => Cursor::Attempts(a, id).render(),
            })
        };
        Ok((
            page.iter().filter_map(|&(_, id)| self.view(id)).collect(),
            next_cursor,
        ))
    }

    /// Up to `want` ids of queue `q` in `states`, from id `after` on, in id
    /// order, that pass `keep`; and, if the ready walk stopped on its scan
    /// budget, the (0, id) to resume after.
    fn ids_in_states(
        &self,
        q: u32,
        states: &[TaskState],
        after: u64,
        want: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> (Vec<u64>, Option<PageKey>) {
        let queue = self.queue(q);
        let mut ids: Vec<u64> = Vec::new();
        for s in states.iter().filter(|s| **s != TaskState::Ready) {
            ids.extend(
                queue.members[s.index()]
                    .range(after..)
                    .filter(|&&id| self.tasks.get(id).is_some_and(&keep))
                    .take(want),
            );
        }
        let mut stopped = None;
        if states.contains(&TaskState::Ready) {
            let mut found = 0;
            for (n, (id, e)) in self.tasks.ids_from(after).enumerate() {
                if found == want {
                    break;
                }
                if n == READY_SCAN {
                    stopped = Some((0, id.saturating_sub(1)));
                    break;
                }
                if e.queue() == q && e.state == TaskState::Ready && keep(e) {
                    ids.push(id);
                    found += 1;
                }
            }
        }
        ids.sort_unstable();
        ids.truncate(want);
        if let Some((_, at)) = stopped {
            // Ids past where the ready walk stopped wait for the next page.
            ids.retain(|&id| id <= at);
        }
        let short = ids.len() < want;
        (ids, stopped.filter(|_| short))
    }

    /// Attempts-descending: tasks claimed at least once from the queue's
    /// attempts index, then never-claimed tasks in id order.
    fn by_attempts_page(
        &self,
        q: u32,
        states: &[TaskState],
        after: Option<(Reverse<u32>, u64)>,
        want: usize,
    ) -> (Vec<PageKey>, Option<PageKey>) {
        let queue = self.queue(q);
        let in_states = |id: &u64| {
            self.tasks
                .get(*id)
                .is_some_and(|e| states.contains(&e.state))
        };
        let mut page: Vec<(u32, u64)> = Vec::new();
        if after.is_none_or(|(Reverse(a), _)| a > 0) {
            let from = after.map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
            page.extend(
                queue
                    .by_attempts
                    .range((from, std::ops::Bound::Unbounded))
                    .filter(|(_, id)| in_states(id))
                    .take(want)
                    .map(|&(Reverse(a), id)| (a, id)),
            );
        }
        if page.len() >= want {
            return (page, None);
        }
        let after_id = match after {
            Some((Reverse(0), id)) => id.saturating_add(1),
            _ => 0,
        };
        let (ids, stopped) =
            self.ids_in_states(q, states, after_id, want - page.len(), |e| e.attempt == 0);
        page.extend(ids.into_iter().map(|id| (0, id)));
        (page, stopped)
    }

    pub(crate) fn stats(&self, now: Timestamp) -> Vec<QueueStats> {
        let mut out: Vec<QueueStats> = self
            .queues
            .iter()
            .enumerate()
            .map(|(q, queue)| QueueStats {
                name: queue.name.clone(),
                paused: queue.settings.paused,
                counts: queue.counts,
                kinds: queue
                    .kinds
                    .iter()
                    .filter(|(_, c)| c.total() > 0)
                    .map(|(&k, &c)| (self.kinds[k as usize].clone(), c))
                    .collect(),
                oldest_ready_age: QueueState::oldest_ready_age(self.lane_heads(q as u32), now),
                rate_tokens: queue.rate_tokens(now),
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The earliest ready run_at of each lane of queue `q`, its groups'
    /// included.
    fn lane_heads(&self, q: u32) -> impl Iterator<Item = Timestamp> + '_ {
        let queue = self.queue(q);
        std::iter::once(&queue.ready)
            .chain(queue.groups.indexes())
            .flat_map(move |index| front::heads(&self.tasks, index, q))
    }

    /// Queue `queue`'s groups with tasks waiting or leased, busiest first.
    pub(crate) fn groups(
        &self,
        queue: &QueueName,
        limit: usize,
        now: Timestamp,
    ) -> Result<Vec<GroupStats>, StoreError> {
        spool_core::groups::validate_limit(limit)?;
        let Some(q) = self.queue_of(queue) else {
            return Ok(Vec::new());
        };
        let queue = self.queue(q);
        let rate = queue.settings.group_rate_limit.as_ref();
        Ok(busiest_first(queue.groups.stats(rate, now), limit))
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
