//! Claim (docs/spec.md §3): one statement per batch, and the long poll around it.
//!
//! A waiting claim holds no connection while it sleeps. It listens for its
//! queue's doorbell before each look (so a wake-up during the look is
//! kept), and sleeps until the first of: a wake-up (LISTEN/NOTIFY; one
//! waiter per wake-up, [`crate::wake`]), the next scheduled task of the
//! queue falling due, the fallback poll, or the end of its wait. A claim
//! that took a full batch rings the doorbell again: more may be ready.
//!
//! How the statement runs depends on [`ClaimStrategy`]: directly, or under
//! the per-queue lock of [`crate::ops::claim_lock`]; for a queue with
//! limits, as [`crate::ops::claim_limits`] says, and a waiting claim that
//! the limits held back also wakes when they may let it in; a waiting
//! claim on a queue with a rate limit is paced by
//! [`crate::ops::claim_pace`], which sleeps for the bucket itself.
//!
//! A claim whose first look the limits held back while the queue held
//! tasks it could take otherwise counts once as
//! `spool_claims_throttled_total` (docs/spec.md §7), as the embedded
//! engine counts a claim it answers or parks for that reason: later looks
//! of a long poll do not count again. The limited claim's statement (or a
//! paced claim's read of the bucket) says so itself, asking whether tasks
//! are ready only when the limits leave nothing; the ordinary claim
//! statement, which queues without limits run alone, is unchanged.

use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use rand::Rng;
use spool_core::{ClaimRequest, QueueName, StoreError, Task};
use tokio::time::Instant;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::config::ClaimStrategy;
use crate::db::{Db, Params};
use crate::error::{corrupt, db};
use crate::floor::Key;
use crate::ops::claim_limits::{says_limited, Limited};
use crate::row::StoredTask;
use crate::values::millis;

/// One fresh token per task that may be claimed, drawn from a CSPRNG: a
/// token is a secret that proves the lease.
fn fresh_tokens(max: u32) -> Vec<i64> {
    let mut rng = rand::thread_rng();
    (0..max).map(|_| rng.gen()).collect()
}

/// The tasks a claim statement answered, in claim order: the rows with an
/// `n`, sorted by it (rows without one say something other than a task).
fn claimed_in_order(rows: &[Row]) -> Result<Vec<StoredTask>, StoreError> {
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(n) = row.try_get::<_, Option<i64>>("n").map_err(corrupt)? {
            claimed.push((n, StoredTask::from_row(row)?));
        }
    }
    claimed.sort_unstable_by_key(|(n, _)| *n);
    Ok(claimed.into_iter().map(|(_, t)| t).collect())
}

/// The counter of claims that the queue's limits held back while tasks
/// were ready, named as the embedded engine names it.
const THROTTLED: &str = "spool_claims_throttled_total";

/// What one look of a claim found.
struct Look {
    /// The tasks it claimed, in claim order.
    tasks: Vec<Task>,
    /// When the queue's limits held it back: how long until they may let
    /// it take something.
    recheck: Option<Duration>,
    /// Whether the limits let it take nothing while tasks were ready.
    throttled: bool,
}

/// Counts a claim on `queue` that the limits held back at its first look.
fn count_throttled(queue: &QueueName, first: &Look) {
    if first.throttled {
        metrics::counter!(THROTTLED, "queue" => queue.to_string()).increment(1);
    }
}

/// The claim-order key of the last task a claim took: what the floor rises
/// to.
fn last_claimed(rows: &[Row]) -> Result<Option<Key>, StoreError> {
    let mut last: Option<(i64, &Row)> = None;
    for row in rows {
        if let Some(n) = row.try_get::<_, Option<i64>>("n").map_err(corrupt)? {
            if last.is_none_or(|(m, _)| n > m) {
                last = Some((n, row));
            }
        }
    }
    let Some((_, row)) = last else {
        return Ok(None);
    };
    let priority: i16 = row.try_get("priority").map_err(corrupt)?;
    let run_at: SystemTime = row.try_get("run_at").map_err(corrupt)?;
    Ok(Some((priority, run_at)))
}

