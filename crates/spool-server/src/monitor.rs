//! Recent activity of this server: how fast tasks arrive and complete, and
//! how the backlog moves. The API and the RESP listener count into it; the
//! admin page's overview reads it. It lives beside the state, not in the
//! admin page, so counting needs nothing of the page.
//!
//! The store keeps no history (completed tasks are deleted) and its `stats`
//! are counts of what is there now, which cannot tell arrivals from
//! completions. So this server counts what goes through it (tasks created by
//! enqueue, tasks acked), and a background task samples those counters and
//! `stats` every [`SAMPLE_EVERY`] into a ring of [`KEEP`] samples: ten
//! minutes, a few kilobytes. Rates are therefore this server's since it
//! started; tasks enqueued in-process by a library sharing the store, or by
//! other nodes, show in the counts but not in the rates.
//!
//! The sampler holds only weak references: it stops by itself when the last
//! router using the state is gone, and never keeps a store open.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, Weak};
use std::time::Duration;

use spool_core::{QueueStats, Store};
use tokio::time::{Instant, MissedTickBehavior};

/// How often the sampler takes a sample.
pub(crate) const SAMPLE_EVERY: Duration = Duration::from_secs(5);
/// How many samples are kept: ten minutes' worth.
pub(crate) const KEEP: usize = 120;
/// The span the headline rates are averaged over.
pub(crate) const RATE_WINDOW: Duration = Duration::from_secs(60);

/// One sample: the counters and the store's totals at one instant.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Sample {
    pub at: Instant,
    pub enqueued: u64,
    pub completed: u64,
    pub ready: u64,
    pub leased: u64,
}

/// Rates between two instants, in tasks per second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rates {
    pub enqueued: f64,
    pub completed: f64,
    /// The span they were measured over.
    pub over: Duration,
}

/// A point of a chart: how long ago, and the value then.
pub(crate) type Point = (Duration, f64);

/// The counters, the ring of samples, and whether a sampler runs.
#[derive(Debug, Default)]
pub(crate) struct Monitor {
    enqueued: AtomicU64,
    completed: AtomicU64,
    // A std mutex: held for a copy of a few samples, never across an await.
    samples: Mutex<VecDeque<Sample>>,
    sampling: AtomicBool,
}

impl Monitor {
    /// Counts tasks created by an enqueue (not duplicates).
    pub(crate) fn count_enqueued(&self, n: u64) {
        self.enqueued.fetch_add(n, Ordering::Relaxed);
    }

    /// Counts tasks acked.
    pub(crate) fn count_completed(&self, n: u64) {
        self.completed.fetch_add(n, Ordering::Relaxed);
    }

    fn ring(&self) -> std::sync::MutexGuard<'_, VecDeque<Sample>> {
        // A panic while holding this lock cannot leave the ring invalid.
        self.samples.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a sample at `at` from the counters and `stats`.
    pub(crate) fn record(&self, at: Instant, stats: &[QueueStats]) {
        let sample = Sample {
            at,
            enqueued: self.enqueued.load(Ordering::Relaxed),
            completed: self.completed.load(Ordering::Relaxed),
            ready: stats.iter().map(|q| q.counts.ready).sum(),
            leased: stats.iter().map(|q| q.counts.leased).sum(),
        };
        let mut ring = self.ring();
        if ring.len() == KEEP {
            ring.pop_front();
        }
        ring.push_back(sample);
    }

    /// The samples, oldest first.
    pub(crate) fn samples(&self) -> Vec<Sample> {
        self.ring().iter().copied().collect()
    }

    /// Average rates from the newest sample at least [`RATE_WINDOW`] old (or
    /// the oldest there is) to `now`; `None` until a sampling period has
    /// passed (rates over a shorter span are mostly noise).
    pub(crate) fn rates(&self, now: Instant) -> Option<Rates> {
        let ring = self.ring();
        let base = ring
            .iter()
            .rev()
            .find(|s| now.saturating_duration_since(s.at) >= RATE_WINDOW)
            .or_else(|| ring.front())?;
        let over = now.saturating_duration_since(base.at);
        if over < SAMPLE_EVERY {
            return None;
        }
        let secs = over.as_secs_f64();
        let enqueued = self.enqueued.load(Ordering::Relaxed);
        let completed = self.completed.load(Ordering::Relaxed);
        Some(Rates {
            enqueued: enqueued.saturating_sub(base.enqueued) as f64 / secs,
            completed: completed.saturating_sub(base.completed) as f64 / secs,
            over,
        })
    }

