//! A slab of task entries addressed by slot, with an id → slot map.
//!
//! Slots let a checkpoint walk every entry in slices while the core keeps
//! mutating between slices: a slot index is a stable position, where a hash
//! map's iteration order is not. Freed slots are reused.

use hashbrown::HashMap;

use super::entry::Entry;

#[derive(Debug, Default)]
pub(crate) struct Slab {
    slots: Vec<Option<Entry>>,
    free: Vec<u32>,
    by_id: HashMap<u64, u32>,
}

impl Slab {
    pub(crate) fn slot_of(&self, id: u64) -> Option<u32> {
        self.by_id.get(&id).copied()
    }

    pub(crate) fn get(&self, slot: u32) -> Option<&Entry> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    pub(crate) fn get_mut(&mut self, slot: u32) -> Option<&mut Entry> {
        self.slots.get_mut(slot as usize).and_then(Option::as_mut)
    }

    pub(crate) fn by_id(&self, id: u64) -> Option<&Entry> {
        self.slot_of(id).and_then(|s| self.get(s))
    }

    /// Makes room for `n` more entries at once instead of growing by steps.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.by_id.reserve(n);
        self.slots.reserve(n.saturating_sub(self.free.len()));
    }

    /// Stores a new entry, which must not already be present.
    pub(crate) fn insert(&mut self, entry: Entry) -> u32 {
        let id = entry.id;
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s as usize] = Some(entry);
                s
            }
            None => {
                self.slots.push(Some(entry));
                (self.slots.len() - 1) as u32
            }
        };
        self.by_id.insert(id, slot);
        slot
    }

    pub(crate) fn remove(&mut self, slot: u32) -> Option<Entry> {
        let entry = self.slots.get_mut(slot as usize)?.take()?;
        self.by_id.remove(&entry.id);
        self.free.push(slot);
        Some(entry)
    }

    /// Number of slot positions, live or free: the range a walk covers.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn len(&self) -> usize {
        self.by_id.len()
    }
}
