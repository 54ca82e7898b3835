//! Vacuuming the task table after every so many claims, one process at a
//! time.
//!
//! Every claim moves rows out of the claim index's predicate (ready →
//! leased), leaving their old entries behind at the front of the index,
//! where every claim starts. Scans step over entries they have marked dead
//! cheaply, but not over the pages holding them: only VACUUM removes the
//! entries and unlinks the emptied pages. Autovacuum looks at a database
//! once a minute at most (`autovacuum_naptime`); a queue drained at tens of
//! thousands of tasks a second leaves thousands of such pages in that time,
//! and each claim walks all of them (measured: 1,300 → 5,000 buffers and
//! 16 → 58 ms per claim over a 1M-task drain, throughput halved). So each
//! process counts the tasks it claims and, past
//! [`PgConfig::vacuum_after_claims`](crate::PgConfig::vacuum_after_claims),
//! vacuums the table with index cleanup forced (VACUUM may otherwise skip
//! the indexes when few heap pages have dead rows).
//!
//! The table is a ring of partitions (migration 6, [`crate::rotate`]); the
//! vacuum visits each that has ten pages or more (`sql/vacuum_targets.sql`
//! says why not the others). A held xmin horizon stops it from removing
//! anything: then the rotation's TRUNCATE is what bounds the table.
//!
//! Invariants: at most one VACUUM or rotation of a schema's table runs at a
//! time across every process (a session advisory lock, tried, never waited
//! for; a process that finds it taken tries again at its next look, since
//! the holder may be a rotation's look at whether a turn is due rather
//! than a vacuum);
//! VACUUM takes no lock that blocks enqueues, claims or acks. It holds one
//! pooled connection while it runs (seconds on a table of millions of
//! rows).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use spool_core::StoreError;

use crate::backend::Backend;
use crate::error::{corrupt, db};
use crate::sql::PARTITIONS;

/// How often the count of claims is looked at.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// Vacuums when due, until the store is dropped (the task is aborted then).
pub(crate) async fn run(backend: Arc<Backend>) {
    let after = backend.config.vacuum_after_claims;
    if after == 0 {
        return;
    }
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        if backend.claimed_since_vacuum.load(Ordering::Relaxed) < after {
            continue;
        }
        let claimed = backend.claimed_since_vacuum.swap(0, Ordering::Relaxed);
        match backend.vacuum().await {
            Ok(true) => tracing::debug!("vacuumed the task table"),
            Ok(false) => {
                tracing::debug!("the upkeep lock is taken; vacuuming at the next look");
                backend
                    .claimed_since_vacuum
                    .fetch_add(claimed, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "vacuum of the task table failed"),
        }
    }
}

impl Backend {
    /// Tries the upkeep lock on `client`'s session: the one that lets one
    /// process at a time vacuum or rotate this schema's task table. Whether
    /// it got it; `sql.vacuum_unlock` gives it back.
    pub(crate) async fn try_upkeep_lock(
        &self,
        client: &tokio_postgres::Client,
    ) -> Result<bool, StoreError> {
        client
            .query_one(&self.sql.vacuum_lock, &[])
            .await
            .map_err(db)?
            .try_get(0)
            .map_err(corrupt)
    }

    /// Vacuums the task table unless another process is at it; whether it
    /// did.
    pub(crate) async fn vacuum(&self) -> Result<bool, StoreError> {
        let client = self.client().await?;
        if !self.try_upkeep_lock(&client).await? {
            return Ok(false);
        }
        let vacuumed = self.vacuum_partitions(&client).await;
        // The lock is the session's: give it back whatever VACUUM did (a
        // broken connection gives it back by itself).
        let unlocked = client.batch_execute(&self.sql.vacuum_unlock).await;
        vacuumed?;
        unlocked.map_err(db)?;
        Ok(true)
    }

    /// Vacuums the partitions worth it, one statement each.
    async fn vacuum_partitions(&self, client: &tokio_postgres::Client) -> Result<(), StoreError> {
        let targets = client
            .query(&self.sql.vacuum_targets, &[])
            .await
            .map_err(db)?;
        for row in targets {
            let name: &str = row.try_get(0).map_err(corrupt)?;
            if let Some(i) = PARTITIONS.iter().position(|p| *p == name) {
                client
                    .batch_execute(&self.sql.vacuum[i])
                    .await
                    .map_err(db)?;
            }
        }
        Ok(())
    }
}
