//! The sweeper: background upkeep that every store process runs.
//!
//! Each tick (`sweep_interval`, 50 ms by default) it
//! - writes expired leases down (ready again, or dead on the last attempt,
//!   with "lease expired" recorded), deciding with
//!   [`spool_core::transition`] through [`Expiry`], exactly as views derive
//!   them before it gets there;
//! - promotes due scheduled tasks to ready, so they join the claim index,
//!   and wakes their queues' waiters;
//! - now and then, forgets idempotency keys whose dedup window has passed.
//!
//! Several processes may sweep at once: expiry writes are conditional on
//! the lease read, promotion skips rows another sweeper holds, and purging
//! deletes what any of them may delete. When nothing is due a tick costs
//! two index probes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use spool_core::StoreError;

use crate::db::Db;
use crate::error::{corrupt, db};
use crate::row::{errors_json, read_errors, Expiry};
use crate::store::Shared;
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

/// Sweeps until the store is dropped (the task is aborted then).
pub(crate) async fn run(shared: Arc<Shared>) {
    let interval = shared.config.sweep_interval;
    let mut pause = interval;
    for tick in 0u64.. {
        let purge = tick % PURGE_EVERY == 0;
        match shared.sweep(purge).await {
            Ok(()) => pause = interval,
            Err(e) => {
                tracing::warn!(error = %e, "sweep failed; retrying");
                pause = (pause * 2).min(ERROR_PAUSE_MAX);
            }
        }
        tokio::time::sleep(pause).await;
    }
}

impl Shared {
    async fn sweep(&self, purge: bool) -> Result<(), StoreError> {
        self.expire_leases(None).await?;
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
        Ok(())
    }

    /// Writes down leases that have expired, in one queue or all; returns
    /// how many.
    pub(crate) async fn expire_leases(&self, queue_id: Option<i32>) -> Result<usize, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.expired_leases, &[&queue_id, &EXPIRE_BATCH])
            .await
            .map_err(db)?;
        if rows.is_empty() {
            return Ok(0);
        }
        let mut ids = Vec::with_capacity(rows.len());
        let mut tokens = Vec::with_capacity(rows.len());
        let mut dead = Vec::with_capacity(rows.len());
        let mut at: Vec<SystemTime> = Vec::with_capacity(rows.len());
        let mut errors = Vec::with_capacity(rows.len());
        let mut queues = BTreeSet::new();
        for row in &rows {
            let attempt: i32 = row.try_get("attempt").map_err(corrupt)?;
            let max_attempts: i32 = row.try_get("max_attempts").map_err(corrupt)?;
            let expired_at = timestamp(row.try_get("lease_expires_at").map_err(corrupt)?);
            let e = Expiry::new(
                u32::try_from(attempt).map_err(corrupt)?,
                u32::try_from(max_attempts).map_err(corrupt)?,
                expired_at,
                read_errors(row, "errors")?,
            );
            ids.push(row.try_get::<_, i64>("id").map_err(corrupt)?);
            tokens.push(row.try_get::<_, i64>("lease_token").map_err(corrupt)?);
            if !e.dead {
                queues.insert(row.try_get::<_, String>("queue").map_err(corrupt)?);
            }
            dead.push(e.dead);
            at.push(time(e.at)?);
            errors.push(errors_json(&e.errors));
        }
        let written = client
            .query(&self.sql.expire, &[&ids, &tokens, &dead, &at, &errors])
            .await
            .map_err(db)?;
        drop(client);
        for queue in &queues {
            self.notify(queue);
        }
        Ok(written.len())
    }
}
