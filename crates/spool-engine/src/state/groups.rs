//! A queue's task groups (docs/spec.md §4): each group's ready tasks in
//! claim order, its counts, and which groups take turns at claims.
//!
//! Groups are interned: a task holds its group's [`GroupSlot`] in the task
//! table, so the state changes of a grouped task (enqueue, claim, ack:
//! four per task) index the group directly instead of hashing and
//! comparing its name, and a grouped task needs no side record for it.
//!
//! Invariants, kept by `State::insert`, `State::remove`, `State::attach`
//! and `State::detach` (the only writers of counts) and [`Groups::change`]:
//! - a group has a slot while the store holds a task of it, in any state
//!   (`tasks` counts them); its name maps to that slot and back, and a
//!   slot freed with its last task may be reused by a new group;
//! - its counts are exact for ready, scheduled and leased tasks;
//! - `turns` holds exactly the groups with a ready task, a free slot
//!   under the queue's `group_concurrency` and a token in their bucket
//!   under its `group_rate_limit`, so a claim never looks at a full,
//!   throttled or empty group, however many there are;
//! - `throttled` holds exactly the groups whose bucket a claim emptied,
//!   by when it holds a token again; [`Groups::unthrottle`] puts them back
//!   once that time has come;
//! - a grouped ready task is in its group's ready index, never in the
//!   queue's, which holds the ungrouped ones.
//!
//! The turn order is the groups' names, ungrouped tasks first (as the
//! group named by the empty string), starting after the turn a claim
//! served last. That cursor is a name, so it outlives the group's slot;
//! it lives in memory only: a restart starts the round again from the
//! ungrouped tasks.
//!
//! Each group's rate-limit bucket lives in memory only too, like the
//! queue's (a restart starts them full). A group whose last task has gone
//! keeps its bucket by name in `resting` until the bucket is full again,
//! so that a group enqueued and claimed one task at a time is held to its
//! rate as well.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroU32;
use std::ops::Bound;

use hashbrown::HashMap;
use spool_core::groups::GroupStats;
use spool_core::{RateLimit, TaskGroup, Timestamp, TokenBucket};

use super::ready::ReadyIndex;

/// One group's tasks by state, as far as claims and reports need them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GroupCounts {
    pub ready: u64,
    pub scheduled: u64,
    pub leased: u64,
}

impl GroupCounts {
    fn total(&self) -> u64 {
        self.ready + self.scheduled + self.leased
    }
}

/// Where a group lives in its queue's [`Groups`]. Non-zero, so that a
/// task's optional slot takes four bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct GroupSlot(NonZeroU32);

impl GroupSlot {
    fn at(index: usize) -> GroupSlot {
        GroupSlot(NonZeroU32::MIN.saturating_add(u32::try_from(index).unwrap_or(u32::MAX)))
    }

    fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }
}

#[derive(Debug)]
pub(crate) struct Group {
    pub name: TaskGroup,
    pub ready: ReadyIndex,
    pub counts: GroupCounts,
    /// Tasks of the group the store holds, in any state.
    tasks: u64,
    /// Whether it is in `Groups::turns`, so that keeping the turns
    /// current costs no ordered-map lookup when nothing changes.
    in_turns: bool,
    /// Its `group_rate_limit` tokens; `None`: a full bucket.
    bucket: Option<TokenBucket>,
    /// When its emptied bucket holds a token again; out of the turns until
    /// then.
    throttled_until: Option<Timestamp>,
}

impl Group {
    /// Whether the group can take a turn: a task ready, room under `cap`,
    /// tokens in its bucket.
    fn may_take_turn(&self, cap: Option<u32>) -> bool {
        self.counts.ready > 0 && has_room(self.counts.leased, cap) && self.throttled_until.is_none()
    }
}

/// Whose turn a claim serves: the ungrouped tasks, or one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    Ungrouped,
    Group(GroupSlot),
}

/// The turn a claim served last, by name (see the module doc).
#[derive(Debug)]
enum Served {
    Ungrouped,
    Group(TaskGroup),
}

