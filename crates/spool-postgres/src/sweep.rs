//! The sweeper: background upkeep that every store process runs.
//!
//! Each tick (`sweep_interval`, 50 ms by default) it
//! - writes expired leases down (ready again, or dead on the last attempt,
//!   with "lease expired" recorded), deciding with
//!   [`spool_core::transition`] through [`Expiry`], exactly as views derive
//!   them before it gets there. It looks only at leases that ended since
//!   its last complete pass (and a margin), and at all of them every 5 s:
//!   under a held xmin horizon the index's front fills with entries of
//!   acked leases that no scan may skip (`sql/expired_leases.sql`);
//! - promotes due scheduled tasks to ready, so they join the claim index,
//!   and wakes their queues' waiters;
//! - now and then, forgets idempotency keys whose dedup window has passed.
//!
//! A last lease that ran out on a task that pending tasks wait for ends
//! it: such a task is written down dead in a transaction of its own that
//! resolves them ([`crate::deps::endings`]), wherever leases are written
//! down (here, and before lists, stats, groups and retry-all).
//!
//! Several processes may sweep at once: expiry writes are conditional on
//! the lease read, promotion skips rows another sweeper holds, and purging
//! deletes what any of them may delete. When nothing is due a tick costs
//! two index probes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use spool_core::StoreError;

use crate::backend::Backend;
use crate::db::Db;
use crate::deps::tx::{pg, Failure};
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::row::{errors_json, read_errors, Expiry};
use crate::values::{time, timestamp};

/// Most expired leases written down per queue and call; most due tasks
/// promoted per queue and tick; most keys purged per purge.
const EXPIRE_BATCH: i64 = 1000;
const PROMOTE_BATCH: i64 = 1000;
const PURGE_BATCH: i64 = 10_000;
/// Purge expired keys every this many ticks (every 10 s at 50 ms).
const PURGE_EVERY: u64 = 200;
/// Longest pause after a failed tick (the database is down).
const ERROR_PAUSE_MAX: Duration = Duration::from_secs(5);
/// Expiry looks back over everything this often, and otherwise only over
/// leases that ended since its last complete pass, plus `EXPIRY_MARGIN`
/// for claims whose statement ran that long before it committed.
const EXPIRY_RESCAN: Duration = Duration::from_secs(5);
const EXPIRY_MARGIN: Duration = Duration::from_secs(1);
/// The window of a look over everything: 100 years.
pub(crate) const ALL_LEASES: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// Sweeps until the store is dropped (the task is aborted then).
pub(crate) async fn run(backend: Arc<Backend>) {
    let interval = backend.config.sweep_interval;
    let mut pause = interval;
    // When the last pass that looked over everything, and the last
    // complete pass, started.
    let mut looked_at_all: Option<Instant> = None;
    let mut complete: Option<Instant> = None;
    for tick in 0u64.. {
        let purge = tick % PURGE_EVERY == 0;
        let started = Instant::now();
        let window = match (looked_at_all, complete) {
            (Some(all), Some(done)) if all.elapsed() < EXPIRY_RESCAN => {
                done.elapsed() + EXPIRY_MARGIN
            }
            _ => {
                looked_at_all = Some(started);
                ALL_LEASES
            }
        };
        match backend.sweep(purge, window).await {
            Ok(all_read) => {
                pause = interval;
                complete = all_read.then_some(started);
            }
            Err(e) => {
                complete = None;
                tracing::warn!(error = %e, "sweep failed; retrying");
                pause = (pause * 2).min(ERROR_PAUSE_MAX);
            }
        }
        tokio::time::sleep(pause).await;
    }
}

impl Backend {
    /// One tick, expiring leases that ended within `window`; answers
    /// whether it wrote down every expired lease it looked for (no queue
    /// had more than a batch).
    async fn sweep(&self, purge: bool, window: Duration) -> Result<bool, StoreError> {
        let expired = self.read_expired(None, window).await?;
        let all_read = expired.len() < usize::try_from(EXPIRE_BATCH).unwrap_or(usize::MAX);
        self.write_expired(&expired).await?;
        let client = self.client().await?;
        let woken = client
            .query(&self.sql.promote_due, &[&PROMOTE_BATCH])
            .await
            .map_err(db)?;
        if purge {
            client
                .query(&self.sql.purge_keys, &[&PURGE_BATCH])
                .await
                .map_err(db)?;
        }
        if !woken.is_empty() {
            // The statement notified every process, this one included; the
            // notification comes back through the listener.
            tracing::trace!(queues = woken.len(), "promoted due tasks");
        }
        Ok(all_read)
    }

