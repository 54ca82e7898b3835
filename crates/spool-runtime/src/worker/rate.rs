//! A per-queue rate limit (docs/spec.md §6): a token bucket refilled at the rate,
//! holding at most a tenth of a second's worth (and at least one), so that
//! claims stay small and evenly spaced instead of one burst per second.

use std::time::Duration;

use tokio::time::Instant;

#[derive(Debug)]
pub(crate) struct RateLimiter {
    per_second: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl RateLimiter {
    /// `per_second` is positive and finite (checked by the config).
    pub(crate) fn new(per_second: f64) -> Self {
        let burst = (per_second / 10.0).max(1.0);
        RateLimiter {
            per_second,
            burst,
            tokens: burst,
            last: Instant::now(),
        }
    }

    fn refill(&mut self, now: Instant) {
        let earned = now.duration_since(self.last).as_secs_f64() * self.per_second;
        self.tokens = (self.tokens + earned).min(self.burst);
        self.last = now;
    }

    /// Takes between 1 and `want` tokens, waiting until there is one.
    pub(crate) async fn take(&mut self, want: u32) -> u32 {
        loop {
            self.refill(Instant::now());
            if self.tokens >= 1.0 {
                let n = self.tokens.floor().min(f64::from(want.max(1)));
                self.tokens -= n;
                return n as u32;
            }
            let missing = (1.0 - self.tokens) / self.per_second;
            tokio::time::sleep(Duration::from_secs_f64(missing)).await;
        }
    }

    /// Gives back tokens taken for tasks the claim did not return.
    pub(crate) fn refund(&mut self, n: u32) {
        self.tokens = (self.tokens + f64::from(n)).min(self.burst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn spaces_claims_at_the_rate() {
        let mut r = RateLimiter::new(20.0);
        // Burst of 2 (a tenth of a second), then one every 50 ms.
        assert_eq!(r.take(10).await, 2);
        let start = Instant::now();
        let mut got = 0;
        while got < 10 {
            got += r.take(10 - got).await;
        }
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(450), "{took:?}");
        assert!(took <= Duration::from_millis(550), "{took:?}");
        r.refund(100);
        assert_eq!(r.take(100).await, 2);
    }
}
