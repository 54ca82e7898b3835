//! Task groups inside a queue: what a store reports about them, and the
//! order claims take them in (docs/spec.md §4, "Groups").
//!
//! A task may carry a group (a customer, an API host). A queue's
//! `group_concurrency` bounds how many tasks of one group are leased at
//! once, and claims take from the queue's groups in turn so that one
//! group's backlog does not hold back another's: each claim serves the
//! groups in name order, starting after the group the previous claim
//! served last and wrapping around, one task per group per turn, and
//! within a group in (priority, run_at, id) order. Tasks without a group
//! take their turn together, as if they were one group named by the empty
//! string (which sorts first).

use crate::error::StoreError;
use crate::names::TaskGroup;

/// Most groups one [`crate::Store::groups`] call reports.
pub const MAX_GROUP_STATS: usize = 1000;

/// Checks a `Store::groups` limit: 1 to [`MAX_GROUP_STATS`].
pub fn validate_limit(limit: usize) -> Result<(), StoreError> {
    if limit == 0 || limit > MAX_GROUP_STATS {
        return Err(StoreError::bad_request(format!(
            "limit must be 1 to {MAX_GROUP_STATS}, got {limit}"
        )));
    }
    Ok(())
}

/// One group of a queue as `Store::groups` reports it.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct GroupStats {
    /// The group.
    pub group: TaskGroup,
    /// Its tasks waiting to run: ready or scheduled.
    pub waiting: u64,
    /// Its tasks leased now (those whose lease has not expired).
    pub leased: u64,
    /// The whole tokens left now in the group's bucket under the queue's
    /// `group_rate_limit`. `None` without one.
    pub rate_tokens: Option<u32>,
}

/// Puts groups in the order `Store::groups` reports them in, keeping the
/// first `limit`: most waiting first, then most leased, then by name.
pub fn busiest_first(mut groups: Vec<GroupStats>, limit: usize) -> Vec<GroupStats> {
    groups.sort_by(|a, b| {
        (b.waiting, b.leased)
            .cmp(&(a.waiting, a.leased))
            .then_with(|| a.group.cmp(&b.group))
    });
    groups.truncate(limit);
    groups
}
