//! What parents' endings do to the tasks waiting for them, inside the
//! transaction that ended the parents (docs/spec.md §3.2).
//!
//! One round per generation of the chain: take the ended parents' edges,
//! lock their children in id order, apply each ended parent of each child,
//! write what it became. A child its policy cancels is deleted like a
//! cancel (its key retired, its results deleted after it) and ends as
//! failed for the next round. Each edge is taken once, so applying an
//! ending twice (a retried task that dies again) changes nothing.
//!
//! Each child is tracked by counts on its row (`waiting_count`,
//! `parents_failed`, migration 13), decided by
//! `spool_core::deps::outcome`: the edge taken says the child still waited
//! for that parent, so the count is exact. A parent acked with a result
//! leaves it to each child that still waited for it: one row of
//! `task_results`, written with the child's counts in one statement
//! ([`DepsWrite`]), so the result and the ending commit together, and
//! each ending writes for each child its row and at most one result,
//! however many parents the child has.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use spool_core::deps::{outcome, Ending, Outcome};
use spool_core::{ParentFailure, TaskResult};

use super::tx::{pg, Failure};
use super::write::DepsWrite;
use crate::db::Db;
use crate::error::corrupt;
use crate::sql::Sql;

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
            let child: i64 = row.try_get("id").map_err(corrupt)?;
            let state: &str = row.try_get("state").map_err(corrupt)?;
            if state != "pending" {
                // Released or cancelled by another path meanwhile: a pending
                // task keeps its edges until it is neither.
                continue;
            }
            let count = |column: &str| -> Result<u32, Failure> {
                let n: Option<i32> = row.try_get(column).map_err(corrupt)?;
                Ok(u32::try_from(n.unwrap_or(0)).map_err(corrupt)?)
            };
            let (mut waiting, mut failed) = (count("waiting_count")?, count("parents_failed")?);
            let policy = row
                .try_get::<_, Option<&str>>("if_parent_fails")
                .map_err(corrupt)?
                .unwrap_or("cancel")
                .parse::<ParentFailure>()
                .map_err(corrupt)?;
            let mut became = Outcome::Pending;
            let mut received = None;
            for &parent in parents_of.get(&child).into_iter().flatten() {
                let ending = how
                    .get(&parent)
                    .copied()
                    .ok_or_else(|| corrupt("an edge of a parent that did not end"))?;
                // Each edge is taken once, while its child waits for its
                // parent: the count holds it.
                waiting = waiting
                    .checked_sub(1)
                    .ok_or_else(|| corrupt("an edge its child does not count"))?;
                if ending == Ending::Failed {
                    failed += 1;
                }
                if became != Outcome::Cancelled {
                    became = outcome(ending, policy, waiting as usize);
                }
                if let Some((_, r)) = left.filter(|(p, _)| *p == parent) {
                    received = Some((parent, r));
                }
            }
            if became == Outcome::Cancelled {
                db.query(&sql.cancel, &[&child, &true]).await.map_err(pg)?;
                db.query(&sql.deps_drop_results, &[&child])
                    .await
                    .map_err(pg)?;
                ended.push((child, Ending::Failed));
                continue;
            }
            let released = became == Outcome::Released;
            let rows = DepsWrite {
                id: child,
                after: None,
                waiting: waiting as usize,
                failed,
                policy: None,
                received,
                released,
            }
            .run(db, sql)
            .await?;
            if released {
                if let Some(row) = rows.first() {
                    out.released
                        .insert(row.try_get::<_, String>("queue").map_err(corrupt)?);
                }
            }
        }
    }
    Ok(out)
}
