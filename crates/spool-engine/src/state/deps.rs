//! Tasks waiting for others (docs/spec.md §3.2): who waits for whom, what
//! a parent's ending does to them, and applying that.
//!
//! A pending task is in no claim index; its [`Extra`](super::Extra) holds
//! its [`Dependencies`]. `children` maps each parent to the tasks that
//! still wait for it: built as tasks are inserted (live, replayed or
//! loaded from a checkpoint), trimmed as they leave or stop waiting; every
//! reader still checks the child's own waits, which are the truth.
//!
//! An ending's consequences are worked out by the core when it commits
//! the ending ([`State::follow`]) and logged in the same record as
//! [`Follow`]s, so replay applies exactly them, whatever a fuzzy
//! checkpoint held of the parent.

use hashbrown::{HashMap, HashSet};
use spool_core::deps::{outcome, Ending, Outcome};
use spool_core::{Dependencies, TaskId, TaskState, Timestamp};

use super::State;
use crate::ops::Follow;

impl State {
    /// How `parent` stands for a task naming it at enqueue: gone counts as
    /// completed, dead as failed, anything else still to wait for.
    pub(crate) fn ending_of(&self, parent: u64) -> Option<Ending> {
        match self.tasks.get(parent) {
            None => Some(Ending::Completed),
            Some(e) if e.state == TaskState::Dead => Some(Ending::Failed),
            Some(_) => None,
        }
    }

    /// How many tasks wait for `parent`.
    pub(crate) fn waiting_for(&self, parent: u64) -> usize {
        self.children.get(&parent).map_or(0, HashSet::len)
    }

    /// Notes that `child` waits for each of `deps.waiting_on`.
    pub(super) fn register_waits(&mut self, child: u64, deps: &Dependencies) {
        for p in &deps.waiting_on {
            self.children.entry(p.0).or_default().insert(child);
        }
    }

    /// Forgets `child`'s waits: it left.
    pub(super) fn unregister_waits(&mut self, child: u64, deps: &Dependencies) {
        for p in &deps.waiting_on {
            if let Some(set) = self.children.get_mut(&p.0) {
                set.remove(&child);
                if set.is_empty() {
                    self.children.remove(&p.0);
                }
            }
        }
    }

    /// What these endings do to the tasks waiting for them, down every
    /// chain a cancel starts; nothing changes until the follow-ups are
    /// applied. Free when no task waits for anything; a task waiting for
    /// many parents is looked up, never copied (a batch callback may wait
    /// for 10,000).
    pub(crate) fn follow(&self, endings: impl IntoIterator<Item = (u64, Ending)>) -> Vec<Follow> {
        if self.children.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        // Per task touched so far: the parents struck and its failures.
        let mut touched: HashMap<u64, (Vec<u64>, u32)> = HashMap::new();
        let mut cancelled: Vec<u64> = Vec::new();
        let mut queue: Vec<(u64, Ending)> = endings.into_iter().collect();
        while let Some((parent, ending)) = queue.pop() {
            let Some(waiting) = self.children.get(&parent) else {
                continue;
            };
            for &child in waiting {
                if cancelled.contains(&child) {
                    continue;
                }
                let Some(deps) = self.tasks.extra(child).and_then(|x| x.deps.as_deref()) else {
                    continue;
                };
                let (struck, failed) = touched
                    .entry(child)
                    .or_insert_with(|| (Vec::new(), deps.failed));
                let waits = deps.waiting_on.binary_search(&TaskId(parent)).is_ok();
                if !waits || struck.contains(&parent) {
                    continue;
                }
                struck.push(parent);
                if ending == Ending::Failed {
                    *failed += 1;
                }
                let left = deps.waiting_on.len() - struck.len();
                let outcome = outcome(ending, deps.if_parent_fails, left);
                out.push(Follow {
                    task: child,
                    parent,
                    failed: *failed,
                    outcome,
                });
                if outcome == Outcome::Cancelled {
                    cancelled.push(child);
                    queue.push((child, Ending::Failed));
                }
            }
        }
        out
    }

    /// Applies an ending's follow-ups. One whose task is gone, or no longer
    /// waits for that parent, was applied already (a replay over a
    /// checkpoint that holds it) and changes nothing.
    pub(super) fn apply_follow(&mut self, now: Timestamp, follow: &[Follow]) {
        for f in follow {
            let Some(deps) = self
                .tasks
                .extra_mut(f.task)
                .and_then(|x| x.deps.as_deref_mut())
            else {
                continue;
            };
            let Ok(at) = deps.waiting_on.binary_search(&TaskId(f.parent)) else {
                continue;
            };
            deps.waiting_on.remove(at);
            deps.failed = f.failed;
            let released = deps.waiting_on.is_empty();
            if let Some(set) = self.children.get_mut(&f.parent) {
                set.remove(&f.task);
                if set.is_empty() {
                    self.children.remove(&f.parent);
                }
            }
            match f.outcome {
                Outcome::Cancelled => {
                    self.remove(f.task, now);
                }
                Outcome::Released | Outcome::Pending if released => {
                    self.release(f.task, now);
                }
                Outcome::Released | Outcome::Pending => {}
            }
        }
    }

    /// A pending task whose last parent ended: scheduled or ready by its
    /// run_at.
    fn release(&mut self, id: u64, now: Timestamp) {
        self.detach(id);
        if let Some(e) = self.tasks.get_mut(id) {
            e.state = TaskState::Scheduled;
        }
        if let Some(x) = self.tasks.extra_mut(id) {
            x.updated_at = now;
        }
        self.attach(id, now);
    }
}
