//! What parents' endings do to the tasks waiting for them, inside the
//! transaction that ended the parents (docs/spec.md §3.2).
//!
//! One round per generation of the chain: take the ended parents' edges,
//! lock their children in id order, apply `spool_core::deps::on_parent_end`
//! for each ended parent of each child, write what it became. A child its
//! policy cancels is deleted like a cancel (its key retired) and ends as
//! failed for the next round. Each edge is taken once, so applying an
//! ending twice (a retried task that dies again) changes nothing.
//!
//! A parent acked with a result leaves it to each child that still waited
//! for it (`spool_core::deps::keep_result`): the child's write adds that
//! one member to its `parent_results`, in the same statement that records
//! the ending, so the result and the ending commit together.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use spool_core::deps::{keep_result, on_parent_end, Ending, Outcome};
use spool_core::{TaskId, TaskResult, TaskState};

use super::tx::{pg, Failure};
use crate::db::Db;
use crate::error::corrupt;
use crate::row::{results_json, StoredTask};
use crate::sql::Sql;
use crate::values;

/// What resolving did that others must hear of once it commits.
#[derive(Default, Debug)]
pub(crate) struct Resolved {
    /// Queues where a task was released: their waiting claimers wake.
    pub(crate) released: BTreeSet<String>,
}

/// Applies `ended` (task ids and how each ended) to their dependents and
/// down every chain of cancels; `result` is the result one of them, which
/// completed, left for its dependents (a cancel down a chain leaves none).
/// `db` must be a transaction: the caller's ending and this are one
/// change.
pub(crate) async fn resolve(
    db: &(impl Db + ?Sized),
    sql: &Sql,
    mut ended: Vec<(i64, Ending)>,
    mut result: Option<(i64, &TaskResult)>,
) -> Result<Resolved, Failure> {
    let mut out = Resolved::default();
    while !ended.is_empty() {
        // Only the first round's parents may have left one: the later
        // rounds' are children cancelled here.
        let left = result.take();
        let how: HashMap<i64, Ending> = ended.iter().copied().collect();
        let parents: Vec<i64> = how.keys().copied().collect();
        let edges = db
            .query(&sql.deps_take_edges, &[&parents])
            .await
            .map_err(pg)?;
        let mut parents_of: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        for row in &edges {
            let parent: i64 = row.try_get("parent").map_err(corrupt)?;
            let child: i64 = row.try_get("child").map_err(corrupt)?;
            parents_of.entry(child).or_default().push(parent);
        }
        ended = Vec::new();
        if parents_of.is_empty() {
            break;
        }
        let children: Vec<i64> = parents_of.keys().copied().collect();
        let locked = db
            .query(&sql.deps_lock_children, &[&children])
            .await
            .map_err(pg)?;
        for row in &locked {
            let task = StoredTask::from_row(row)?.view()?;
            let child = values::id(task.id);
            let (TaskState::Pending, Some(mut deps)) = (task.state, task.deps) else {
                // Released or cancelled by another path meanwhile: a pending
                // task keeps its edges until it is neither.
                continue;
            };
            let mut outcome = None;
            let mut received = Vec::new();
            for &parent in parents_of.get(&child).into_iter().flatten() {
                let ending = how
                    .get(&parent)
                    .copied()
                    .ok_or_else(|| corrupt("an edge of a parent that did not end"))?;
                let id = TaskId(u64::try_from(parent).map_err(corrupt)?);
                let step = on_parent_end(&mut deps, id, ending);
                if outcome != Some(Outcome::Cancelled) && step.is_some() {
                    outcome = step;
                }
                // `step` is None when the child no longer waited for the
                // parent: an ending applied twice hands nothing on again.
                if let Some((_, r)) = left.filter(|(p, _)| *p == parent && step.is_some()) {
                    keep_result(&mut deps, id, r.clone());
                    received.push((id, r.clone()));
                }
            }
            match outcome {
                None => {}
                Some(Outcome::Cancelled) => {
                    db.query(&sql.cancel, &[&child, &true]).await.map_err(pg)?;
                    ended.push((child, Ending::Failed));
                }
                Some(o) => {
                    let released = o == Outcome::Released && deps.waiting_on.is_empty();
                    let rows = write(db, sql, child, &deps, &received, released, false).await?;
                    if released {
                        if let Some(row) = rows.first() {
                            out.released
                                .insert(row.try_get::<_, String>("queue").map_err(corrupt)?);
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Writes `deps` to task `id` (`sql/deps_write.sql`): pending, or released
/// when `released`; with `after` and the policy too when `new` (enqueue).
/// `received` are the results it has just been handed, added to those it
/// holds: only they travel, not every result `deps` holds.
pub(crate) async fn write(
    db: &(impl Db + ?Sized),
    sql: &Sql,
    id: i64,
    deps: &spool_core::Dependencies,
    received: &[(TaskId, TaskResult)],
    released: bool,
    new: bool,
) -> Result<Vec<tokio_postgres::Row>, Failure> {
    let ids = |v: &[TaskId]| v.iter().map(|t| values::id(*t)).collect::<Vec<i64>>();
    let after = new.then(|| ids(&deps.after));
    let waiting = ids(&deps.waiting_on);
    let failed = i32::try_from(deps.failed).map_err(corrupt)?;
    let policy = new.then(|| deps.if_parent_fails.as_str());
    let received = results_json(received);
    db.query(
        &sql.deps_write,
        &[
            &id, &after, &waiting, &failed, &policy, &released, &received,
        ],
    )
    .await
    .map_err(pg)
}
