//! The "global acquire lock" claim strategy (docs/spec.md §10,
//! [`ClaimStrategy::GlobalLock`](crate::ClaimStrategy::GlobalLock)): one
//! claimer at a time acquires from a queue, the others back off.
//!
//! `sql/claim_global.sql` is the ordinary claim statement behind a
//! `pg_try_advisory_xact_lock` on the queue, all in one statement and one
//! round trip. The lock is tried rather than waited for, so a claimer that
//! loses holds no connection while it backs off and cannot pile up behind
//! the holder in the server; the holder releases it when its statement
//! commits, a few milliseconds later, without waiting for the commit's
//! flush, which comes before the claim answers
//! ([`crate::early_release`]).

use std::time::Duration;

use rand::Rng;
use spool_core::StoreError;
use tokio::time::Instant;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::{moved_under_it, Db, Params, ATTEMPTS};
use crate::early_release::{BEGIN_ASYNC, FLUSH};
use crate::error::{corrupt, db};

/// The first pause after losing the lock, and the longest: a holder's
/// statement takes a few milliseconds to tens of milliseconds (a batch of
/// 1,000).
const BACKOFF_MIN: Duration = Duration::from_millis(2);
const BACKOFF_MAX: Duration = Duration::from_millis(32);

impl Backend {
    /// Runs the claim under the queue's lock, backing off while another
    /// claimer holds it, for at most `acquire_timeout`. Answers the
    /// statement's rows, of which those with an `n` are claimed tasks.
    pub(crate) async fn claim_under_lock(
        &self,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let deadline = Instant::now() + self.config.acquire_timeout;
        let mut pause = BACKOFF_MIN;
        loop {
            let rows = {
                let client = self.client().await?;
                self.claim_global(&client, params).await.map_err(db)?
            };
            // No row: the queue is paused or unknown, nothing to claim.
            let locked = match rows.first() {
                Some(row) => row.try_get::<_, bool>("locked").map_err(corrupt)?,
                None => return Ok(rows),
            };
            if locked {
                return Ok(rows);
            }
            if Instant::now() + pause > deadline {
                return Err(StoreError::Unavailable(
                    "another claimer held the queue's claim lock for too long".into(),
                ));
            }
            // Jitter, so the claimers that lost to one holder do not all
            // come back at the same instant.
            let jittered = pause.mul_f64(rand::thread_rng().gen_range(0.5..1.5));
            tokio::time::sleep(jittered).await;
            pause = (pause * 2).min(BACKOFF_MAX);
        }
    }

    /// One try of the claim under the lock, run again while it meets a row
    /// the rotation moved under it. With early release
    /// ([`crate::early_release`]) it runs in a transaction that commits
    /// without waiting for its flush, so the lock is free for the next
    /// claimer once the commit record is written, and flushes after it
    /// when it claimed anything.
    async fn claim_global(
        &self,
        client: &deadpool_postgres::Client,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        if !self.release_early {
            return client.query(&self.sql.claim_global, params).await;
        }
        let claim = client.prepare_cached(&self.sql.claim_global).await?;
        let mut attempt = 1;
        loop {
            let (begun, rows, committed) = futures::future::join3(
                client.batch_execute(BEGIN_ASYNC),
                tokio_postgres::Client::query(client, &claim, params),
                client.batch_execute("COMMIT"),
            )
            .await;
            begun?;
            match rows {
                Err(e) if attempt < ATTEMPTS && moved_under_it(&e) => {
                    committed?;
                    attempt += 1;
                }
                Err(e) => return Err(e),
                Ok(rows) => {
                    committed?;
                    if rows.iter().any(claimed) {
                        client.batch_execute(FLUSH).await?;
                    }
                    return Ok(rows);
                }
            }
        }
    }
}

/// Whether a row of the claim's answer is a claimed task.
fn claimed(row: &Row) -> bool {
    matches!(row.try_get::<_, Option<i64>>("n"), Ok(Some(_)))
}
