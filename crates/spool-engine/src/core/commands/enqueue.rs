//! Enqueue: new tasks, their dependencies and keys, and the payloads
//! parked claims are about to be handed.

use std::collections::HashMap;

use spool_core::deps::{self, Ending, Outcome};
use spool_core::task::RunAt;
use spool_core::{
    EnqueueOutcome, Kind, NewTask, Parent, QueueName, QueueSettings, StoreError, TaskId, TaskKey,
};

use crate::core::Core;
use crate::ops::{NewDeps, NewEntry, Op};

/// Most pending tasks that may wait for one task: what its ending does to
/// them goes in the one log record that ends it (21 bytes each).
const MAX_WAITING: usize = 100_000;

/// Refuses a parent named by an id this store has not assigned before the
/// batch (`first_id` is the batch's first).
fn check_named_parents(after: &[Parent], first_id: TaskId) -> Result<(), StoreError> {
    let named: Vec<TaskId> = after
        .iter()
        .filter_map(|p| match p {
            Parent::Task(id) => Some(*id),
            Parent::InBatch(_) => None,
        })
        .collect();
    deps::check_assigned(&named, first_id)
}

impl Core {
    pub(crate) fn enqueue(
        &mut self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        spool_core::store::validate_batch(&tasks)?;
        let now = self.now();
        let q = self.state.queue_of(queue);
        if q.is_none() && self.settings.strict_queues {
            return Err(StoreError::QueueNotFound(queue.clone()));
        }
        let default_kind = Kind::from(queue);
        let kinds = tasks
            .iter()
            .map(|t| t.kind.as_ref().unwrap_or(&default_kind));
        self.state.admit(queue, kinds)?;
        let defaults = QueueSettings::default();
        let settings = q.map_or(&defaults, |q| &self.state.queue(q).settings);
        // What the record will take: per task its payload, key and kind
        // (the queue's name when it has none) plus the fixed fields (44
        // bytes, rounded up) and its parents (each at most twice: named,
        // and still awaited), and the record's own header and queue name.
        let encoded: usize = tasks
            .iter()
            .map(|t| {
                t.payload.len()
                    + t.key.as_ref().map_or(0, |k| k.as_str().len())
                    + t.kind
                        .as_ref()
                        .map_or(queue.as_str().len(), |k| k.as_str().len())
                    + 64
                    + 16 * t.after.len()
            })
            .sum::<usize>()
            + 256
            + queue.as_str().len();
        if encoded > spool_wal::MAX_RECORD_LEN {
            // One request is one log record; a record past the log's limit
            // would fail its write and stop the engine.
            return Err(StoreError::bad_request(format!(
                "this batch's payloads take {encoded} bytes; a batch holds at most {} \
                 (split it)",
                spool_wal::MAX_RECORD_LEN
            )));
        }
        let first_id = self.state.next_id;
        for t in &tasks {
            check_named_parents(&t.after, TaskId(first_id))?;
        }
        let mut next_id = first_id;
        let mut outcomes: Vec<EnqueueOutcome> = Vec::with_capacity(tasks.len());
        let mut entries = Vec::with_capacity(tasks.len());
        let mut batch_keys: HashMap<TaskKey, u64> = HashMap::new();
        let mut cancelled_here: Vec<u64> = Vec::new();
        // Each position's id so far, for parents named by position.
        let mut batch_ids: Vec<TaskId> = Vec::with_capacity(tasks.len());
        for t in tasks {
            let size = t.payload.len() as u64;
            if size > settings.max_payload {
                return Err(StoreError::PayloadTooLarge {
                    size,
                    max: settings.max_payload,
                });
            }
            if let Some(key) = &t.key {
                let existing = batch_keys
                    .get(key)
                    .copied()
                    .or_else(|| q.and_then(|q| self.state.queue(q).keys.dedup(key, now)));
                if let Some(id) = existing {
                    outcomes.push(EnqueueOutcome {
                        id: TaskId(id),
                        duplicate: true,
                    });
                    batch_ids.push(TaskId(id));
                    continue;
                }
                batch_keys.insert(key.clone(), next_id);
            }
            let run_at = match t.run_at {
                RunAt::Now => now,
                RunAt::At(at) => at,
                RunAt::After(d) => now.plus(d),
            };
            let deps = self.new_deps(&t, &batch_ids, first_id, &cancelled_here)?;
            if deps.as_ref().is_some_and(|d| d.cancelled) {
                cancelled_here.push(next_id);
            }
            outcomes.push(EnqueueOutcome {
                id: TaskId(next_id),
                duplicate: false,
            });
            batch_ids.push(TaskId(next_id));
            entries.push(NewEntry {
                id: next_id,
                kind: t.kind.unwrap_or_else(|| Kind::from(queue)),
                payload: t.payload,
                priority: t.priority,
                run_at,
                key: t.key,
                max_attempts: t.max_attempts.unwrap_or(settings.max_attempts),
                lease_ms: t.lease_ms,
                traceparent: t.traceparent,
                group: t.group,
                deps,
            });
            next_id += 1;
        }
        if !entries.is_empty() {
            let op = Op::Enqueue {
                now,
                queue: queue.clone(),
                tasks: entries,
            };
            self.commit_ref(&op);
            let wanted = self.waiters.wanted(queue);
            if let (Op::Enqueue { tasks, .. }, true) = (op, wanted > 0) {
                // A waiting claim takes from the front, where a queue that
                // had waiters (it was empty) now has these tasks.
                self.keep_fresh(tasks.into_iter().take(wanted));
            }
        }
        Ok(outcomes)
    }

    /// A new task's dependencies: its parents resolved (positions in the
    /// batch to the ids `batch` holds for them) and how each stands now.
    /// Tasks of this batch (ids from `first_id` on) are live unless
    /// cancelled at enqueue. Refuses a parent that as many tasks as one
    /// may have wait for it already do ([`MAX_WAITING`]).
    fn new_deps(
        &self,
        t: &NewTask,
        batch: &[TaskId],
        first_id: u64,
        cancelled_here: &[u64],
    ) -> Result<Option<Box<NewDeps>>, StoreError> {
        if t.after.is_empty() {
            return Ok(None);
        }
        let after = deps::resolve(&t.after, batch);
        if let Some(p) = after
            .iter()
            .find(|p| self.state.waiting_for(p.0) >= MAX_WAITING)
        {
            return Err(StoreError::bad_request(format!(
                "{MAX_WAITING} tasks wait for task {p} already, the most one may have"
            )));
        }
        let settled = deps::at_enqueue(after, t.if_parent_fails, |p| {
            if p.0 < first_id {
                self.state.ending_of(p.0)
            } else if cancelled_here.contains(&p.0) {
                Some(Ending::Failed)
            } else {
                None
            }
        });
        Ok(settled.map(|(deps, outcome)| {
            Box::new(NewDeps {
                deps,
                cancelled: outcome == Outcome::Cancelled,
            })
        }))
    }

    /// Keeps the payloads of tasks parked claims are about to get (up to
    /// [`crate::core::FRESH_MAX_BYTES`] a turn).
    fn keep_fresh(&mut self, entries: impl Iterator<Item = NewEntry>) {
        for e in entries {
            if self.fresh_bytes + e.payload.len() > crate::core::FRESH_MAX_BYTES {
                return;
            }
            self.fresh_bytes += e.payload.len();
            self.fresh.push((e.id, e.payload.bytes));
        }
    }
}