impl Backend {
    pub(crate) async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        req.validate()?;
        let lease_ms = req.lease.map(|l| millis("lease_ms", l)).transpose()?;
        if req.wait.is_zero() {
            let look = self.claim_once(&req, lease_ms, None).await?;
            count_throttled(&req.queue, &look);
            return Ok(look.tasks);
        }
        let deadline = Instant::now() + req.wait;
        let bell = self.wakeups.bell(req.queue.as_str());
        let mut first = true;
        loop {
            let woken = bell.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            let look = self.claim_once(&req, lease_ms, Some(deadline)).await?;
            if std::mem::take(&mut first) {
                count_throttled(&req.queue, &look);
            }
            let Look { tasks, recheck, .. } = look;
            let now = Instant::now();
            if !tasks.is_empty() || now >= deadline {
                if tasks.len() == req.max as usize {
                    self.wakeups.wake(req.queue.as_str());
                }
                return Ok(tasks);
            }
            let mut until = deadline.min(now + self.config.poll_interval);
            if let Some(due) = self.next_due(&req).await? {
                until = until.min(now + due);
            }
            if let Some(recheck) = recheck {
                until = until.min(now + recheck);
            }
            tokio::select! {
                () = &mut woken => {}
                () = tokio::time::sleep_until(until) => {}
            }
        }
    }

    /// One claim statement (a limited claim's transaction, for a queue
    /// with limits); counts what it claimed towards the next vacuum.
    /// Answers the tasks, and, when the queue's limits held the claim
    /// back, how long until they may let it take something and whether
    /// tasks were ready meanwhile. A long poll passes its `deadline`, until
    /// which a rate limit may pace it.
    async fn claim_once(
        &self,
        req: &ClaimRequest,
        lease_ms: Option<i64>,
        deadline: Option<Instant>,
    ) -> Result<Look, StoreError> {
        let max = i64::from(req.max);
        let tokens = fresh_tokens(req.max);
        let queue = req.queue.as_str();
        let start = self.floors.start(queue);
        let (floor_priority, floor_run_at) = start.key;
        let params: &Params<'_> = &[
            &queue,
            &req.worker,
            &max,
            &lease_ms,
            &tokens,
            &floor_priority,
            &floor_run_at,
        ];
        let rows = if self.limited.contains(queue) {
            self.claim_with_limits(queue, params, req.max, deadline)
                .await
        } else {
            let rows = match self.config.claim {
                ClaimStrategy::SkipLocked => match self.client().await {
                    Ok(client) => client.query(&self.sql.claim, params).await.map_err(db),
                    Err(e) => Err(e),
                },
                ClaimStrategy::GlobalLock => self.claim_under_lock(params).await,
            };
            match rows {
                Ok(rows) if says_limited(&rows)? => self.claim_limited(queue, params).await,
                other => other.map(|rows| Limited {
                    rows,
                    recheck: None,
                    grouped: false,
                    throttled: false,
                }),
            }
        };
        let Limited {
            rows,
            recheck,
            grouped,
            throttled,
        } = match rows {
            Ok(rows) => rows,
            Err(e) => {
                // It may have locked rows, and left them behind the floor.
                self.floors.reset(Some(queue));
                return Err(e);
            }
        };
        // A grouped claim takes tasks out of claim order: what it took
        // says nothing of where the order's front is.
        if let Some(last) = last_claimed(&rows)?.filter(|_| !grouped) {
            self.floors.raise(queue, &start, last);
        }
        let claimed = claimed_in_order(&rows)?;
        self.claimed_since_vacuum
            .fetch_add(claimed.len() as u64, Ordering::Relaxed);
        // A task that named parents reads its parents' results beside its
        // row. A leased task's results change only when it is deleted: one
        // missing there was cancelled since the claim, and is not handed
        // out.
        let claimed = self
            .completed(claimed)
            .await?
            .into_iter()
            .flatten()
            .collect();
        Ok(Look {
            tasks: claimed,
            recheck,
            throttled,
        })
    }

    /// How long until the queue's next scheduled task is due, if any.
    async fn next_due(&self, req: &ClaimRequest) -> Result<Option<Duration>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.next_due, &[&req.queue.as_str()])
            .await
            .map_err(db)?;
        let ms: Option<i64> = match rows.first() {
            Some(row) => row.try_get(0).map_err(corrupt)?,
            None => None,
        };
        Ok(ms.map(|ms| Duration::from_millis(u64::try_from(ms).unwrap_or(0))))
    }
}
