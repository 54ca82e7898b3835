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
//! ([`LimitedQueues`](crate::limited::LimitedQueues)) so its next claims
//! there come straight here.
//!
//! Claims ahead of the lock: a queue without groups whose limits leave
//! room is claimed from before the lock, and the claim only settles under
//! it ([`crate::ops::claim_ahead`]); near a limit, and on queues with
//! groups, the claim takes the lock first, as below.
//!
//! Queues with groups (that hold grouped tasks, or bound each
//! group's leases) come here too, limits or not: the lock statement says
//! so, and the claim then takes the groups in turn
//! (`sql/claim_group_steps.sql` inside `sql/claim_limited.sql`) and keeps
//! the group it served last in the queue's row, for the next claim on any
//! node (README.md, "Groups").
//!
//! One round trip: a claim that waits for the lock sends `BEGIN`, the lock
//! statement, the claim statement and `COMMIT` together, so the row is
//! held for the statements' own time, not for the round trips between
//! them as well (grouped claims of a queue take turns on it, and their
//! drain is bounded by how long each holds it). The claim sent is the one
//! this process's last claim of the queue took
//! ([`LimitedQueues`](crate::limited::LimitedQueues)); each
//! claim statement claims only from the kind of queue it is for, as the
//! lock statement says (`sql/claim_limited.sql`), so one sent for a queue
//! that has since gained or lost its groups took nothing, and the claim
//! runs again as the lock statement said. A paced claim that tries the
//! lock sends its statements one after the other instead: while another
//! node holds the row its claim must not run at all.
//!
//! Early lock release: the transaction commits without waiting for its
//! flush, which lets go of the row as soon as the commit record is
//! written, and the claim answers only after [`FLUSH`] has made it
//! durable ([`crate::early_release`]); on a server where that cannot run,
//! it commits synchronously.
//!
//! One at the row: at most [`AT_THE_ROW`](crate::limited::AT_THE_ROW) (one)
//! of this process's claims of a queue waits for its row's lock or holds
//! it, from before its BEGIN until its COMMIT answers (the queue's gate
//! in [`LimitedQueues`](crate::limited::LimitedQueues)); the others wait
//! in the process, holding no connection. More only lengthen the row's
//! queue, and with several nodes each adding theirs the drain ran slower
//! the longer that queue was (docs/BENCHMARKS.md, "Two at the row", "One
//! at the row").
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

use std::sync::Mutex;
use std::time::Duration;

use spool_core::StoreError;
use tokio::sync::OwnedSemaphorePermit;
use tokio_postgres::Row;

use crate::backend::Backend;
use crate::db::{moved_under_it, Db, Params, ATTEMPTS};
use crate::early_release::{ASYNC_COMMIT, BEGIN_ASYNC, FLUSH};
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
pub(crate) fn says_rated(rows: &[Row]) -> Result<bool, StoreError> {
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
pub(crate) fn recheck_in(rows: &[Row]) -> Result<Option<Duration>, StoreError> {
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
        if !self.limited.grouped(queue) {
            if let Some(taken) = self.claim_ahead(queue, params).await? {
                return Ok(taken);
            }
        }
        // Held until the transaction has committed ("One at the row"); a
        // queue not yet seen limited has no gate, and its first claim goes
        // alone.
        let at_the_row = match self.limited.gate(queue) {
            Some(gate) => gate.acquire_owned().await.ok(),
            None => None,
        };
        let mut client = self.client().await?;
        let guess = self.limited.grouped(queue);
        let run = Run {
            sql: &self.sql,
            params,
            release_early: self.release_early,
            at_the_row: Mutex::new(at_the_row),
        };
        let pipelined = Sending::Pipelined { grouped: guess };
        let taken = match transaction(&mut client, &run, pipelined).await? {
            Some((_, grouped)) if grouped != guess => {
                let lock = &self.sql.lock_limited_queue;
                transaction(&mut client, &run, Sending::InTurn { lock }).await?
            }
            taken => taken,
        };
        match taken {
            Some(taken) => self.remember(queue, taken),
            // No such queue: nothing to remember of it.
            None => {
                self.limited.set(queue, false, false, false);
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
        let mut client = self.client().await?;
        let run = Run {
            sql: &self.sql,
            params,
            release_early: self.release_early,
            at_the_row: Mutex::new(None),
        };
        let lock = &self.sql.try_lock_limited_queue;
        let taken = transaction(&mut client, &run, Sending::InTurn { lock }).await?;
        taken.map(|taken| self.remember(queue, taken)).transpose()
    }

    /// Remembers what a limited claim's rows say of `queue`, and answers
    /// them.
    fn remember(
        &self,
        queue: &str,
        (rows, grouped): (Vec<Row>, bool),
    ) -> Result<Limited, StoreError> {
        self.limited
            .set(queue, says_limited(&rows)?, says_rated(&rows)?, grouped);
        let recheck = recheck_in(&rows)?;
        let throttled = says_throttled(&rows)?;
        Ok(Limited {
            rows,
            recheck,
            grouped,
            throttled,
        })
    }
}

/// What a limited claim's transaction answers: the claim's rows (none if
/// the queue is paused) and whether it took the groups in turn; `None`,
/// having claimed nothing, if the lock statement answered no row.
type Taken = Option<(Vec<Row>, bool)>;

/// How a limited claim's transaction is sent.
#[derive(Clone, Copy)]
enum Sending<'a> {
    /// All at once, with the claim for a queue with groups or without.
    Pipelined { grouped: bool },
    /// One statement after the other, under this lock statement.
    InTurn { lock: &'a str },
}

/// What every limited claim's transaction runs with.
struct Run<'a, 'p, 'v> {
    sql: &'a Sql,
    params: &'p Params<'v>,
    /// Whether it commits without waiting for the flush, and flushes after
    /// ([`crate::early_release`]).
    release_early: bool,
    /// Its permit of the queue's gate ("One at the row"), given back once
    /// COMMIT has answered: from then on the claim waits for its flush, not
    /// at the row. (The rare transaction run again after meeting a moved
    /// row goes without it.)
    at_the_row: Mutex<Option<OwnedSemaphorePermit>>,
}

impl Run<'_, '_, '_> {
    /// What the transaction begins with.
    fn begin(&self) -> &'static str {
        if self.release_early {
            BEGIN_ASYNC
        } else {
            "BEGIN"
        }
    }

    /// Gives the permit back, if the claim holds one.
    fn left_the_row(&self) {
        let permit = match self.at_the_row.lock() {
            Ok(mut held) => held.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        drop(permit);
    }

    /// Waits until the committed transaction is durable, if its commit did
    /// not.
    async fn flushed(
        &self,
        client: &deadpool_postgres::Client,
    ) -> Result<(), tokio_postgres::Error> {
        if self.release_early {
            client.batch_execute(FLUSH).await?;
        }
        Ok(())
    }
}

