//! A queue's groups (docs/spec.md §4, "Groups"): how many tasks of each
//! wait and how many are leased. The claim side of groups is in
//! [`crate::ops::claim_limits`] and `sql/claim_group_steps.sql`.

use spool_core::groups::{busiest_first, validate_limit, GroupStats};
use spool_core::{QueueName, StoreError, TaskGroup};

use crate::backend::Backend;
use crate::db::Db;
use crate::error::{corrupt, db};

/// A count read from the statement: never negative.
fn count(row: &tokio_postgres::Row, column: &str) -> Result<u64, StoreError> {
    let n: i64 = row.try_get(column).map_err(corrupt)?;
    u64::try_from(n).map_err(corrupt)
}

impl Backend {
    /// The queue's groups with tasks waiting or leased, busiest first. The
    /// statement counts in SQL, so the queue's expired leases are written
    /// down first, as for a list.
    pub(crate) async fn groups(
        &self,
        queue: &QueueName,
        limit: usize,
    ) -> Result<Vec<GroupStats>, StoreError> {
        validate_limit(limit)?;
        let queue_id = match self.get_queue(queue).await {
            Ok((id, _)) => id,
            Err(StoreError::QueueNotFound(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        self.expire_leases(Some(queue_id)).await?;
        let most = i64::try_from(limit).map_err(corrupt)?;
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.groups, &[&queue_id, &most])
            .await
            .map_err(db)?;
        let groups = rows
            .iter()
            .map(|row| {
                Ok(GroupStats {
                    group: TaskGroup::new(row.try_get::<_, String>("grp").map_err(corrupt)?)
                        .map_err(corrupt)?,
                    waiting: count(row, "waiting")?,
                    leased: count(row, "leased")?,
                    rate_tokens: row
                        .try_get::<_, Option<i64>>("rate_tokens")
                        .map_err(corrupt)?
                        .map(crate::values::tokens),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        // The statement's order already; this keeps it exactly the one
        // every store reports in.
        Ok(busiest_first(groups, limit))
    }
}
