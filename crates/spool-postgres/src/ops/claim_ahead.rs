//! Claims ahead of the lock: a limited claim that takes its tasks before
//! the queue row's lock and only settles under it (README.md, "Claims
//! ahead of the lock").
//!
//! Why: the claims of a queue with limits take turns on its row
//! ([`crate::ops::claim_limits`]), and a claim that finds and leases its
//! tasks under the lock holds the row for all of that work, so every claim
//! of the queue, on every node, waits for it. With limits that leave room
//! (a rate limit or `max_leased` set as a ceiling, not reached) that turn
//! halved a drain (docs/BENCHMARKS.md). Here the work that needs no turn
//! runs side by side:
//! 1. `BEGIN` and `sql/claim_ahead.sql`, sent together: the tasks are
//!    leased as the ordinary claim leases them, at most `max`, when the
//!    statement's snapshot counts room for several such claims under every
//!    limit; the limits are read, not spent;
//! 2. the lock statement, `sql/settle_limited.sql` and `COMMIT`, sent
//!    together: under the row's lock, the claim keeps the first of its
//!    tasks that the limits allow now, spends their tokens and gives the
//!    others back, in its own transaction, so no one ever sees more.
//!
//! Invariants:
//! - the limits hold as under the lock: only what a settling statement
//!   keeps is ever committed, and settling statements take turns on the
//!   row, each seeing what the ones before it kept (`sql/settle_limited.sql`);
//! - a claim that may not claim ahead (near a limit, on a queue with
//!   groups, on one whose limits are gone) changed nothing, and answers
//!   `None`: the caller takes the lock first, as before;
//! - a claim ahead that found nothing wrote nothing and never asks for the
//!   row, so idle polls of a limited queue take no turn;
//! - tasks given back were locked by this claim until its commit, so other
//!   claims passed over them and may have raised their floors past them:
//!   the claim announces them as ready anywhere once committed.

use std::collections::HashSet;

use spool_core::StoreError;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::{moved_under_it, Params};
use crate::early_release::{BEGIN_ASYNC, FLUSH};
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::ops::claim_limits::{recheck_in, says_rated, Limited};

/// What a settling statement answered of a claim ahead.
struct Settled {
    /// How many of the claimed tasks, first in claim order, stay claimed.
    kept: usize,
    /// How many it gave back.
    given_back: i64,
    /// Whether the queue has groups now: then it kept none.
    grouped: bool,
    /// The statement's answer, which says when a waiting claim should
    /// look again.
    answer: Vec<Row>,
}

impl Backend {
    /// A limited claim made ahead of the queue row's lock and settled
    /// under it; `None`, having changed nothing, when this claim must take
    /// the lock first.
    pub(crate) async fn claim_ahead(
        &self,
        queue: &str,
        params: &Params<'_>,
    ) -> Result<Option<Limited>, StoreError> {
        let client = self.client().await?;
        let statements = futures::future::try_join3(
            client.prepare_cached(&self.sql.claim_ahead),
            client.prepare_cached(&self.sql.lock_limited_queue),
            client.prepare_cached(&self.sql.settle_limited),
        );
        let (ahead, lock, settle) = statements.await.map_err(db)?;
        let begin = if self.release_early {
            BEGIN_ASYNC
        } else {
            "BEGIN"
        };
        let (begun, claimed) = futures::future::join(
            client.batch_execute(begin),
            tokio_postgres::Client::query(&client, &ahead, params),
        )
        .await;
        let claimed = match begun.and(claimed) {
            Ok(rows) => rows,
            Err(e) => {
                rollback(&client).await;
                return if moved_under_it(&e) {
                    Ok(None)
                } else {
                    Err(db(e))
                };
            }
        };
        let (may, ids) = match may_and_ids(&claimed) {
            Ok(read) => read,
            Err(e) => {
                rollback(&client).await;
                return Err(e);
            }
        };
        if !may || ids.is_empty() {
            // Nothing was written: the transaction has nothing to keep.
            rollback(&client).await;
            return Ok(may.then(Limited::nothing));
        }
        let settled = match self.settle(&client, [&lock, &settle], queue, &ids).await {
            Ok(settled) => settled,
            Err(e) if moved_under_it(&e) => return Ok(None),
            Err(e) => return Err(db(e)),
        };
        if settled.given_back > 0 {
            self.notify(queue, Ready::Anywhere);
        }
        if settled.grouped {
            // It gained groups meanwhile: it gave everything back, and
            // its claims take the groups in turn from now on.
            return Ok(None);
        }
        self.limited
            .set(queue, true, says_rated(&settled.answer)?, false);
        // The first `kept` of `ids`, as the settling statement kept them:
        // the claim's places in claim order may have gaps (a picked row
        // the update did not find), so a place is not a count.
        let kept = settled.kept.min(ids.len());
        let kept_ids: HashSet<i64> = ids[..kept].iter().copied().collect();
        let mut rows = Vec::with_capacity(kept);
        for row in claimed {
            let id: Option<i64> = row.try_get("id").map_err(corrupt)?;
            if id.is_some_and(|id| kept_ids.contains(&id)) {
                rows.push(row);
            }
        }
        Ok(Some(Limited {
            rows,
            recheck: recheck_in(&settled.answer)?,
            grouped: false,
            throttled: kept == 0,
        }))
    }

