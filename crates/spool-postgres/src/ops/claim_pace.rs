//! Pacing long polls on a rate-limited queue (docs/spec.md §4), so that a
//! locked claim transaction hands out a batch of tokens, not one.
//!
//! Why: a limited claim is a transaction that holds the queue row's lock
//! through its commit ([`crate::ops::claim_limits`]). When every long poll
//! woke as soon as one token was whole and waited for the lock, each
//! locked transaction took about one task, and every claimer on every
//! node queued on the row: the rate reached was bounded by locked
//! transactions a second, not by the limit (docs/BENCHMARKS.md, "The rate
//! limit on PostgreSQL").
//!
//! How: a long poll on a queue this process last saw with a rate limit
//! 1. takes the queue's turn in this process ([`Turn`]): the other long
//!    polls of this process on the queue wait in line, in the order they
//!    came, instead of each reading the bucket and racing for the lock;
//! 2. reads the bucket without the lock (`sql/peek_bucket.sql`) and, while
//!    it holds less than a batch ([`Bucket::batch`]: `min(max, burst, the
//!    tokens of BATCH_WINDOW)`, at least one), sleeps until it should hold
//!    one, plus a jitter, so that nodes which computed the same instant do
//!    not all arrive together;
//! 3. tries the row's lock (`SKIP LOCKED`): while another node's claim
//!    holds it, backs off a moment and goes back to 2 rather than queue
//!    behind it (a claim let in after it would find the bucket just
//!    emptied, and commit a transaction to take nothing). Unless the
//!    bucket holds two batches or more: then the claims are behind the
//!    refill, whoever holds the lock leaves a batch behind, and waiting
//!    for the lock (at most one claim a node waits, thanks to the turn)
//!    keeps it busy where backing off would leave it idle;
//! 4. claims under the lock, as every limited claim does.
//!
//! Invariants:
//! - The limit is enforced only under the row lock, by
//!   `sql/claim_limited.sql`: the unlocked read decides when to try, never
//!   how much to take. So it holds across nodes as before: at most
//!   `burst + rate × time` tasks, and a claim of `max` n takes up to n.
//! - A paced claim never sleeps past its deadline, and from its deadline
//!   on it wants one token: a long poll that could take something when it
//!   ends still does.
//! - A held-back long poll wakes when the bucket refills: its sleep is
//!   computed from the bucket, at most `BATCH_WINDOW` + `JITTER` after the
//!   first whole token.
//! - Claims that do not wait, and queues without a rate limit, never come
//!   here: they take the limited claim as it is.
//! - A paced claim whose first read found less than a whole token while
//!   tasks were ready was held back by the limit, as an unpaced claim that
//!   took nothing then would have been: it answers `throttled`, whatever
//!   it takes after its sleep (`spool_claims_throttled_total`). The read
//!   asks whether tasks are ready only then, in the same statement.

use std::time::Duration;

use rand::Rng;
use spool_core::StoreError;
use tokio::time::{sleep_until, timeout_at, Instant};

use crate::backend::Backend;
use crate::db::{Db, Params};
use crate::error::{corrupt, db};
use crate::limited::Turn;
use crate::ops::claim_limits::Limited;

/// How many tokens' worth of refill a held-back claim waits for, when its
/// `max` and the burst allow: at 1,000/s, ten tokens a transaction, so
/// the locked transactions a second the limit needs are a tenth of it,
/// for a delay of at most this much.
const BATCH_WINDOW: Duration = Duration::from_millis(10);

/// The most a sleep for tokens is lengthened at random.
const JITTER: Duration = Duration::from_millis(2);

/// The first and the longest pause after finding the row locked: a
/// limited claim's transaction holds it for about a millisecond to a few.
const BACKOFF_MIN: Duration = Duration::from_millis(1);
const BACKOFF_MAX: Duration = Duration::from_millis(8);

/// What `sql/claim_limited.sql` adds before flooring the tokens, so that
/// a float just short of a whole token counts as one there and here.
const EPSILON: f64 = 1e-9;

/// A queue's bucket as the unlocked read saw it.
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    /// Tokens added a millisecond (> 0).
    per_ms: f64,
    burst: f64,
}

impl Bucket {
    /// How many tokens a claim of at most `max` waits for: what the refill
    /// adds in `BATCH_WINDOW`, at least one, at most `max` and the burst.
    fn batch(&self, max: u32) -> f64 {
        let window = (self.per_ms * BATCH_WINDOW.as_secs_f64() * 1000.0).floor();
        window.max(1.0).min(self.burst).min(f64::from(max))
    }

    /// How long until the bucket holds `want` tokens; zero if it does.
    fn until(&self, want: f64) -> Duration {
        let short = want - self.tokens - EPSILON;
        if short <= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(short / self.per_ms / 1000.0).unwrap_or(Duration::MAX)
    }
}

/// `now + pause`, but no later than `deadline`.
fn wake_at(now: Instant, pause: Duration, deadline: Instant) -> Instant {
    now.checked_add(pause).map_or(deadline, |t| t.min(deadline))
}

