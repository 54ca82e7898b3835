//! One queue's settings and indexes.

use std::collections::BTreeSet;
use std::time::Duration;

use spool_core::{QueueName, QueueSettings, StateCounts, TaskState, Timestamp};

use super::keys::KeyTable;

/// Claim order: priority (lower first), then run_at, then id.
pub(crate) type ReadyKey = (i16, Timestamp, u64);

#[derive(Debug)]
pub(crate) struct QueueState {
    pub name: QueueName,
    pub settings: QueueSettings,
    /// Ready tasks in claim order.
    pub ready: BTreeSet<ReadyKey>,
    /// Ids per state, for listing a state page by page.
    pub members: [BTreeSet<u64>; 4],
    pub counts: StateCounts,
    /// Counts per interned kind, indexed by kind (kinds are few and dense).
    pub kinds: Vec<StateCounts>,
    pub keys: KeyTable,
    /// Set when a task became ready since the core last served waiters.
    pub woken: bool,
}

impl QueueState {
    pub(crate) fn new(name: QueueName, settings: QueueSettings) -> Self {
        QueueState {
            name,
            settings,
            ready: BTreeSet::new(),
            members: Default::default(),
            counts: StateCounts::default(),
            kinds: Vec::new(),
            keys: KeyTable::default(),
            woken: false,
        }
    }

    pub(crate) fn count(&mut self, kind: u32, state: TaskState, delta: i64) {
        let apply = |n: &mut u64| *n = n.saturating_add_signed(delta);
        apply(self.counts.slot(state));
        let k = kind as usize;
        if self.kinds.len() <= k {
            self.kinds.resize(k + 1, StateCounts::default());
        }
        apply(self.kinds[k].slot(state));
    }

    /// How long the longest-waiting ready task has been claimable.
    ///
    /// The ready set is ordered by priority first, so the earliest run_at of
    /// each priority is that priority's first element: one seek per distinct
    /// priority instead of a scan of every ready task.
    pub(crate) fn oldest_ready_age(&self, now: Timestamp) -> Option<Duration> {
        let mut oldest: Option<Timestamp> = None;
        let mut next = self.ready.first();
        while let Some(&(priority, run_at, _)) = next {
            oldest = Some(oldest.map_or(run_at, |o| o.min(run_at)));
            next = match priority.checked_add(1) {
                Some(p) => self.ready.range((p, Timestamp::MIN, 0)..).next(),
                None => None,
            };
        }
        oldest.map(|t| now.since(t))
    }
}