#[derive(Debug, Default)]
pub(crate) struct Groups {
    slots: Vec<Option<Group>>,
    /// Slots free for reuse.
    free: Vec<GroupSlot>,
    by_name: HashMap<TaskGroup, GroupSlot>,
    turns: BTreeMap<TaskGroup, GroupSlot>,
    /// The turn a claim served last; `None` before the first.
    last: Option<Served>,
    /// Ready tasks in groups, of the queue's ready count.
    pub ready: u64,
    /// Groups with a task ready, scheduled or leased.
    counted: usize,
    /// Groups whose bucket is empty, by when it holds a token again.
    throttled: BTreeSet<(Timestamp, GroupSlot)>,
    /// The buckets, not yet full, of groups whose last task has gone.
    resting: HashMap<TaskGroup, TokenBucket>,
    /// `resting`'s size after it was last pruned of full buckets.
    resting_pruned: usize,
}

impl Groups {
    /// Whether no group has a task ready, scheduled or leased: claims then
    /// take the ungrouped tasks as if there were no groups, and leave the
    /// turns where they stood.
    pub(crate) fn is_idle(&self) -> bool {
        self.counted == 0
    }

    /// Counts one more task of group `g`, interning it if it is new, and
    /// answers its slot.
    pub(crate) fn join(&mut self, g: &TaskGroup) -> GroupSlot {
        if let Some(&slot) = self.by_name.get(g) {
            if let Some(group) = self.slot_mut(slot) {
                group.tasks += 1;
            }
            return slot;
        }
        let bucket = if self.resting.is_empty() {
            None
        } else {
            self.resting.remove(g)
        };
        let group = Group {
            name: g.clone(),
            ready: ReadyIndex::default(),
            counts: GroupCounts::default(),
            tasks: 1,
            in_turns: false,
            bucket,
            throttled_until: None,
        };
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot.index()] = Some(group);
                slot
            }
            None => {
                self.slots.push(Some(group));
                GroupSlot::at(self.slots.len() - 1)
            }
        };
        self.by_name.insert(g.clone(), slot);
        slot
    }

    /// Counts one task of the group fewer; the group's slot is freed with
    /// its last task (which was detached first, so nothing is counted).
    pub(crate) fn leave(&mut self, slot: GroupSlot) {
        let Some(group) = self.slot_mut(slot) else {
            return;
        };
        group.tasks -= 1;
        if group.tasks > 0 {
            return;
        }
        if let Some(group) = self.slots[slot.index()].take() {
            self.by_name.remove(&group.name);
            if group.in_turns {
                self.turns.remove(&group.name);
            }
            if let Some(at) = group.throttled_until {
                self.throttled.remove(&(at, slot));
            }
            if let Some(bucket) = group.bucket {
                self.resting.insert(group.name, bucket);
            }
            self.free.push(slot);
        }
    }

    fn slot_mut(&mut self, slot: GroupSlot) -> Option<&mut Group> {
        self.slots.get_mut(slot.index())?.as_mut()
    }

    fn slot(&self, slot: GroupSlot) -> Option<&Group> {
        self.slots.get(slot.index())?.as_ref()
    }

    /// The group's name.
    pub(crate) fn name(&self, slot: GroupSlot) -> Option<&TaskGroup> {
        self.slot(slot).map(|g| &g.name)
    }

    /// The group's ready index.
    pub(crate) fn ready_mut(&mut self, slot: GroupSlot) -> Option<&mut ReadyIndex> {
        self.slot_mut(slot).map(|g| &mut g.ready)
    }

    /// Whether some group can hand out a task now.
    pub(crate) fn any_turn(&self) -> bool {
        !self.turns.is_empty()
    }

    /// Lets `f` change the group in `slot`, then puts it in or out of the
    /// turns.
    pub(crate) fn change(&mut self, slot: GroupSlot, cap: Option<u32>, f: impl FnOnce(&mut Group)) {
        let Some(group) = self.slots.get_mut(slot.index()).and_then(Option::as_mut) else {
            return;
        };
        let was_counted = group.counts.total() > 0;
        f(group);
        let c = group.counts;
        match (was_counted, c.total() > 0) {
            (false, true) => self.counted += 1,
            (true, false) => self.counted -= 1,
            _ => {}
        }
        let turn = group.may_take_turn(cap);
        if turn != group.in_turns {
            group.in_turns = turn;
            if turn {
                self.turns.insert(group.name.clone(), slot);
            } else {
                self.turns.remove(&group.name);
            }
        }
    }

    /// Recomputes every group's place in the turns, for a new cap.
    pub(crate) fn recap(&mut self, cap: Option<u32>) {
        self.turns.clear();
        for (i, group) in self.slots.iter_mut().enumerate() {
            let Some(group) = group else { continue };
            group.in_turns = group.may_take_turn(cap);
            if group.in_turns {
                self.turns.insert(group.name.clone(), GroupSlot::at(i));
            }
        }
    }

    /// How many more tasks of the group may be leased now.
    pub(crate) fn room(&self, slot: GroupSlot, cap: Option<u32>) -> u64 {
        let leased = self.slot(slot).map_or(0, |group| group.counts.leased);
        cap.map_or(u64::MAX, |cap| u64::from(cap).saturating_sub(leased))
    }

    /// Tokens the group's bucket holds now under `limit`.
    pub(crate) fn tokens(&mut self, slot: GroupSlot, limit: &RateLimit, now: Timestamp) -> u64 {
        let Some(group) = self.slot_mut(slot) else {
            return 0;
        };
        let bucket = group
            .bucket
            .get_or_insert_with(|| TokenBucket::full(limit, now));
        u64::from(bucket.available(limit, now))
    }

    /// Takes `n` tokens from the group's bucket; a bucket left empty takes
    /// the group out of the turns until it holds a token again, and that
    /// time is the answer.
    pub(crate) fn take_tokens(
        &mut self,
        slot: GroupSlot,
        limit: &RateLimit,
        now: Timestamp,
        n: u32,
    ) -> Option<Timestamp> {
        self.prune_resting(limit, now);
        let group = self.slot_mut(slot)?;
        group
            .bucket
            .get_or_insert_with(|| TokenBucket::full(limit, now))
            .take(limit, now, n);
        self.throttle_if_spent(slot, limit, now)
    }

    /// Takes the group out of the turns while its bucket holds no whole
    /// token: after a claim spent it, or when a group comes back to a
    /// bucket it spent before (`resting`). Answers when it holds one again.
    pub(crate) fn throttle_if_spent(
        &mut self,
        slot: GroupSlot,
        limit: &RateLimit,
        now: Timestamp,
    ) -> Option<Timestamp> {
        let group = self.slots.get_mut(slot.index())?.as_mut()?;
        if group.throttled_until.is_some() {
            return group.throttled_until;
        }
        let bucket = group.bucket.as_mut()?;
        if bucket.available(limit, now) > 0 {
            return None;
        }
        let at = now.plus(bucket.next_token_in(limit, now));
        group.throttled_until = Some(at);
        if group.in_turns {
            group.in_turns = false;
            self.turns.remove(&group.name);
        }
        self.throttled.insert((at, slot));
        Some(at)
    }

    /// Puts the groups whose bucket holds a token again by `now` back in
    /// the turns.
    pub(crate) fn unthrottle(&mut self, now: Timestamp, cap: Option<u32>) {
        while let Some(&(at, slot)) = self.throttled.first() {
            if at > now {
                break;
            }
            self.throttled.pop_first();
            if let Some(group) = self.slot_mut(slot) {
                group.throttled_until = None;
            }
            self.change(slot, cap, |_| {});
        }
    }

    /// When the first throttled group holds a token again.
    pub(crate) fn next_refill(&self) -> Option<Timestamp> {
        self.throttled.first().map(|&(at, _)| at)
    }

    /// Forgets every group's bucket, for a new or removed
    /// `group_rate_limit`: each starts full (docs/spec.md §4).
    pub(crate) fn refill_all(&mut self, cap: Option<u32>) {
        for group in self.slots.iter_mut().flatten() {
            group.bucket = None;
            group.throttled_until = None;
        }
        self.throttled.clear();
        self.resting.clear();
        self.resting_pruned = 0;
        self.recap(cap);
    }

    /// Drops the resting buckets that are full by `now`, once `resting` has
    /// doubled since it was last pruned: a full bucket is what a group
    /// that comes back starts with anyway.
    fn prune_resting(&mut self, limit: &RateLimit, now: Timestamp) {
        if self.resting.len() <= 2 * self.resting_pruned + 64 {
            return;
        }
        self.resting
            .retain(|_, b| b.available(limit, now) < limit.burst);
        self.resting_pruned = self.resting.len();
    }

    /// Up to `n` turns in claim order, starting after the last served:
    /// the groups in name order with the ungrouped tasks first (when
    /// `ungrouped` says they have some ready), wrapping around once.
    pub(crate) fn next_turns(&self, ungrouped: bool, n: usize) -> Vec<Turn> {
        let named = |from: Bound<&TaskGroup>, to: Bound<&TaskGroup>| {
            self.turns
                .range::<TaskGroup, _>((from, to))
                .map(|(_, &slot)| Turn::Group(slot))
        };
        let first = ungrouped.then_some(Turn::Ungrouped);
        let all = || named(Bound::Unbounded, Bound::Unbounded);
        match &self.last {
            None => first.into_iter().chain(all()).take(n).collect(),
            Some(Served::Ungrouped) => all().chain(first).take(n).collect(),
            Some(Served::Group(last)) => named(Bound::Excluded(last), Bound::Unbounded)
                .chain(first)
                .chain(named(Bound::Unbounded, Bound::Included(last)))
                .take(n)
                .collect(),
        }
    }

    /// Notes the turn a claim served last.
    pub(crate) fn served(&mut self, last: Turn) {
        self.last = match last {
            Turn::Ungrouped => Some(Served::Ungrouped),
            Turn::Group(slot) => self.name(slot).cloned().map(Served::Group),
        };
    }

    /// Each group's ready index.
    pub(crate) fn indexes(&self) -> impl Iterator<Item = &ReadyIndex> {
        self.slots.iter().flatten().map(|g| &g.ready)
    }

    /// Every group with tasks waiting or leased, with its bucket's tokens
    /// at `now` under `limit`, the queue's group_rate_limit.
    pub(crate) fn stats(&self, limit: Option<&RateLimit>, now: Timestamp) -> Vec<GroupStats> {
        self.slots
            .iter()
            .flatten()
            .filter(|g| g.counts.total() > 0)
            .map(|g| GroupStats {
                group: g.name.clone(),
                waiting: g.counts.ready + g.counts.scheduled,
                leased: g.counts.leased,
                rate_tokens: limit.map(|l| TokenBucket::left(g.bucket.as_ref(), l, now)),
            })
            .collect()
    }
}