/// Runs the transaction, again, up to [`ATTEMPTS`] times in all, while it
/// meets a row the rotation moved under it.
async fn transaction(
    client: &mut deadpool_postgres::Client,
    run: &Run<'_, '_, '_>,
    send: Sending<'_>,
) -> Result<Taken, StoreError> {
    let mut attempt = 1;
    loop {
        let done = match send {
            Sending::Pipelined { grouped } => pipelined_transaction(client, run, grouped).await,
            Sending::InTurn { lock } => limited_transaction(client, run, lock).await,
        };
        match done {
            Err(e) if attempt < ATTEMPTS && moved_under_it(&e) => attempt += 1,
            done => return done.map_err(db),
        }
    }
}

/// Sends `BEGIN`, the waiting lock, the claim for a queue with groups when
/// `grouped`, for one without otherwise, `COMMIT` and, when the commit
/// does not wait for its flush, the flush, all at once: the client sends
/// each request as it is first polled, and `join5` polls them in this
/// order. Answers what the lock statement said of the queue; when it says
/// otherwise than `grouped`, the claim took nothing
/// (`sql/claim_limited.sql`).
async fn pipelined_transaction(
    client: &deadpool_postgres::Client,
    run: &Run<'_, '_, '_>,
    grouped: bool,
) -> Result<Taken, tokio_postgres::Error> {
    let lock = client.prepare_cached(&run.sql.lock_limited_queue).await?;
    let (claim, claim_params) = claim_for(run.sql, run.params, grouped);
    let claim = client.prepare_cached(claim).await?;
    let (begun, locked, rows, committed, flushed) = futures::future::join5(
        client.batch_execute(run.begin()),
        tokio_postgres::Client::query(client, &lock, &run.params[..1]),
        tokio_postgres::Client::query(client, &claim, claim_params),
        async {
            let committed = client.batch_execute("COMMIT").await;
            run.left_the_row();
            committed
        },
        run.flushed(client),
    )
    .await;
    // The first failure is the cause; the statements after it failed
    // because the transaction had, and COMMIT rolled it back.
    begun?;
    let locked = locked?;
    let rows = rows?;
    committed?;
    flushed?;
    let Some(row) = locked.first() else {
        return Ok(None);
    };
    Ok(Some((rows, row.try_get("grouped")?)))
}

/// Locks the queue's row with `lock` and claims: in claim order, or the
/// groups in turn when the lock statement says the queue has groups.
/// Rolled back if the lock statement answered no row.
async fn limited_transaction(
    client: &mut deadpool_postgres::Client,
    run: &Run<'_, '_, '_>,
    lock: &str,
) -> Result<Taken, tokio_postgres::Error> {
    let tx = client.transaction().await?;
    if run.release_early {
        tx.batch_execute(ASYNC_COMMIT).await?;
    }
    let locked = tx.query(lock, &run.params[..1]).await?;
    let Some(row) = locked.first() else {
        tx.rollback().await?;
        return Ok(None);
    };
    let grouped: bool = row.try_get("grouped")?;
    let (claim, claim_params) = claim_for(run.sql, run.params, grouped);
    let rows = tx.query(claim, claim_params).await?;
    tx.commit().await?;
    run.left_the_row();
    run.flushed(client).await?;
    Ok(Some((rows, grouped)))
}

/// The claim statement for a queue with groups (`grouped`) or without,
/// with the parameters it takes.
fn claim_for<'s, 'p, 'v>(
    sql: &'s Sql,
    params: &'p Params<'v>,
    grouped: bool,
) -> (&'s str, &'p Params<'v>) {
    if grouped {
        (&sql.claim_grouped, &params[..GROUPED_PARAMS])
    } else {
        (&sql.claim_limited, params)
    }
}