    /// Step 2 of the module's description: the lock, the settling
    /// statement and `COMMIT`, sent together ("One at the row": this
    /// process's gate of the queue is held until COMMIT answers), then the
    /// flush. A failure leaves the transaction rolled back by its COMMIT.
    async fn settle(
        &self,
        client: &deadpool_postgres::Client,
        [lock, settle]: [&tokio_postgres::Statement; 2],
        queue: &str,
        ids: &[i64],
    ) -> Result<Settled, tokio_postgres::Error> {
        let at_the_row = match self.limited.gate(queue) {
            Some(gate) => gate.acquire_owned().await.ok(),
            None => None,
        };
        let (locked, settled, committed) = futures::future::join3(
            tokio_postgres::Client::query(client, lock, &[&queue]),
            tokio_postgres::Client::query(client, settle, &[&queue, &ids]),
            async {
                let committed = client.batch_execute("COMMIT").await;
                drop(at_the_row);
                committed
            },
        )
        .await;
        locked?;
        let answer = settled?;
        committed?;
        if self.release_early {
            client.batch_execute(FLUSH).await?;
        }
        let (kept, given_back, grouped) = match answer.first() {
            Some(r) => (
                usize::try_from(r.try_get::<_, i64>("kept")?).unwrap_or(0),
                r.try_get("given_back")?,
                r.try_get("grouped")?,
            ),
            // The queue is gone: what was claimed stays as it was leased.
            None => (usize::MAX, 0, false),
        };
        Ok(Settled {
            kept,
            given_back,
            grouped,
            answer,
        })
    }
}

/// Whether a claim ahead could claim ahead, and the ids of what it
/// claimed, in claim order.
fn may_and_ids(rows: &[Row]) -> Result<(bool, Vec<i64>), StoreError> {
    let may = match rows.first() {
        Some(row) => row
            .try_get::<_, Option<bool>>("ahead")
            .map_err(corrupt)?
            .unwrap_or(false),
        None => false,
    };
    let mut claimed = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(n) = row.try_get::<_, Option<i64>>("n").map_err(corrupt)? {
            claimed.push((n, row.try_get::<_, i64>("id").map_err(corrupt)?));
        }
    }
    claimed.sort_unstable_by_key(|(n, _)| *n);
    Ok((may, claimed.into_iter().map(|(_, id)| id).collect()))
}

/// Ends the transaction a claim ahead began, which wrote nothing or failed.
/// A failure here leaves the connection broken, and the pool drops it.
async fn rollback(client: &deadpool_postgres::Client) {
    if let Err(e) = client.batch_execute("ROLLBACK").await {
        tracing::warn!(error = %e, "rollback of a claim ahead failed");
    }
}