    /// Writes down leases that have expired, in one queue or all; returns
    /// how many.
    pub(crate) async fn expire_leases(&self, queue_id: Option<i32>) -> Result<usize, StoreError> {
        let expired = self.read_expired(queue_id, ALL_LEASES).await?;
        self.write_expired(&expired).await
    }

    /// Leases that have expired, in one queue or all, with what each
    /// becomes ([`Expiry`]). Read without locks: [`Backend::write_expired`]
    /// writes only leases still as read.
    pub(crate) async fn read_expired(
        &self,
        queue_id: Option<i32>,
        window: Duration,
    ) -> Result<Vec<ExpiredLease>, StoreError> {
        let window = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
        let client = self.client().await?;
        let rows = client
            .query(
                &self.sql.expired_leases,
                &[&queue_id, &EXPIRE_BATCH, &window],
            )
            .await
            .map_err(db)?;
        rows.iter()
            .map(|row| {
                let attempt: i32 = row.try_get("attempt").map_err(corrupt)?;
                let max_attempts: i32 = row.try_get("max_attempts").map_err(corrupt)?;
                let expired_at = timestamp(row.try_get("lease_expires_at").map_err(corrupt)?);
                Ok(ExpiredLease {
                    has_dependents: row.try_get("has_dependents").map_err(corrupt)?,
                    id: row.try_get("id").map_err(corrupt)?,
                    token: row.try_get("lease_token").map_err(corrupt)?,
                    queue: row.try_get("queue").map_err(corrupt)?,
                    expiry: Expiry::new(
                        u32::try_from(attempt).map_err(corrupt)?,
                        u32::try_from(max_attempts).map_err(corrupt)?,
                        expired_at,
                        read_errors(row, "errors")?,
                    ),
                })
            })
            .collect()
    }

    /// Writes down the leases [`Backend::read_expired`] found, those whose
    /// lease is still the one read (same token, same end, passed), and
    /// wakes the queues of tasks that became ready; returns how many.
    pub(crate) async fn write_expired(
        &self,
        expired: &[ExpiredLease],
    ) -> Result<usize, StoreError> {
        let (ending, expired): (Vec<&ExpiredLease>, Vec<&ExpiredLease>) = expired
            .iter()
            .partition(|e| e.expiry.dead && e.has_dependents);
        let mut written = 0;
        for lease in ending {
            written += usize::from(self.expire_resolving(lease).await?);
        }
        if expired.is_empty() {
            return Ok(written);
        }
        let ids: Vec<i64> = expired.iter().map(|e| e.id).collect();
        let tokens: Vec<i64> = expired.iter().map(|e| e.token).collect();
        let dead: Vec<bool> = expired.iter().map(|e| e.expiry.dead).collect();
        let at = expired
            .iter()
            .map(|e| time(e.expiry.at))
            .collect::<Result<Vec<SystemTime>, StoreError>>()?;
        let errors: Vec<_> = expired
            .iter()
            .map(|e| errors_json(&e.expiry.errors))
            .collect();
        let client = self.client().await?;
        let rows = client
            .query(
                &self.sql.expire,
                &[&ids, &tokens, &dead, &at, &errors, &false],
            )
            .await
            .map_err(db)?;
        drop(client);
        let queues: BTreeSet<&str> = expired
            .iter()
            .filter(|e| !e.expiry.dead)
            .map(|e| e.queue.as_str())
            .collect();
        for queue in queues {
            self.notify(queue, Ready::Anywhere);
        }
        Ok(written + rows.len())
    }
}

/// An expired lease as read, and what its task becomes.
#[derive(Debug)]
pub(crate) struct ExpiredLease {
    pub(crate) id: i64,
    token: i64,
    queue: String,
    expiry: Expiry,
    /// Pending tasks wait for it: a dead write-down must resolve them.
    has_dependents: bool,
}

impl ExpiredLease {
    /// Writes this one lease down (`sql/expire.sql`); `resolving` lets a
    /// dead write reach a task with dependents, in the transaction that
    /// resolves them. Answers whether the lease was still the one read.
    pub(crate) async fn write(
        &self,
        db_: &(impl Db + ?Sized),
        sql: &crate::sql::Sql,
        resolving: bool,
    ) -> Result<bool, Failure> {
        let at = time(self.expiry.at)?;
        let rows = db_
            .query(
                &sql.expire,
                &[
                    &vec![self.id],
                    &vec![self.token],
                    &vec![self.expiry.dead],
                    &vec![at],
                    &vec![errors_json(&self.expiry.errors)],
                    &resolving,
                ],
            )
            .await
            .map_err(pg)?;
        Ok(!rows.is_empty())
    }
}
