//! Claims from queues with limits (docs/spec.md §4): a rate limit, a cap
//! on tasks leased at once, or both.
//!
//! Such a claim is a transaction of two statements: take the queue row's
//! lock (`sql/lock_limited_queue.sql`), then claim what the limits allow
//! and spend the tokens (`sql/claim_limited.sql`). The lock makes the
//! claims of one limited queue take turns across every node on the
//! schema, and the claim's snapshot, taken once the lock is granted, sees
//! what the turns before it took: the limits hold across nodes, not per
//! node. Queues without limits never come here: the ordinary claim
//! statement takes no lock, and answers `limited` for a queue that has
//! some, which this process then remembers
//! ([`LimitedQueues`](crate::limited::LimitedQueues)) so its
//! next claims there come straight here.

use std::time::Duration;

use spool_core::StoreError;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::{Db, Params};
use crate::error::{corrupt, db};

/// Whether a claim statement's rows say the queue has limits.
pub(crate) fn says_limited(rows: &[Row]) -> Result<bool, StoreError> {
    match rows.first() {
        Some(row) => row
            .try_get::<_, Option<bool>>("limited")
            .map(|l| l.unwrap_or(false))
            .map_err(corrupt),
        None => Ok(false),
    }
}

/// How long a waiting claim may sleep before the limits could let it take
/// something: until the bucket holds a token again, or the first live
/// lease runs out. `None`: the limits do not hold it back.
fn recheck_in(rows: &[Row]) -> Result<Option<Duration>, StoreError> {
    let Some(row) = rows.first() else {
        return Ok(None);
    };
    let ms = |column: &str| -> Result<Option<Duration>, StoreError> {
        let v: Option<i64> = row.try_get(column).map_err(corrupt)?;
        Ok(v.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))))
    };
    let refill = ms("refill_ms")?.filter(|d| !d.is_zero());
    Ok(match (refill, ms("expiry_ms")?) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    })
}

impl Backend {
    /// Runs the limited claim in its transaction. Answers the statement's
    /// rows and when a waiting claim should look again.
    pub(crate) async fn claim_limited(
        &self,
        queue: &str,
        params: &Params<'_>,
    ) -> Result<(Vec<Row>, Option<Duration>), StoreError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(db)?;
        let locked = tx
            .query(&self.sql.lock_limited_queue, &[&queue])
            .await
            .map_err(db)?;
        if locked.is_empty() {
            return Ok((Vec::new(), None));
        }
        let rows = tx
            .query(&self.sql.claim_limited, params)
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        self.limited.set(queue, says_limited(&rows)?);
        let recheck = recheck_in(&rows)?;
        Ok((rows, recheck))
    }
}
