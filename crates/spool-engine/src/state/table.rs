//! Every live task by id: pages of records addressed by id, plus a sorted
//! map for the few that outlive their page.
//!
//! Ids are handed out in order and never reused, so the tasks of one page
//! (1,024 consecutive ids) are mostly enqueued together and mostly finish
//! together. A page is an array indexed by `id % PAGE`: no hash, no per-task
//! pointer, 48 bytes a slot. When a page's tasks are nearly all gone (fewer
//! than 1/8 left) the survivors move to the `sparse` map and the page is
//! freed, so a drained store gives its memory back and a long-lived dead
//! task costs a map entry rather than a page.
//!
//! Invariant: an id is in at most one place — its page if that page exists,
//! else `sparse`. A page, once freed, is never made again (its ids go to
//! `sparse`), so the two never overlap.
//!
//! A task's group slot (see `groups`) sits beside its record: in its
//! page's group array, made with the page's first grouped task (4 bytes a
//! slot), or in `sparse_groups` for a task in `sparse`. So a grouped task
//! needs no side record for its group, and its state changes find the
//! group by its id alone.

use std::collections::{BTreeMap, VecDeque};

use hashbrown::HashMap;

use super::entry::{flag, Entry, Extra};
use super::groups::GroupSlot;

const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;
/// A page with fewer live tasks than this is dissolved into `sparse`.
const SPARSE_BELOW: u32 = (PAGE / 8) as u32;

#[derive(Debug)]
struct Page {
    live: u32,
    slots: Box<[Option<Entry>]>,
    /// Each slot's group, once some task of the page has one.
    groups: Option<Box<[Option<GroupSlot>]>>,
}

impl Page {
    fn new() -> Page {
        Page {
            live: 0,
            slots: std::iter::repeat_with(|| None).take(PAGE).collect(),
            groups: None,
        }
    }

    fn set_group(&mut self, slot: usize, group: Option<GroupSlot>) {
        match (&mut self.groups, group) {
            (Some(groups), _) => groups[slot] = group,
            (None, None) => {}
            (None, Some(_)) => {
                let mut groups: Box<[Option<GroupSlot>]> = vec![None; PAGE].into_boxed_slice();
                groups[slot] = group;
                self.groups = Some(groups);
            }
        }
    }

    fn group(&self, slot: usize) -> Option<GroupSlot> {
        self.groups.as_ref().and_then(|g| g[slot])
    }
}

/// What [`TaskTable::remove`] took out.
pub(crate) struct Removed {
    pub entry: Entry,
    pub extra: Option<Extra>,
    pub group: Option<GroupSlot>,
}

#[derive(Debug, Default)]
pub(crate) struct TaskTable {
    /// Page number of `pages[0]`.
    base: u64,
    /// Pages from `base` on; a `None` was freed and is never made again.
    pages: VecDeque<Option<Page>>,
    sparse: BTreeMap<u64, Entry>,
    sparse_groups: HashMap<u64, GroupSlot>,
    extras: HashMap<u64, Extra>,
    len: usize,
}

fn page_of(id: u64) -> u64 {
    id >> PAGE_BITS
}

fn slot_of(id: u64) -> usize {
    (id as usize) & (PAGE - 1)
}

impl TaskTable {
    fn page(&self, id: u64) -> Option<&Page> {
        let p = page_of(id).checked_sub(self.base)?;
        self.pages.get(usize::try_from(p).ok()?)?.as_ref()
    }

    /// Index in `pages` of the page holding `id`, if that page exists.
    fn page_index(&self, id: u64) -> Option<usize> {
        let p = usize::try_from(page_of(id).checked_sub(self.base)?).ok()?;
        self.pages.get(p)?.as_ref().map(|_| p)
    }

    fn page_mut(&mut self, id: u64) -> Option<&mut Page> {
        let p = self.page_index(id)?;
        self.pages.get_mut(p)?.as_mut()
    }

