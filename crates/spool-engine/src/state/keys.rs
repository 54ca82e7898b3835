//! Idempotency keys of one queue (docs/spec.md §3.1).
//!
//! A key maps to its task while the task lives, then to a tombstone that
//! still deduplicates until `dedup_window` after the task completed or was
//! cancelled. Tombstones expire in the order they were made, swept from the
//! front of a queue; an entry whose expiry no longer matches (the key was
//! reused, or the window changed) is skipped, not removed.

use std::collections::VecDeque;

use hashbrown::HashMap;
use spool_core::{TaskKey, Timestamp};

/// Expiry of a key whose task is still alive.
const LIVE: Timestamp = Timestamp(i64::MAX);

#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyEntry {
    pub id: u64,
    pub expires_at: Timestamp,
}

impl KeyEntry {
    pub(crate) fn is_live(&self) -> bool {
        self.expires_at == LIVE
    }
}

#[derive(Debug, Default)]
pub(crate) struct KeyTable {
    map: HashMap<TaskKey, KeyEntry>,
    expiry: VecDeque<(Timestamp, TaskKey)>,
}

impl KeyTable {
    /// The id a key still deduplicates to at `now`, if any.
    pub(crate) fn dedup(&self, key: &TaskKey, now: Timestamp) -> Option<u64> {
        self.map
            .get(key)
            .filter(|e| e.expires_at > now)
            .map(|e| e.id)
    }

    /// The live task holding the key.
    pub(crate) fn live(&self, key: &TaskKey) -> Option<u64> {
        self.map.get(key).filter(|e| e.is_live()).map(|e| e.id)
    }

    pub(crate) fn bind(&mut self, key: TaskKey, id: u64) {
        self.map.insert(
            key,
            KeyEntry {
                id,
                expires_at: LIVE,
            },
        );
    }

    /// The task holding `key` is gone; the key keeps deduplicating until
    /// `until`. A window so long that the sum saturates ends just short of
    /// the value that marks a live key, so the key is never mistaken for one.
    pub(crate) fn retire(&mut self, key: &TaskKey, id: u64, until: Timestamp) {
        self.tombstone(key.clone(), id, until.min(Timestamp(LIVE.0 - 1)));
    }

    /// Restores a tombstone (from a checkpoint) or makes one.
    pub(crate) fn tombstone(&mut self, key: TaskKey, id: u64, until: Timestamp) {
        self.map.insert(
            key.clone(),
            KeyEntry {
                id,
                expires_at: until,
            },
        );
        self.expiry.push_back((until, key));
    }

    /// Forgets tombstones whose window has passed.
    pub(crate) fn sweep(&mut self, now: Timestamp) {
        while let Some((until, _)) = self.expiry.front() {
            if *until > now {
                break;
            }
            if let Some((until, key)) = self.expiry.pop_front() {
                if self.map.get(&key).is_some_and(|e| e.expires_at == until) {
                    self.map.remove(&key);
                }
            }
        }
    }

    /// Every tombstone still in force, for a checkpoint.
    pub(crate) fn tombstones(&self) -> impl Iterator<Item = (&TaskKey, &KeyEntry)> {
        self.map.iter().filter(|(_, e)| !e.is_live())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> TaskKey {
        TaskKey::new(s).unwrap_or_else(|_| unreachable!())
    }

    #[test]
    fn a_retired_key_deduplicates_until_its_window_ends() {
        let mut t = KeyTable::default();
        t.bind(key("a"), 1);
        assert_eq!(t.dedup(&key("a"), Timestamp(0)), Some(1));
        t.retire(&key("a"), 1, Timestamp(100));
        assert_eq!(t.live(&key("a")), None);
        assert_eq!(t.dedup(&key("a"), Timestamp(99)), Some(1));
        assert_eq!(t.dedup(&key("a"), Timestamp(100)), None);
        t.sweep(Timestamp(100));
        assert!(t.tombstones().next().is_none());
    }

    #[test]
    fn a_saturated_window_still_leaves_a_retired_key_not_live() {
        let mut t = KeyTable::default();
        t.bind(key("a"), 1);
        t.retire(&key("a"), 1, Timestamp(i64::MAX));
        assert_eq!(t.live(&key("a")), None);
        assert_eq!(t.dedup(&key("a"), Timestamp(0)), Some(1));
    }

    #[test]
    fn sweeping_an_old_tombstone_spares_a_rebound_key() {
        let mut t = KeyTable::default();
        t.retire(&key("a"), 1, Timestamp(10));
        t.bind(key("a"), 2);
        t.sweep(Timestamp(50));
        assert_eq!(t.live(&key("a")), Some(2));
    }
}
