//! Writing a task's dependencies to its row (`sql/deps_write.sql`), at
//! enqueue and at each ending it waits for. What is written does not grow
//! with the task's parents: counts, the policy, and at most the one result
//! it has just received (migration 13); `after_ids` is written once, at
//! enqueue, and kept as stored afterwards.

use spool_core::{ParentFailure, TaskId, TaskResult};

use super::tx::{pg, Failure};
use crate::db::Db;
use crate::error::corrupt;
use crate::sql::Sql;
use crate::values;

/// What one write records of task `id`.
pub(crate) struct DepsWrite<'a> {
    pub(crate) id: i64,
    /// The parents named, in order: at enqueue only.
    pub(crate) after: Option<&'a [TaskId]>,
    /// How many it still waits for.
    pub(crate) waiting: usize,
    /// How many failed.
    pub(crate) failed: u32,
    /// Its policy: at enqueue only.
    pub(crate) policy: Option<ParentFailure>,
    /// The result a parent that just completed left it.
    pub(crate) received: Option<(i64, &'a TaskResult)>,
    /// Whether every parent has ended: scheduled or ready by its run_at.
    pub(crate) released: bool,
}

impl DepsWrite<'_> {
    /// Writes it; answers the row's state and queue name.
    pub(crate) async fn run(
        &self,
        db: &(impl Db + ?Sized),
        sql: &Sql,
    ) -> Result<Vec<tokio_postgres::Row>, Failure> {
        let after: Option<Vec<i64>> = self
            .after
            .map(|a| a.iter().map(|t| values::id(*t)).collect());
        let waiting = i32::try_from(self.waiting).map_err(corrupt)?;
        let failed = i32::try_from(self.failed).map_err(corrupt)?;
        let policy = self.policy.map(|p| p.as_str());
        let (parent, result) = match self.received {
            Some((parent, result)) => (Some(parent), Some(result.as_str())),
            None => (None, None),
        };
        db.query(
            &sql.deps_write,
            &[
                &self.id,
                &after,
                &waiting,
                &failed,
                &policy,
                &self.released,
                &parent,
                &result,
            ],
        )
        .await
        .map_err(pg)
    }
}
