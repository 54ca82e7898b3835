//! Dependencies between tasks (docs/spec.md §3.2): the rules every store
//! applies when a task names others in `after`.
//!
//! A task that waits for others is `pending` until each has ended:
//! completed, dead or cancelled. A parent is always an earlier task (its id
//! is lower), so dependencies never form a cycle. These pure functions
//! state the rules once; stores keep the waiting tasks and apply them.

use std::collections::HashSet;

use crate::error::StoreError;
use crate::outcome::TaskResult;
use crate::task::{Dependencies, NewTask, Parent, ParentFailure, TaskId};

/// Refuses a reference to a position of the batch that is not before the
/// task naming it: parents come first.
pub fn validate_in_batch(tasks: &[NewTask]) -> Result<(), StoreError> {
    for (i, t) in tasks.iter().enumerate() {
        if let Some(j) = position_not_before(t, i) {
            return Err(StoreError::bad_request(format!(
                "task {i} of the batch waits for task {j} of the batch: \
                 a task may only wait for tasks before it"
            )));
        }
    }
    Ok(())
}

/// The first position of its batch that `task`, at `position`, waits for
/// and that is not before its own, if it names one.
pub fn position_not_before(task: &NewTask, position: usize) -> Option<u32> {
    task.after.iter().find_map(|p| match *p {
        Parent::InBatch(j) if j as usize >= position => Some(j),
        _ => None,
    })
}

/// The ids a new task waits for, in the order named, each once: positions
/// in the batch become the ids `batch` assigned them.
pub fn resolve(after: &[Parent], batch: &[TaskId]) -> Vec<TaskId> {
    let mut seen: HashSet<TaskId> = HashSet::with_capacity(after.len());
    after
        .iter()
        .map(|p| match *p {
            Parent::Task(id) => id,
            Parent::InBatch(i) => batch[i as usize],
        })
        .filter(|id| seen.insert(*id))
        .collect()
}

/// Refuses a parent id the store never assigned: at or past `next_id`.
pub fn check_assigned(after: &[TaskId], next_id: TaskId) -> Result<(), StoreError> {
    match after.iter().find(|id| **id >= next_id) {
        Some(id) => Err(StoreError::bad_request(format!(
            "after names task {id}, which does not exist"
        ))),
        None => Ok(()),
    }
}

/// How a parent ended, as its dependents see it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ending {
    /// Acked (without `reschedule_at`): done.
    Completed,
    /// Dead (out of attempts, discarded, or its last lease expired) or
    /// cancelled.
    Failed,
}

/// What a dependent becomes when one of its parents ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Outcome {
    /// Still waiting for others.
    Pending,
    /// Every parent has ended: scheduled or ready, by its `run_at`.
    Released,
    /// A parent failed and the policy is `cancel`: cancelled, which ends it
    /// as failed for its own dependents.
    Cancelled,
}

/// Records that `parent` ended as `ending` in `deps` (the dependent's
/// dependencies) and says what the dependent becomes. A parent already
/// recorded, or never waited for, changes nothing and answers `None`: so a
/// store may apply the same ending twice.
pub fn on_parent_end(deps: &mut Dependencies, parent: TaskId, ending: Ending) -> Option<Outcome> {
    let at = deps.waiting_on.binary_search(&parent).ok()?;
    deps.waiting_on.remove(at);
    if ending == Ending::Failed {
        deps.failed += 1;
    }
    Some(outcome(ending, deps.if_parent_fails, deps.waiting_on.len()))
}

/// Keeps `parent`'s result in `deps`, in parent order; the same parent
/// again replaces it, so a store may apply the same ending twice. A store
/// calls it when `parent` completed with a result while `deps`' task still
/// waited for it.
pub fn keep_result(deps: &mut Dependencies, parent: TaskId, result: TaskResult) {
    match deps.results.binary_search_by_key(&parent, |(id, _)| *id) {
        Ok(at) => deps.results[at].1 = result,
        Err(at) => deps.results.insert(at, (parent, result)),
    }
}

/// What a dependent becomes when one of its parents ends as `ending`,
/// leaving `left` parents to wait for: for a store that tracks what is
/// left without a copy of the dependencies.
pub fn outcome(ending: Ending, policy: ParentFailure, left: usize) -> Outcome {
    if ending == Ending::Failed && policy == ParentFailure::Cancel {
        Outcome::Cancelled
    } else if left == 0 {
        Outcome::Released
    } else {
        Outcome::Pending
    }
}

