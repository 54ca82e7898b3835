//! The ring of task partitions: rotating it bounds the task table without
//! VACUUM.
//!
//! Why: each claim updates a task's row and each ack deletes it. While any
//! transaction in the database holds the xmin horizon (a forgotten `BEGIN`,
//! a long report, a replication slot) VACUUM may remove none of the dead
//! versions this leaves, so a single table and its indexes grow for as
//! long as the horizon is held. `TRUNCATE` does not depend on the horizon:
//! it gives a table new, empty files.
//!
//! So `tasks` is partitioned by `gen` (migration 6): generations 0, 1 and 2
//! form a ring, 3 holds parked tasks (dead, or scheduled more than a minute
//! ahead). New tasks go to the current generation (a single task to the
//! one its process last saw current, [`CurrentGen`]: any generation
//! keeps a task, by the first invariant below). Once the current one
//! has been current for `PgConfig::rotate_interval`, or has grown past
//! `PgConfig::rotate_size` (and been current for [`SOONEST`]) while
//! something holds the xmin horizon ([`crate::horizon`]), the
//! generation after it in the ring (the oldest) is emptied and becomes
//! current:
//! 1. its tasks are moved to the current generation (or parked) in batches
//!    of [`MOVE_BATCH`], passing over rows other transactions hold, each
//!    batch a transaction of its own; when it holds more than
//!    [`MOST_MOVED`] tasks (a backlog) the rotation waits for claims to
//!    drain it instead of rewriting it;
//! 2. one transaction takes its ACCESS EXCLUSIVE lock, waiting at most
//!    50 ms (`sql/rotate_lock.sql`), moves what is left (what was locked in
//!    step 1, or written since), truncates it and makes it current.
//!
//! Invariants:
//! - no task is lost: the partition is truncated only under its ACCESS
//!   EXCLUSIVE lock, after every task in it was moved in that same
//!   transaction; a transaction still writing to it holds a lock that
//!   keeps the truncation waiting, and a statement that began before the
//!   lock sees every moved row after it (its snapshot is taken once it has
//!   its own lock, after the commit);
//! - a moved row keeps its id and every column but `gen`; a statement that
//!   meets a row moved after it began fails with a serialization failure
//!   and runs again ([`crate::db`]);
//! - claims never wait on a rotation for longer than the lock timeout plus
//!   the last step's moves: a transaction that read the table and stays
//!   open (a REPEATABLE READ report) keeps the lock from being granted, so
//!   while one that has been open for [`LONG_HOLDER`] holds a lock on the
//!   generation the rotation does not ask at all (asking would queue every
//!   claim behind the request for the whole timeout, to no end), waits
//!   [`BACK_OFF`] and tries again, and meanwhile vacuums the table once an
//!   interval (what no open snapshot needs any more is freed;
//!   `vacuum_after_claims` at 0 leaves that to autovacuum too); a request
//!   that merely timed out (the store's own statements were busy on the
//!   generation) is made again after [`CONTENDED`], since every second the
//!   ring does not turn is a second of writes more that the table holds;
//! - one process rotates at a time, never while this schema's vacuum runs
//!   (the same tried session advisory lock as [`crate::vacuum`]).
//!
//! What bounds the table, then: at most three generations of rows, each
//! written during one interval (with every dead version in it) and none
//! much larger than `rotate_size` while the horizon is held, plus a
//! backlog older than that while it drains, plus parked tasks. Why a
//! size as well as an interval: with the horizon held, nothing is freed
//! and a generation grows by every byte written (about 650 B per task
//! with a 100-byte payload), so by time alone the table would hold three
//! intervals of every write. Why only then: with it free, VACUUM and page
//! pruning keep a generation's heap to what is live plus one vacuum's
//! worth, but its indexes grow past any small size within a second or
//! two whatever happens, and each turn costs a new plan on every
//! connection. [`CHECK`] is how often the size is looked at, and so how
//! far past `rotate_size` a generation can grow.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use spool_core::StoreError;
use tokio_postgres::error::SqlState;

use crate::backend::Backend;
use crate::db::Db;
use crate::error::{corrupt, db};
use crate::floor::Ready;
use crate::sql::GENERATIONS;

