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
use spool_core::deps::{keep_result, outcome, Ending, Outcome};
use spool_core::{Dependencies, TaskId, TaskResult, TaskState, Timestamp};

use super::State;
use crate::ops::Follow;

/// What one task's follow-ups in a record do to it.
struct Struck {
    /// The parents struck from its waits.
    parents: Vec<TaskId>,
    /// Its count of failed parents afterwards.
    failed: u32,
    cancelled: bool,
    /// The results of struck parents that left one.
    results: Vec<(TaskId, TaskResult)>,
}

/// Removes `struck` (ascending) from `waiting_on` (ascending). A callback
/// whose members are acked one by one loses one parent a record: found by
/// binary search and removed by one move of the tail, not a pass that
/// tests all 10,000.
fn strike(waiting_on: &mut Vec<TaskId>, struck: &[TaskId]) {
    if struck.len() > 8 {
        waiting_on.retain(|p| struck.binary_search(p).is_err());
        return;
    }
    for p in struck {
        if let Ok(at) = waiting_on.binary_search(p) {
            waiting_on.remove(at);
        }
    }
}

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

    /// Applies an ending's follow-ups, handing each task waiting for a
    /// parent in `results` that parent's result. One whose task is gone,
    /// or no longer waits for that parent, was applied already (a replay
    /// over a checkpoint that holds it) and changes nothing. A task's
    /// follow-ups are applied together: a callback whose members end a
    /// hundred at a time strikes them from its waits in one pass.
    pub(super) fn apply_follow(
        &mut self,
        now: Timestamp,
        follow: &[Follow],
        results: &[(u64, TaskResult)],
    ) {
        let mut order: Vec<u64> = Vec::new();
        let mut by_task: HashMap<u64, Struck> = HashMap::new();
        for f in follow {
            let Some(deps) = self.tasks.extra(f.task).and_then(|x| x.deps.as_deref()) else {
                continue;
            };
            if deps.waiting_on.binary_search(&TaskId(f.parent)).is_err() {
                continue;
            }
            let entry = by_task.entry(f.task).or_insert_with(|| {
                order.push(f.task);
                Struck {
                    parents: Vec::new(),
                    failed: f.failed,
                    cancelled: false,
                    results: Vec::new(),
                }
            });
            entry.parents.push(TaskId(f.parent));
            entry.failed = entry.failed.max(f.failed);
            entry.cancelled |= f.outcome == Outcome::Cancelled;
            // Results come one per ack: a short list to look through.
            if let Some((_, r)) = results.iter().find(|(id, _)| *id == f.parent) {
                entry.results.push((TaskId(f.parent), r.clone()));
            }
            if let Some(set) = self.children.get_mut(&f.parent) {
                set.remove(&f.task);
                if set.is_empty() {
                    self.children.remove(&f.parent);
                }
            }
        }
        for task in order {
            let Some(mut struck) = by_task.remove(&task) else {
                continue;
            };
            struck.parents.sort_unstable();
            let Some(deps) = self
                .tasks
                .extra_mut(task)
                .and_then(|x| x.deps.as_deref_mut())
            else {
                continue;
            };
            strike(&mut deps.waiting_on, &struck.parents);
            deps.failed = struck.failed;
            for (parent, r) in struck.results {
                keep_result(deps, parent, r);
            }
            let released = deps.waiting_on.is_empty();
            if struck.cancelled {
                self.remove(task, now);
            } else if released {
                self.release(task, now);
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