fn has_room(leased: u64, cap: Option<u32>) -> bool {
    cap.is_none_or(|cap| leased < u64::from(cap))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn g(s: &str) -> TaskGroup {
        TaskGroup::new(s).unwrap()
    }

    /// One more ready task of group `name`, joined if new.
    fn ready(groups: &mut Groups, name: &str, cap: Option<u32>) -> GroupSlot {
        let slot = groups.join(&g(name));
        groups.change(slot, cap, |group| group.counts.ready += 1);
        slot
    }

    #[test]
    fn turns_go_round_in_name_order_after_the_last_served() {
        let mut groups = Groups::default();
        let [b, a, c] = ["b", "a", "c"].map(|name| ready(&mut groups, name, None));
        let turn = Turn::Group;
        assert_eq!(
            groups.next_turns(true, 10),
            vec![Turn::Ungrouped, turn(a), turn(b), turn(c)]
        );
        groups.served(turn(b));
        assert_eq!(
            groups.next_turns(true, 10),
            vec![turn(c), Turn::Ungrouped, turn(a), turn(b)]
        );
        assert_eq!(groups.next_turns(false, 2), vec![turn(c), turn(a)]);
        groups.served(Turn::Ungrouped);
        assert_eq!(
            groups.next_turns(true, 10),
            vec![turn(a), turn(b), turn(c), Turn::Ungrouped]
        );
    }

    #[test]
    fn a_full_or_empty_group_takes_no_turn() {
        let mut groups = Groups::default();
        let a = ready(&mut groups, "a", Some(1));
        assert!(groups.any_turn());
        groups.change(a, Some(1), |a| {
            a.counts.ready -= 1;
            a.counts.leased += 1;
        });
        assert!(!groups.any_turn());
        assert_eq!(ready(&mut groups, "a", Some(1)), a, "one slot per name");
        assert!(!groups.any_turn(), "full: one leased of one");
        groups.recap(Some(2));
        assert!(groups.any_turn(), "room again under a higher cap");
        groups.change(a, Some(2), |a| a.counts = GroupCounts::default());
        assert!(!groups.any_turn());
        assert!(
            groups.is_idle(),
            "nothing counted, though a task of a is held"
        );
    }

    #[test]
    fn a_slot_lives_as_long_as_its_tasks_and_is_then_reused() {
        let mut groups = Groups::default();
        let a = groups.join(&g("a"));
        assert_eq!(groups.join(&g("a")), a);
        groups.leave(a);
        assert_eq!(groups.name(a), Some(&g("a")), "one task of a is left");
        groups.leave(a);
        assert_eq!(groups.name(a), None);
        let b = groups.join(&g("b"));
        assert_eq!(b, a, "the freed slot is reused");
        assert_eq!(groups.name(b), Some(&g("b")));
        assert!(
            groups.stats(None, Timestamp::from_millis(0)).is_empty(),
            "nothing counted yet"
        );
    }

    #[test]
    fn the_cursor_outlives_the_group_it_names() {
        let mut groups = Groups::default();
        let [a, b, c] = ["a", "b", "c"].map(|name| ready(&mut groups, name, None));
        groups.served(Turn::Group(b));
        groups.change(b, None, |b| b.counts.ready = 0);
        groups.leave(b);
        let d = ready(&mut groups, "d", None);
        assert_eq!(d, b, "b's slot went to d");
        assert_eq!(
            groups.next_turns(false, 10),
            vec![Turn::Group(c), Turn::Group(d), Turn::Group(a)],
            "the round goes on after the name b, not after slot b"
        );
    }

    #[test]
    fn an_emptied_bucket_takes_its_group_out_of_the_turns_until_it_refills() {
        let per_second = RateLimit {
            limit: 1,
            period: std::time::Duration::from_secs(1),
            burst: 2,
        };
        let at = Timestamp::from_millis;
        let mut groups = Groups::default();
        let a = ready(&mut groups, "a", None);
        assert_eq!(groups.tokens(a, &per_second, at(0)), 2);
        assert_eq!(groups.take_tokens(a, &per_second, at(0), 1), None);
        assert_eq!(groups.take_tokens(a, &per_second, at(0), 1), Some(at(1000)));
        assert!(!groups.any_turn(), "out of tokens");
        assert_eq!(groups.next_refill(), Some(at(1000)));
        groups.unthrottle(at(999), None);
        assert!(!groups.any_turn());
        groups.unthrottle(at(1000), None);
        assert!(groups.any_turn(), "a token again");
        assert_eq!(groups.next_refill(), None);

        // Its last task gone, the group's spent bucket waits for it.
        groups.take_tokens(a, &per_second, at(1000), 1);
        groups.change(a, None, |a| a.counts.ready = 0);
        groups.leave(a);
        assert_eq!(groups.next_refill(), None, "no throttled group left");
        let again = groups.join(&g("a"));
        assert_eq!(
            groups.throttle_if_spent(again, &per_second, at(1500)),
            Some(at(2000)),
            "back to its spent bucket"
        );
        groups.change(again, None, |a| a.counts.ready += 1);
        assert!(!groups.any_turn(), "throttled from its return");
        assert_eq!(groups.tokens(again, &per_second, at(1500)), 0);
        assert_eq!(groups.tokens(again, &per_second, at(2000)), 1);
        groups.refill_all(None);
        assert_eq!(
            groups.tokens(again, &per_second, at(2000)),
            2,
            "a new limit starts full"
        );
    }
}
