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
//!
//! Queues with groups (that hold grouped tasks, or bound each
//! group's leases) come here too, limits or not: the lock statement says
//! so, and the claim then takes the groups in turn
//! (`sql/claim_group_steps.sql` inside `sql/claim_limited.sql`) and keeps
//! the group it served last in the queue's row, for the next claim on any
//! node (README.md, "Groups").
//!
//! The transaction runs again, up to [`ATTEMPTS`] times in all, when a
//! statement met a row the rotation moved under it (as pooled statements
//! do, [`crate::db`]): it changed nothing.
//!
//! A long poll on a queue with a rate limit comes here through
//! [`crate::ops::claim_pace`], which tries the lock rather than waits for
//! it ([`Backend::try_claim_limited`]).
//!
//! The claim statement also says whether the limits held it back: they
//! let it take nothing while the queue holds tasks it could take
//! otherwise (`throttled`, `sql/ready_waits.sql`, asked only then), which
//! [`Backend::claim`] counts as `spool_claims_throttled_total`.

use std::time::Duration;

use spool_core::StoreError;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::{moved_under_it, Db, Params, ATTEMPTS};
use crate::error::{corrupt, db};
use crate::sql::Sql;

/// What a limited claim answered.
pub(crate) struct Limited {
    /// The claim statement's rows (none if the queue is gone).
    pub(crate) rows: Vec<Row>,
    /// When a waiting claim should look again.
    pub(crate) recheck: Option<Duration>,
    /// Whether it took the groups in turn: then what it took says nothing
    /// of where the claim order's front is ([`crate::floor`]).
    pub(crate) grouped: bool,
    /// Whether the limits let it take nothing although the queue holds
    /// tasks it could take otherwise.
    pub(crate) throttled: bool,
}

impl Limited {
    /// A claim that took nothing and says nothing of when to look again.
    pub(crate) fn nothing() -> Limited {
        Limited {
            rows: Vec::new(),
            recheck: None,
            grouped: false,
            throttled: false,
        }
    }
}

/// How many parameters the grouped claim takes: those of the claim
/// statement before the claim floor, which it does not use.
const GROUPED_PARAMS: usize = 5;

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

/// Whether a limited claim's rows say the queue has a rate limit: its
/// `refill_ms` is NULL without one.
fn says_rated(rows: &[Row]) -> Result<bool, StoreError> {
    match rows.first() {
        Some(row) => row
            .try_get::<_, Option<i64>>("refill_ms")
            .map(|r| r.is_some())
            .map_err(corrupt),
        None => Ok(false),
    }
}

/// Whether a limited claim's rows say the limits held it back while tasks
/// were ready.
fn says_throttled(rows: &[Row]) -> Result<bool, StoreError> {
    match rows.first() {
        Some(row) => row
            .try_get::<_, Option<bool>>("throttled")
            .map(|t| t.unwrap_or(false))
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
    /// Runs the limited claim in its transaction, waiting for the queue
    /// row's lock, again if a row moved under it. Answers the statement's
    /// rows and when a waiting claim should look again.
    pub(crate) async fn claim_limited(
        &self,
        queue: &str,
        params: &Params<'_>,
    ) -> Result<Limited, StoreError> {
        let lock = &self.sql.lock_limited_queue;
        match self.claim_locked(queue, params, lock).await? {
            Some(limited) => Ok(limited),
            // No such queue: nothing to remember of it.
            None => {
                self.limited.set(queue, false, false);
                Ok(Limited::nothing())
            }
        }
    }

    /// The limited claim if the queue row's lock is free now; `None`, having
    /// changed nothing, while another transaction holds it (or the queue is
    /// unknown).
    pub(crate) async fn try_claim_limited(
        &self,
        queue: &str,
        params: &Params<'_>,
    ) -> Result<Option<Limited>, StoreError> {
        let lock = &self.sql.try_lock_limited_queue;
        self.claim_locked(queue, params, lock).await
    }

    /// The limited claim under `lock` (one of the two renderings of
    /// `sql/lock_limited_queue.sql`); `None` when it answered no row.
    async fn claim_locked(
        &self,
        queue: &str,
        params: &Params<'_>,
        lock: &str,
    ) -> Result<Option<Limited>, StoreError> {
        let mut client = self.client().await?;
        let mut attempt = 1;
        let taken = loop {
            match limited_transaction(&mut client, &self.sql, lock, params).await {
                Err(e) if attempt < ATTEMPTS && moved_under_it(&e) => attempt += 1,
                done => break done.map_err(db)?,
            }
        };
        let Some((rows, grouped)) = taken else {
            return Ok(None);
        };
        self.limited
            .set(queue, says_limited(&rows)?, says_rated(&rows)?);
        let recheck = recheck_in(&rows)?;
        let throttled = says_throttled(&rows)?;
        Ok(Some(Limited {
            rows,
            recheck,
            grouped,
            throttled,
        }))
    }
}

/// Locks the queue's row with `lock` and claims: in claim order, or the
/// groups in turn when the lock statement says the queue has groups.
/// Answers the claim's rows (none if the queue is paused) and which it
/// was; `None`, rolled back, if the lock statement answered no row.
async fn limited_transaction(
    client: &mut deadpool_postgres::Client,
    sql: &Sql,
    lock: &str,
    params: &Params<'_>,
) -> Result<Option<(Vec<Row>, bool)>, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    let locked = tx.query(lock, &params[..1]).await?;
    let Some(row) = locked.first() else {
        tx.rollback().await?;
        return Ok(None);
    };
    let grouped: bool = row.try_get("grouped")?;
    let rows = if grouped {
        tx.query(&sql.claim_grouped, &params[..GROUPED_PARAMS])
            .await?
    } else {
        tx.query(&sql.claim_limited, params).await?
    };
    tx.commit().await?;
    Ok(Some((rows, grouped)))
}
