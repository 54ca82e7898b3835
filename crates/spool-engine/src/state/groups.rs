//! A queue's task groups (docs/spec.md §4): each group's ready tasks in
//! claim order, its counts, and which groups take turns at claims.
//!
//! Invariants, kept by `State::attach` and `State::detach` (the only
//! writers of counts) and [`Groups::change`]:
//! - a group is here while it has tasks ready, scheduled or leased, and
//!   its counts are exact;
//! - `turns` holds exactly the groups with a ready task and a free slot
//!   under the queue's `group_concurrency`, so a claim never looks at a
//!   full or empty group, however many there are;
//! - a grouped ready task is in its group's ready index, never in the
//!   queue's, which holds the ungrouped ones.
//!
//! The turn order is the groups' names, ungrouped tasks first (as the
//! group named by the empty string), starting after the turn a claim
//! served last. That cursor lives in memory only: a restart starts the
//! round again from the ungrouped tasks.

use std::collections::BTreeSet;
use std::ops::Bound;

use hashbrown::HashMap;
use spool_core::groups::GroupStats;
use spool_core::TaskGroup;

use super::ready::ReadyIndex;

/// One group's tasks by state, as far as claims and reports need them.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GroupCounts {
    pub ready: u64,
    pub scheduled: u64,
    pub leased: u64,
}

#[derive(Debug, Default)]
pub(crate) struct Group {
    pub ready: ReadyIndex,
    pub counts: GroupCounts,
    /// Whether it is in `Groups::turns`, so that keeping the turns
    /// current costs no ordered-set lookup when nothing changes.
    in_turns: bool,
}

/// Whose turn a claim serves: the ungrouped tasks, or one group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Turn {
    Ungrouped,
    Group(TaskGroup),
}

#[derive(Debug, Default)]
pub(crate) struct Groups {
    by_name: HashMap<TaskGroup, Group>,
    turns: BTreeSet<TaskGroup>,
    /// The turn a claim served last; `None` before the first.
    last: Option<Turn>,
    /// Ready tasks in groups, of the queue's ready count.
    pub ready: u64,
}

impl Groups {
    pub(crate) fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// The group, made empty if it was not here.
    pub(crate) fn entry(&mut self, g: &TaskGroup) -> &mut Group {
        self.by_name.entry(g.clone()).or_default()
    }

    /// Whether some group can hand out a task now.
    pub(crate) fn any_turn(&self) -> bool {
        !self.turns.is_empty()
    }

    /// Lets `f` change group `g` (made empty if it was not here), then
    /// puts it in or out of the turns, and forgets it once it has no task
    /// left to count: one lookup for the whole change.
    pub(crate) fn change(&mut self, g: &TaskGroup, cap: Option<u32>, f: impl FnOnce(&mut Group)) {
        let group = self.by_name.entry(g.clone()).or_default();
        f(group);
        let c = group.counts;
        let idle = c.ready + c.scheduled + c.leased == 0;
        let turn = c.ready > 0 && has_room(c.leased, cap);
        if turn != group.in_turns {
            group.in_turns = turn;
            if turn {
                self.turns.insert(g.clone());
            } else {
                self.turns.remove(g);
            }
        }
        if idle {
            self.by_name.remove(g);
        }
    }

    /// Recomputes every group's place in the turns, for a new cap.
    pub(crate) fn recap(&mut self, cap: Option<u32>) {
        self.turns.clear();
        for (g, group) in &mut self.by_name {
            group.in_turns = group.counts.ready > 0 && has_room(group.counts.leased, cap);
            if group.in_turns {
                self.turns.insert(g.clone());
            }
        }
    }

    /// How many more tasks of group `g` may be leased now.
    pub(crate) fn room(&self, g: &TaskGroup, cap: Option<u32>) -> u64 {
        let leased = self.by_name.get(g).map_or(0, |group| group.counts.leased);
        cap.map_or(u64::MAX, |cap| u64::from(cap).saturating_sub(leased))
    }

    /// Up to `n` turns in claim order, starting after the last served:
    /// the groups in name order with the ungrouped tasks first (when
    /// `ungrouped` says they have some ready), wrapping around once.
    pub(crate) fn next_turns(&self, ungrouped: bool, n: usize) -> Vec<Turn> {
        let named = |from: Bound<&TaskGroup>, to: Bound<&TaskGroup>| {
            self.turns
                .range::<TaskGroup, _>((from, to))
                .map(|g| Turn::Group(g.clone()))
        };
        let first = ungrouped.then_some(Turn::Ungrouped);
        let all = || named(Bound::Unbounded, Bound::Unbounded);
        match &self.last {
            None => first.into_iter().chain(all()).take(n).collect(),
            Some(Turn::Ungrouped) => all().chain(first).take(n).collect(),
            Some(Turn::Group(last)) => named(Bound::Excluded(last), Bound::Unbounded)
                .chain(first)
                .chain(named(Bound::Unbounded, Bound::Included(last)))
                .take(n)
                .collect(),
        }
    }

    /// Notes the turn a claim served last.
    pub(crate) fn served(&mut self, last: Turn) {
        self.last = Some(last);
    }

    /// Each group's ready index.
    pub(crate) fn indexes(&self) -> impl Iterator<Item = &ReadyIndex> {
        self.by_name.values().map(|g| &g.ready)
    }

    /// Every group with tasks waiting or leased.
    pub(crate) fn stats(&self) -> Vec<GroupStats> {
        self.by_name
            .iter()
            .filter(|(_, g)| g.counts.ready + g.counts.scheduled + g.counts.leased > 0)
            .map(|(name, g)| GroupStats {
                group: name.clone(),
                waiting: g.counts.ready + g.counts.scheduled,
                leased: g.counts.leased,
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

    fn ready(groups: &mut Groups, name: &str, cap: Option<u32>) {
        groups.change(&g(name), cap, |group| group.counts.ready += 1);
    }

    #[test]
    fn turns_go_round_in_name_order_after_the_last_served() {
        let mut groups = Groups::default();
        for name in ["b", "a", "c"] {
            ready(&mut groups, name, None);
        }
        let turn = |s: &str| Turn::Group(g(s));
        assert_eq!(
            groups.next_turns(true, 10),
            vec![Turn::Ungrouped, turn("a"), turn("b"), turn("c")]
        );
        groups.served(turn("b"));
        assert_eq!(
            groups.next_turns(true, 10),
            vec![turn("c"), Turn::Ungrouped, turn("a"), turn("b")]
        );
        assert_eq!(groups.next_turns(false, 2), vec![turn("c"), turn("a")]);
        groups.served(Turn::Ungrouped);
        assert_eq!(
            groups.next_turns(true, 10),
            vec![turn("a"), turn("b"), turn("c"), Turn::Ungrouped]
        );
    }

    #[test]
    fn a_full_or_empty_group_takes_no_turn_and_an_idle_one_is_forgotten() {
        let mut groups = Groups::default();
        ready(&mut groups, "a", Some(1));
        assert!(groups.any_turn());
        groups.change(&g("a"), Some(1), |a| {
            a.counts.ready -= 1;
            a.counts.leased += 1;
        });
        assert!(!groups.any_turn());
        ready(&mut groups, "a", Some(1));
        assert!(!groups.any_turn(), "full: one leased of one");
        groups.recap(Some(2));
        assert!(groups.any_turn(), "room again under a higher cap");
        groups.change(&g("a"), Some(2), |a| a.counts = GroupCounts::default());
        assert!(groups.is_empty());
    }
}