    pub(crate) fn get(&self, id: u64) -> Option<&Entry> {
        match self.page(id) {
            Some(page) => page.slots[slot_of(id)].as_ref(),
            None => self.sparse.get(&id),
        }
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut Entry> {
        if self.page_index(id).is_none() {
            return self.sparse.get_mut(&id);
        }
        self.page_mut(id)?.slots[slot_of(id)].as_mut()
    }

    pub(crate) fn contains(&self, id: u64) -> bool {
        self.get(id).is_some()
    }

    /// The task's group, if it has one.
    pub(crate) fn group(&self, id: u64) -> Option<GroupSlot> {
        match self.page(id) {
            Some(page) => page.group(slot_of(id)),
            None => self.sparse_groups.get(&id).copied(),
        }
    }

    /// The task's extra fields, if it has any.
    pub(crate) fn extra(&self, id: u64) -> Option<&Extra> {
        self.extras.get(&id)
    }

    /// The task's extra fields, made (stamped `updated_at` = its creation)
    /// if it had none. `None` if the task is not here.
    pub(crate) fn extra_mut(&mut self, id: u64) -> Option<&mut Extra> {
        let e = self.get_mut(id)?;
        e.flags |= flag::EXTRA;
        let created = e.created_at;
        Some(self.extras.entry(id).or_insert_with(|| Extra::new(created)))
    }

    /// Stores a task that is not already here.
    pub(crate) fn insert(
        &mut self,
        id: u64,
        entry: Entry,
        extra: Option<Extra>,
        group: Option<GroupSlot>,
    ) {
        let mut entry = entry;
        match extra {
            Some(x) => {
                entry.flags |= flag::EXTRA;
                self.extras.insert(id, x);
            }
            None => entry.flags &= !flag::EXTRA,
        }
        self.len += 1;
        let page = page_of(id);
        if self.pages.is_empty() && page > self.base {
            self.base = page;
        }
        let fresh = self.base + self.pages.len() as u64;
        if page >= fresh {
            for _ in fresh..page {
                self.pages.push_back(None);
            }
            self.pages.push_back(Some(Page::new()));
        }
        match self.page_mut(id) {
            Some(p) => {
                p.live += 1;
                p.slots[slot_of(id)] = Some(entry);
                p.set_group(slot_of(id), group);
            }
            None => {
                self.sparse.insert(id, entry);
                if let Some(g) = group {
                    self.sparse_groups.insert(id, g);
                }
            }
        }
    }

    /// Removes a task with its extra fields and group.
    pub(crate) fn remove(&mut self, id: u64) -> Option<Removed> {
        let (entry, group) = match self.page_mut(id) {
            Some(p) => {
                let e = p.slots[slot_of(id)].take()?;
                let group = p.group(slot_of(id));
                p.set_group(slot_of(id), None);
                p.live -= 1;
                let live = p.live;
                self.after_remove(page_of(id), live);
                (e, group)
            }
            None => {
                let e = self.sparse.remove(&id)?;
                (e, self.sparse_groups.remove(&id))
            }
        };
        self.len -= 1;
        let extra = if entry.has(flag::EXTRA) {
            self.extras.remove(&id)
        } else {
            None
        };
        Some(Removed {
            entry,
            extra,
            group,
        })
    }

    /// Frees an empty page, or dissolves a nearly empty one into `sparse`;
    /// the newest page stays (new ids land there).
    fn after_remove(&mut self, page: u64, live: u32) {
        let Some(index) = page.checked_sub(self.base).map(|p| p as usize) else {
            return;
        };
        let newest = index + 1 == self.pages.len();
        if newest || live >= SPARSE_BELOW {
            return;
        }
        if let Some(Some(p)) = self.pages.get_mut(index).map(Option::take) {
            let first = page << PAGE_BITS;
            let groups = p.groups;
            for (i, slot) in p.slots.into_vec().into_iter().enumerate() {
                if let Some(e) = slot {
                    self.sparse.insert(first + i as u64, e);
                    if let Some(g) = groups.as_ref().and_then(|g| g[i]) {
                        self.sparse_groups.insert(first + i as u64, g);
                    }
                }
            }
        }
        while matches!(self.pages.front(), Some(None)) {
            self.pages.pop_front();
            self.base += 1;
        }
    }

    /// Up to `max` live tasks with ids `>= from`, in id order, and the id
    /// to continue from (`None` when past the last). Pages first, then the
    /// sparse map, so a walk in slices with changes between them (a
    /// checkpoint) sees every task that stays put at least once.
    pub(crate) fn walk(
        &self,
        from: WalkFrom,
        max: usize,
    ) -> (Vec<(u64, &Entry)>, Option<WalkFrom>) {
        let mut out = Vec::with_capacity(max.min(4096));
        match from {
            WalkFrom::Pages(mut id) => {
                id = id.max(self.base << PAGE_BITS);
                let end = (self.base + self.pages.len() as u64) << PAGE_BITS;
                while id < end && out.len() < max {
                    match self.page(id) {
                        Some(p) => {
                            if let Some(e) = &p.slots[slot_of(id)] {
                                out.push((id, e));
                            }
                            id += 1;
                        }
                        None => id = (page_of(id) + 1) << PAGE_BITS,
                    }
                }
                let next = if id < end {
                    WalkFrom::Pages(id)
                } else {
                    WalkFrom::Sparse(0)
                };
                (out, Some(next))
            }
            WalkFrom::Sparse(id) => {
                let mut next = None;
                for (&i, e) in self.sparse.range(id..) {
                    if out.len() == max {
                        next = Some(WalkFrom::Sparse(i));
                        break;
                    }
                    out.push((i, e));
                }
                (out, next)
            }
        }
    }

    /// Live tasks with ids `>= from` in id order, lazily (for listing).
    pub(crate) fn ids_from(&self, from: u64) -> impl Iterator<Item = (u64, &Entry)> + '_ {
        let end = (self.base + self.pages.len() as u64) << PAGE_BITS;
        let start = from.max(self.base << PAGE_BITS);
        let paged = (start..end)
            .filter_map(move |id| self.page(id)?.slots[slot_of(id)].as_ref().map(|e| (id, e)));
        let sparse = self.sparse.range(from..).map(|(&i, e)| (i, e));
        MergeById::new(paged, sparse)
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// Where a [`TaskTable::walk`] resumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WalkFrom {
    Pages(u64),
    Sparse(u64),
}

/// Two id-ordered iterators as one.
struct MergeById<A: Iterator, B: Iterator> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<'t, A, B> MergeById<A, B>
where
    A: Iterator<Item = (u64, &'t Entry)>,
    B: Iterator<Item = (u64, &'t Entry)>,
{
    fn new(a: A, b: B) -> Self {
        MergeById {
            a: a.peekable(),
            b: b.peekable(),
        }
    }
}

impl<'t, A, B> Iterator for MergeById<A, B>
where
    A: Iterator<Item = (u64, &'t Entry)>,
    B: Iterator<Item = (u64, &'t Entry)>,
{
    type Item = (u64, &'t Entry);

    fn next(&mut self) -> Option<Self::Item> {
        match (self.a.peek(), self.b.peek()) {
            (Some((x, _)), Some((y, _))) if y < x => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use spool_core::{TaskGroup, TaskState, Timestamp};
    use spool_wal::LogPos;

    use super::super::entry::PayloadRef;
    use super::super::groups::Groups;
    use super::*;

    fn entry() -> Entry {
        Entry {
            run_at: Timestamp(1),
            created_at: Timestamp(1),
            payload: PayloadRef::new(LogPos { seq: 1, offset: 0 }),
            attempt: 0,
            max_attempts: 1,
            queue: 0,
            kind: 0,
            priority: 0,
            state: TaskState::Ready,
            flags: 0,
        }
    }

    #[test]
    fn a_task_keeps_its_group_when_its_page_dissolves() {
        let mut groups = Groups::default();
        let a = groups.join(&TaskGroup::new("a").unwrap());
        let mut table = TaskTable::default();
        let page = PAGE as u64;
        // Every third task of the first page in group a; one task in the
        // next page, so the first is not the newest.
        for id in 0..=page {
            table.insert(id, entry(), None, (id % 3 == 0).then_some(a));
        }
        let kept: Vec<u64> = (0..page).filter(|id| id % 10 == 0).collect();
        for id in (0..page).filter(|id| id % 10 != 0) {
            let removed = table.remove(id).unwrap();
            assert_eq!(removed.group, (id % 3 == 0).then_some(a), "task {id}");
        }
        assert!(table.page(0).is_none(), "the page dissolved into sparse");
        for &id in &kept {
            assert_eq!(table.group(id), (id % 3 == 0).then_some(a), "task {id}");
        }
        assert_eq!(table.remove(30).unwrap().group, Some(a));
        assert_eq!(table.remove(10).unwrap().group, None);
        assert_eq!(table.group(30), None, "gone with its task");
        assert_eq!(table.group(page), None);
    }
}
