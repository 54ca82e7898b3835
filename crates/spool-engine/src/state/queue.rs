//! One queue's settings and indexes.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::time::Duration;

use hashbrown::HashMap;
use spool_core::{QueueName, QueueSettings, StateCounts, TaskState, Timestamp};

use super::keys::KeyTable;
use super::ready::ReadyIndex;

#[derive(Debug)]
pub(crate) struct QueueState {
    pub name: QueueName,
    pub settings: QueueSettings,
    /// Ready tasks in claim order.
    pub ready: ReadyIndex,
    /// Ids of scheduled, leased and dead tasks, by state index, for listing
    /// a state page by page. Ready tasks are not here (they are most tasks,
    /// and the table lists them in id order itself): that slot stays empty.
    pub members: [BTreeSet<u64>; 4],
    /// Tasks claimed at least once, most attempts first: the admin page's
    /// "failing most" order without a scan of the queue.
    pub by_attempts: BTreeSet<(Reverse<u32>, u64)>,
    pub counts: StateCounts,
    /// Counts per interned kind, for the kinds this queue has.
    pub kinds: HashMap<u32, StateCounts>,
    pub keys: KeyTable,
    /// Set when a task became ready since the core last served waiters.
    pub woken: bool,
}

impl QueueState {
    pub(crate) fn new(name: QueueName, settings: QueueSettings) -> Self {
        QueueState {
            name,
            settings,
            ready: ReadyIndex::default(),
            members: Default::default(),
            by_attempts: BTreeSet::new(),
            counts: StateCounts::default(),
            kinds: HashMap::new(),
            keys: KeyTable::default(),
            woken: false,
        }
    }

    pub(crate) fn count(&mut self, kind: u32, state: TaskState, delta: i64) {
        let apply = |n: &mut u64| *n = n.saturating_add_signed(delta);
        apply(self.counts.slot(state));
        let counts = self.kinds.entry(kind).or_default();
        apply(counts.slot(state));
        if counts.total() == 0 {
            self.kinds.remove(&kind);
        }
    }

    /// How long the longest-waiting ready task has been claimable, given
    /// each lane's head (`heads` yields the earliest run_at per lane).
    pub(crate) fn oldest_ready_age(
        heads: impl Iterator<Item = Timestamp>,
        now: Timestamp,
    ) -> Option<Duration> {
        heads.min().map(|t| now.since(t))
    }
}