/// Rows moved per statement in step 1.
const MOVE_BATCH: i64 = 1_000;
/// Most tasks a generation may hold to be emptied; with more, the rotation
/// waits for claims to take them.
const MOST_MOVED: i64 = 20_000;
// A statement that meets moved rows runs again once per move committed
// under it: it must be allowed more runs than one turn commits moves (the
// batches of step 1 and the move of step 2).
const _: () = assert!(((MOST_MOVED / MOVE_BATCH) as usize) + 1 < crate::db::ATTEMPTS);
/// How long after a rotation kept back by a long transaction the next try
/// comes.
const BACK_OFF: Duration = Duration::from_secs(1);
/// How long after a lock request that timed out, with no long transaction
/// in the way, the next try comes: a held horizon keeps every byte written
/// meanwhile, and missing a turn by [`BACK_OFF`] grew the held table by
/// half (at 1,000 tasks/s, 1.8 MB became 3.4 MB for a moment); a request
/// that waits holds claims up for at most the 50 ms lock timeout.
const CONTENDED: Duration = Duration::from_millis(200);
/// A transaction open this long that holds a lock on the generation to
/// empty is not one of the store's own statements: the rotation does not
/// queue its lock request behind it.
const LONG_HOLDER: Duration = Duration::from_millis(100);
/// The soonest a generation grown past `rotate_size` turns after the last
/// turn (or `rotate_interval`, if shorter): each turn makes every
/// connection plan its statements again (~1–3 ms each). Under a held
/// horizon a generation holds every byte written until the next turn, so
/// this, times the write rate, is what each of the three holds: at 1 s
/// and ~3,500 tasks/s the held table was 7.5 MB at its largest, at 500 ms
/// 4.9–5.5 MB, with claims as fast (docs/BENCHMARKS.md).
const SOONEST: Duration = Duration::from_millis(500);
/// How often each process asks whether the ring is due (`rotate_interval`
/// a quarter at a time, if that is sooner).
const CHECK: Duration = Duration::from_millis(100);

/// The generation this process last saw current: where its single
/// enqueues insert (`sql/enqueue_one.sql`), each answer telling it the
/// current one again. A stale guess costs the task a move at the next turn.
#[derive(Debug, Default)]
pub(crate) struct CurrentGen(AtomicUsize);

impl CurrentGen {
    pub(crate) fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Records what a statement read from the ring; anything but a
    /// generation of the ring is ignored.
    pub(crate) fn saw(&self, current: i16) {
        if let Some(g) = usize::try_from(current).ok().filter(|g| *g < GENERATIONS) {
            self.0.store(g, Ordering::Relaxed);
        }
    }
}

/// What a try at rotating did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Rotation {
    /// The oldest generation was emptied and is current now.
    Rotated,
    /// Not due yet, or another process holds the upkeep lock.
    NotDue,
    /// The oldest generation still holds more than [`MOST_MOVED`] tasks.
    Backlog,
    /// A transaction open for [`LONG_HOLDER`] or more holds a lock on it.
    Held,
    /// Its lock could not be had within the lock timeout.
    Contended,
}

/// Rotates when due, until the store is dropped (the task is aborted then).
pub(crate) async fn run(backend: Arc<Backend>) {
    let interval = backend.config.rotate_interval;
    let check = (interval / 4).clamp(Duration::from_millis(10), CHECK);
    let mut vacuumed_at: Option<Instant> = None;
    loop {
        let pause = match backend.rotate().await {
            Ok(Rotation::Held) => {
                tracing::debug!("task table rotation: a long transaction holds the generation");
                // Transactions that read the table keep the ring from
                // turning. Those that come and go (reports of seconds)
                // still let the horizon move: what their snapshots no
                // longer need, VACUUM frees meanwhile, once an interval.
                if backend.config.vacuum_after_claims > 0
                    && vacuumed_at.is_none_or(|at| at.elapsed() >= interval)
                {
                    vacuumed_at = Some(Instant::now());
                    if let Err(e) = backend.vacuum().await {
                        tracing::warn!(error = %e, "vacuum of the task table failed");
                    }
                }
                BACK_OFF
            }
            Ok(Rotation::Contended) => {
                tracing::debug!("task table rotation: lock not granted in time; retrying");
                CONTENDED
            }
            Ok(r) => {
                tracing::trace!(outcome = ?r, "task table rotation");
                check
            }
            Err(e) => {
                tracing::warn!(error = %e, "task table rotation failed; retrying");
                BACK_OFF
            }
        };
        tokio::time::sleep(pause).await;
    }
}