    /// Marks the sampler as started; false if one already was.
    pub(crate) fn claim_sampler(&self) -> bool {
        !self.sampling.swap(true, Ordering::Relaxed)
    }
}

/// The rates between consecutive samples, as chart points (enqueued,
/// completed), each placed at the later sample.
pub(crate) fn rate_series(samples: &[Sample], now: Instant) -> (Vec<Point>, Vec<Point>) {
    samples
        .windows(2)
        .filter_map(|w| {
            let secs = w[1].at.saturating_duration_since(w[0].at).as_secs_f64();
            (secs > 0.0).then(|| {
                let ago = now.saturating_duration_since(w[1].at);
                let enq = w[1].enqueued.saturating_sub(w[0].enqueued) as f64 / secs;
                let done = w[1].completed.saturating_sub(w[0].completed) as f64 / secs;
                ((ago, enq), (ago, done))
            })
        })
        .unzip()
}

/// Ready and leased totals per sample, as chart points.
pub(crate) fn backlog_series(samples: &[Sample], now: Instant) -> (Vec<Point>, Vec<Point>) {
    samples
        .iter()
        .map(|s| {
            let ago = now.saturating_duration_since(s.at);
            ((ago, s.ready as f64), (ago, s.leased as f64))
        })
        .unzip()
}

/// Samples `store` into `monitor` every [`SAMPLE_EVERY`] until either is
/// gone. Does nothing outside a Tokio runtime (a router built for a test
/// without one simply shows no rates).
pub(crate) fn spawn(store: Weak<dyn Store>, monitor: Weak<Monitor>, timeout: Duration) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            if monitor.strong_count() == 0 {
                break;
            }
            let Some(store) = store.upgrade() else {
                break;
            };
            let stats = tokio::time::timeout(timeout, store.stats()).await;
            drop(store);
            let Some(monitor) = monitor.upgrade() else {
                break;
            };
            match stats {
                Ok(Ok(stats)) => monitor.record(Instant::now(), &stats),
                // A gap in the chart says enough; the API reports the outage.
                Ok(Err(e)) => tracing::debug!(error = %e, "monitor sampler: no stats"),
                Err(_) => tracing::debug!("monitor sampler: stats timed out"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_from_the_counters_over_the_window() {
        let m = Monitor::default();
        let t0 = Instant::now();
        assert_eq!(m.rates(t0), None);
        m.record(t0, &[]);
        assert_eq!(m.rates(t0), None, "no span yet");
        assert_eq!(
            m.rates(t0 + Duration::from_secs(1)),
            None,
            "too short a span"
        );
        m.count_enqueued(120);
        m.count_completed(60);
        let r = m.rates(t0 + Duration::from_secs(60));
        assert_eq!(
            r,
            Some(Rates {
                enqueued: 2.0,
                completed: 1.0,
                over: Duration::from_secs(60)
            })
        );
    }

    #[test]
    fn the_ring_keeps_the_latest_samples() {
        let m = Monitor::default();
        let t0 = Instant::now();
        for i in 0..(KEEP as u64 + 10) {
            m.count_enqueued(5);
            m.record(t0 + SAMPLE_EVERY * i as u32, &[]);
        }
        let s = m.samples();
        assert_eq!(s.len(), KEEP);
        let now = t0 + SAMPLE_EVERY * (KEEP as u32 + 9);
        let (enq, done) = rate_series(&s, now);
        assert_eq!(enq.len(), KEEP - 1);
        assert!(enq.iter().all(|&(_, r)| (r - 1.0).abs() < 1e-9));
        assert!(done.iter().all(|&(_, r)| r == 0.0));
        assert_eq!(enq.last().map(|p| p.0), Some(Duration::ZERO));
    }

    #[test]
    fn only_one_sampler_starts() {
        let m = Monitor::default();
        assert!(m.claim_sampler());
        assert!(!m.claim_sampler());
    }
}