/// What a new task with `after` is at enqueue, given how each parent
/// stands then (`ended(id)`: `None` while it is live and not dead,
/// `Some(Ending::Failed)` when it is dead, `Some(Ending::Completed)` when
/// it is gone). A parent gone before its dependent was enqueued counts as
/// completed: completed tasks leave no trace. `None` when `after` is empty.
pub fn at_enqueue(
    after: Vec<TaskId>,
    policy: ParentFailure,
    mut ended: impl FnMut(TaskId) -> Option<Ending>,
) -> Option<(Dependencies, Outcome)> {
    if after.is_empty() {
        return None;
    }
    let mut waiting_on = Vec::with_capacity(after.len());
    let mut failed = 0;
    for &id in &after {
        match ended(id) {
            None => waiting_on.push(id),
            Some(Ending::Failed) => failed += 1,
            Some(Ending::Completed) => {}
        }
    }
    waiting_on.sort_unstable();
    let ending = if failed > 0 {
        Ending::Failed
    } else {
        Ending::Completed
    };
    // A task none of whose parents has ended yet waits, whatever `outcome`
    // would say of an ending.
    let settled = if waiting_on.len() == after.len() {
        Outcome::Pending
    } else {
        outcome(ending, policy, waiting_on.len())
    };
    let deps = Dependencies {
        after,
        waiting_on,
        failed,
        if_parent_fails: policy,
        results: Vec::new(),
    };
    Some((deps, settled))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn deps(after: &[u64], policy: ParentFailure) -> Dependencies {
        let ids: Vec<TaskId> = after.iter().map(|&i| TaskId(i)).collect();
        Dependencies {
            waiting_on: ids.clone(),
            after: ids,
            failed: 0,
            if_parent_fails: policy,
            results: Vec::new(),
        }
    }

    #[test]
    fn the_last_parent_to_end_releases_the_task() {
        let mut d = deps(&[1, 2], ParentFailure::Cancel);
        assert_eq!(
            on_parent_end(&mut d, TaskId(2), Ending::Completed),
            Some(Outcome::Pending)
        );
        assert_eq!(on_parent_end(&mut d, TaskId(2), Ending::Completed), None);
        assert_eq!(
            on_parent_end(&mut d, TaskId(1), Ending::Completed),
            Some(Outcome::Released)
        );
        assert_eq!(d.completed(), 2);
    }

    #[test]
    fn results_are_kept_by_parent_once_each() {
        let mut d = deps(&[1, 2, 3], ParentFailure::Run);
        let r = |t: &str| TaskResult::from_json(t).unwrap();
        keep_result(&mut d, TaskId(3), r("3"));
        keep_result(&mut d, TaskId(1), r("1"));
        keep_result(&mut d, TaskId(3), r("3"));
        assert_eq!(d.results, vec![(TaskId(1), r("1")), (TaskId(3), r("3"))]);
    }

    #[test]
    fn a_failed_parent_cancels_or_counts_by_policy() {
        let mut d = deps(&[1, 2], ParentFailure::Cancel);
        assert_eq!(
            on_parent_end(&mut d, TaskId(1), Ending::Failed),
            Some(Outcome::Cancelled)
        );
        let mut d = deps(&[1, 2], ParentFailure::Run);
        on_parent_end(&mut d, TaskId(1), Ending::Failed);
        assert_eq!(
            on_parent_end(&mut d, TaskId(2), Ending::Completed),
            Some(Outcome::Released)
        );
        assert_eq!((d.failed, d.completed()), (1, 1));
    }

    #[test]
    fn enqueue_counts_gone_parents_completed_and_dead_ones_failed() {
        let ended = |id: TaskId| match id.0 {
            1 => Some(Ending::Completed),
            2 => Some(Ending::Failed),
            _ => None,
        };
        let (d, o) = at_enqueue(vec![TaskId(3), TaskId(1)], ParentFailure::Cancel, ended).unwrap();
        assert_eq!((d.waiting_on, o), (vec![TaskId(3)], Outcome::Pending));
        let (_, o) = at_enqueue(vec![TaskId(1), TaskId(2)], ParentFailure::Cancel, ended).unwrap();
        assert_eq!(o, Outcome::Cancelled);
        let (d, o) = at_enqueue(vec![TaskId(1), TaskId(2)], ParentFailure::Run, ended).unwrap();
        assert_eq!((d.failed, o), (1, Outcome::Released));
    }

    #[test]
    fn batch_positions_resolve_to_ids_once_each() {
        let batch = [TaskId(10), TaskId(11)];
        let after = [
            Parent::InBatch(1),
            Parent::Task(TaskId(11)),
            Parent::Task(TaskId(4)),
        ];
        assert_eq!(resolve(&after, &batch), vec![TaskId(11), TaskId(4)]);
        let bad = vec![NewTask::default().after(Parent::InBatch(0))];
        assert!(validate_in_batch(&bad).is_err());
    }
}