impl Backend {
    /// A claim on a queue this process last saw with limits: paced when it
    /// is a long poll (`deadline`) on a queue with a rate limit, otherwise
    /// the limited claim as it is.
    pub(crate) async fn claim_with_limits(
        &self,
        queue: &str,
        params: &Params<'_>,
        max: u32,
        deadline: Option<Instant>,
    ) -> Result<Limited, StoreError> {
        match (deadline, self.limited.turn(queue)) {
            (Some(deadline), Some(turn)) => {
                self.claim_paced(queue, params, max, turn, deadline).await
            }
            _ => self.claim_limited(queue, params).await,
        }
    }

    /// Steps 1 to 4 of the module's description, until `deadline`; answers
    /// nothing when the deadline comes first.
    async fn claim_paced(
        &self,
        queue: &str,
        params: &Params<'_>,
        max: u32,
        turn: Turn,
        deadline: Instant,
    ) -> Result<Limited, StoreError> {
        let Ok(_turn) = timeout_at(deadline, turn.lock()).await else {
            return Ok(Limited::nothing());
        };
        let mut first = None;
        let mut limited = self.pace(queue, params, max, deadline, &mut first).await?;
        limited.throttled |= first.unwrap_or(false);
        Ok(limited)
    }

    /// Steps 2 to 4, holding the turn; sets `first` to whether the first
    /// read of the bucket found the claim held back while tasks were ready.
    async fn pace(
        &self,
        queue: &str,
        params: &Params<'_>,
        max: u32,
        deadline: Instant,
        first: &mut Option<bool>,
    ) -> Result<Limited, StoreError> {
        let mut backoff = BACKOFF_MIN;
        loop {
            let Some((bucket, throttled)) = self.peek_bucket(queue).await? else {
                // Paused, or no longer rated: the limited claim says so,
                // and this process remembers what it says.
                return self.claim_limited(queue, params).await;
            };
            first.get_or_insert(throttled);
            let now = Instant::now();
            let late = now >= deadline;
            let want = if late { 1.0 } else { bucket.batch(max) };
            let wait = bucket.until(want);
            if !wait.is_zero() {
                if late {
                    return Ok(Limited::nothing());
                }
                let jitter = JITTER.mul_f64(rand::thread_rng().gen_range(0.0..1.0));
                sleep_until(wake_at(now, wait + jitter, deadline)).await;
                continue;
            }
            if bucket.tokens + EPSILON >= 2.0 * want {
                return self.claim_limited(queue, params).await;
            }
            if let Some(limited) = self.try_claim_limited(queue, params).await? {
                return Ok(limited);
            }
            if late {
                return Ok(Limited::nothing());
            }
            let pause = backoff.mul_f64(rand::thread_rng().gen_range(0.5..1.5));
            sleep_until(wake_at(Instant::now(), pause, deadline)).await;
            backoff = (backoff * 2).min(BACKOFF_MAX);
        }
    }

    /// The queue's bucket, read without its lock, and whether it holds less
    /// than a whole token while tasks are ready; `None` if the queue is
    /// paused or unknown, or has no rate limit.
    async fn peek_bucket(&self, queue: &str) -> Result<Option<(Bucket, bool)>, StoreError> {
        let client = self.client().await?;
        let rows = client
            .query(&self.sql.peek_bucket, &[&queue])
            .await
            .map_err(db)?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let get = |column: &str| row.try_get::<_, Option<f64>>(column).map_err(corrupt);
        let throttled = row
            .try_get::<_, Option<bool>>("throttled")
            .map_err(corrupt)?
            .unwrap_or(false);
        Ok(match (get("tokens")?, get("per_ms")?, get("burst")?) {
            (Some(tokens), Some(per_ms), Some(burst)) if per_ms > 0.0 => Some((
                Bucket {
                    tokens,
                    per_ms,
                    burst,
                },
                throttled,
            )),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1,000 a second, burst 100.
    fn thousand(tokens: f64) -> Bucket {
        Bucket {
            tokens,
            per_ms: 1.0,
            burst: 100.0,
        }
    }

    #[test]
    fn a_batch_is_the_window_s_refill_within_max_and_burst() {
        assert_eq!(thousand(0.0).batch(1000), 10.0);
        assert_eq!(thousand(0.0).batch(4), 4.0);
        let small_burst = Bucket {
            burst: 3.0,
            ..thousand(0.0)
        };
        assert_eq!(small_burst.batch(10), 3.0);
        // 50 a second: a token every 20 ms, more than the window.
        let slow = Bucket {
            per_ms: 0.05,
            ..thousand(0.0)
        };
        assert_eq!(slow.batch(10), 1.0);
    }

    #[test]
    fn the_wait_is_for_the_tokens_missing() {
        assert_eq!(thousand(10.0).until(10.0), Duration::ZERO);
        assert_eq!(thousand(10.0 - 1e-12).until(10.0), Duration::ZERO);
        let wait = thousand(2.5).until(10.0);
        assert!((wait.as_secs_f64() - 0.0075).abs() < 1e-9, "{wait:?}");
        let never = Bucket {
            per_ms: 1e-300,
            ..thousand(0.0)
        };
        assert_eq!(never.until(1.0), Duration::MAX);
    }

    #[test]
    fn no_sleep_ends_past_the_deadline() {
        let now = Instant::now();
        let deadline = now + Duration::from_millis(5);
        assert_eq!(wake_at(now, Duration::MAX, deadline), deadline);
        let soon = wake_at(now, Duration::from_millis(1), deadline);
        assert_eq!(soon, now + Duration::from_millis(1));
    }
}
