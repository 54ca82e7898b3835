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

use std::collections::{BTreeMap, VecDeque};

use hashbrown::HashMap;

use super::entry::{flag, Entry, Extra};

const PAGE_BITS: u32 = 12;
const PAGE: usize = 1 << PAGE_BITS;
/// A page with fewer live tasks than this is dissolved into `sparse`.
const SPARSE_BELOW: u32 = (PAGE / 8) as u32;

#[derive(Debug)]
struct Page {
    live: u32,
    slots: Box<[Option<Entry>]>,
}

impl Page {
    fn new() -> Page {
        Page {
            live: 0,
            slots: std::iter::repeat_with(|| None).take(PAGE).collect(),
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct TaskTable {
    /// Page number of `pages[0]`.
    base: u64,
    /// Pages from `base` on; a `None` was freed and is never made again.
    pages: VecDeque<Option<Page>>,
    sparse: BTreeMap<u64, Entry>,
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
    pub(crate) fn insert(&mut self, id: u64, entry: Entry, extra: Option<Extra>) {
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
            }
            None => {
                self.sparse.insert(id, entry);
            }
        }
    }

    /// Removes a task and its extra fields.
    pub(crate) fn remove(&mut self, id: u64) -> Option<(Entry, Option<Extra>)> {
        let entry = match self.page_mut(id) {
            Some(p) => {
                let e = p.slots[slot_of(id)].take()?;
                p.live -= 1;
                let live = p.live;
                self.after_remove(page_of(id), live);
                e
            }
            None => self.sparse.remove(&id)?,
        };
        self.len -= 1;
        let extra = if entry.has(flag::EXTRA) {
            self.extras.remove(&id)
        } else {
            None
        };
        Some((entry, extra))
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
            for (i, slot) in p.slots.into_vec().into_iter().enumerate() {
                if let Some(e) = slot {
                    self.sparse.insert(first + i as u64, e);
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