impl Backend {
    /// One try at rotating the ring.
    pub(crate) async fn rotate(&self) -> Result<Rotation, StoreError> {
        let mut client = self.client().await?;
        if !self.try_upkeep_lock(&client).await? {
            return Ok(Rotation::NotDue);
        }
        let mut woken = BTreeSet::new();
        let rotated = self.rotate_locked(&mut client, &mut woken).await;
        // The lock is the session's: give it back whatever happened (a
        // broken connection gives it back by itself).
        let unlocked = client.batch_execute(&self.sql.vacuum_unlock).await;
        for queue in &woken {
            self.notify(queue, Ready::Anywhere);
        }
        let rotated = rotated?;
        unlocked.map_err(db)?;
        Ok(rotated)
    }

    /// [`Backend::rotate`] under the upkeep lock; collects the queues whose
    /// ready tasks moved into `woken`.
    async fn rotate_locked(
        &self,
        client: &mut deadpool_postgres::Client,
        woken: &mut BTreeSet<String>,
    ) -> Result<Rotation, StoreError> {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let interval = self.config.rotate_interval;
        let size = i64::try_from(self.config.rotate_size).unwrap_or(i64::MAX);
        let now = Instant::now();
        let row = client
            .query_one(
                &self.sql.rotate_due,
                &[
                    &ms(interval),
                    &size,
                    &ms(SOONEST.min(interval)),
                    &self.xid_marks.mark(now),
                ],
            )
            .await
            .map_err(db)?;
        let current: i16 = row.try_get("current").map_err(corrupt)?;
        let due: bool = row.try_get("due").map_err(corrupt)?;
        // Read after the answer, so that a mark is never taken for older
        // than it is.
        self.xid_marks
            .record(Instant::now(), row.try_get("next_xid").map_err(corrupt)?);
        if !due {
            return Ok(Rotation::NotDue);
        }
        let current = usize::try_from(current)
            .ok()
            .filter(|g| *g < GENERATIONS)
            .ok_or_else(|| corrupt(format!("ring at generation {current}")))?;
        let oldest = (current + 1) % GENERATIONS;
        let to = i16::try_from(current).map_err(corrupt)?;

        let held: i64 = client
            .query_one(&self.sql.rotate_count[oldest], &[&(MOST_MOVED + 1)])
            .await
            .map_err(db)?
            .try_get(0)
            .map_err(corrupt)?;
        if held > MOST_MOVED {
            return Ok(Rotation::Backlog);
        }
        loop {
            let moved = self
                .move_out(&*client, oldest, to, MOVE_BATCH, woken)
                .await?;
            if moved < MOVE_BATCH {
                break;
            }
        }

        let long = i64::try_from(LONG_HOLDER.as_millis()).unwrap_or(i64::MAX);
        let held: bool = client
            .query_one(&self.sql.rotate_held[oldest], &[&long])
            .await
            .map_err(db)?
            .try_get("held")
            .map_err(corrupt)?;
        if held {
            return Ok(Rotation::Held);
        }
        let tx = client.transaction().await.map_err(db)?;
        match tx.batch_execute(&self.sql.rotate_lock[oldest]).await {
            Ok(()) => {}
            Err(e) if e.code() == Some(&SqlState::LOCK_NOT_AVAILABLE) => {
                return Ok(Rotation::Contended);
            }
            Err(e) => return Err(db(e)),
        }
        self.move_out(&tx, oldest, to, i64::MAX, woken).await?;
        tx.batch_execute(&self.sql.rotate_truncate[oldest])
            .await
            .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(Rotation::Rotated)
    }

    /// Moves up to `most` tasks out of generation `from` (to `to`, or
    /// parked); answers how many.
    async fn move_out(
        &self,
        client: &dyn Db,
        from: usize,
        to: i16,
        most: i64,
        woken: &mut BTreeSet<String>,
    ) -> Result<i64, StoreError> {
        let rows = client
            .query(&self.sql.rotate_move[from], &[&to, &most])
            .await
            .map_err(db)?;
        let row = rows
            .first()
            .ok_or_else(|| corrupt("the move answered no row"))?;
        let queues: Vec<String> = row.try_get("queues").map_err(corrupt)?;
        woken.extend(queues);
        row.try_get("moved").map_err(corrupt)
    }
}
