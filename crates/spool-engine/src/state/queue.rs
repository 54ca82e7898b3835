//! One queue's settings and indexes, and the claim limits it enforces.
//!
//! A rate-limited queue's token bucket lives here in memory only: it is
//! not logged, so a restart starts it full (docs/spec.md §9). Tasks leased
//! at once are the leased count, which the core keeps current by writing
//! expired leases down before every job.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::time::Duration;

use hashbrown::HashMap;
use spool_core::{QueueName, QueueSettings, StateCounts, TaskState, Timestamp, TokenBucket};

use super::groups::Groups;
use super::keys::KeyTable;
use super::ready::ReadyIndex;

#[derive(Debug)]
pub(crate) struct QueueState {
    pub name: QueueName,
    pub settings: QueueSettings,
    /// Ready tasks without a group in claim order.
    pub ready: ReadyIndex,
    /// The task groups, their ready tasks and their turns.
    pub groups: Groups,
    /// Ids of scheduled, leased, dead and pending tasks, by state index, for listing
    /// a state page by page. Ready tasks are not here (they are most tasks,
    /// and the table lists them in id order itself): that slot stays empty.
    pub members: [BTreeSet<u64>; TaskState::ALL.len()],
    /// Tasks claimed at least once, most attempts first: the admin page's
    /// "failing most" order without a scan of the queue.
    pub by_attempts: BTreeSet<(Reverse<u32>, u64)>,
    pub counts: StateCounts,
    /// Counts per interned kind, for the kinds this queue has.
    pub kinds: HashMap<u32, StateCounts>,
    pub keys: KeyTable,
    /// Set when a task became ready since the core last served waiters.
    pub woken: bool,
    /// The rate limit's tokens; `None` until the limit is first used (a
    /// full bucket).
    bucket: Option<TokenBucket>,
}

impl QueueState {
    pub(crate) fn new(name: QueueName, settings: QueueSettings) -> Self {
        QueueState {
            name,
            settings,
            ready: ReadyIndex::default(),
            groups: Groups::default(),
            members: Default::default(),
            by_attempts: BTreeSet::new(),
            counts: StateCounts::default(),
            kinds: HashMap::new(),
            keys: KeyTable::default(),
            woken: false,
            bucket: None,
        }
    }

    /// How many tasks a claim may take now under the queue's limits.
    pub(crate) fn allowance(&mut self, now: Timestamp) -> u32 {
        let mut n = u32::MAX;
        if let Some(max) = self.settings.max_leased {
            let leased = u32::try_from(self.counts.leased).unwrap_or(u32::MAX);
            n = n.min(max.saturating_sub(leased));
        }
        if let Some(limit) = self.settings.rate_limit {
            let bucket = self
                .bucket
                .get_or_insert_with(|| TokenBucket::full(&limit, now));
            n = n.min(bucket.available(&limit, now));
        }
        n
    }

    /// The whole tokens the rate limit's bucket holds at `now`, if the
    /// queue has one.
    pub(crate) fn rate_tokens(&self, now: Timestamp) -> Option<u32> {
        let limit = self.settings.rate_limit?;
        Some(TokenBucket::left(self.bucket.as_ref(), &limit, now))
    }

    /// Counts `n` tasks a claim took against the rate limit.
    pub(crate) fn took(&mut self, n: u32, now: Timestamp) {
        if let (Some(limit), Some(bucket)) = (self.settings.rate_limit, self.bucket.as_mut()) {
            bucket.take(&limit, now, n);
        }
    }

    /// How long until a rate limit allows another task: the queue's, when
    /// it allows none now, or else the first throttled group's.
    pub(crate) fn refill_in(&mut self, now: Timestamp) -> Option<Duration> {
        let queue = self.settings.rate_limit.and_then(|limit| {
            let bucket = self.bucket.as_mut()?;
            Some(bucket.next_token_in(&limit, now)).filter(|d| !d.is_zero())
        });
        queue.or_else(|| {
            let at = self.groups.next_refill()?;
            Some(at.since(now).max(Duration::from_millis(1)))
        })
    }

    /// Puts the groups whose buckets hold a token again by `now` back in
    /// the claims' turns.
    pub(crate) fn unthrottle_groups(&mut self, now: Timestamp) {
        if self.settings.group_rate_limit.is_some() {
            self.groups.unthrottle(now, self.settings.group_concurrency);
        }
    }

    /// New settings. A rate limit that is new or changed starts with a
    /// full bucket, each group's too (docs/spec.md §4).
    pub(crate) fn set_settings(&mut self, settings: QueueSettings) {
        if settings.rate_limit != self.settings.rate_limit {
            self.bucket = None;
        }
        if settings.group_rate_limit != self.settings.group_rate_limit {
            self.groups.refill_all(settings.group_concurrency);
        } else if settings.group_concurrency != self.settings.group_concurrency {
            self.groups.recap(settings.group_concurrency);
        }
        self.settings = settings;
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
