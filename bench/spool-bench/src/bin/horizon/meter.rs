//! What a run measures: tasks enqueued and completed, pickup latency, and
//! the system's tables sampled at a fixed interval, per phase.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// Where a sample was taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Before,
    Held,
    After,
}

/// One sampling window.
#[derive(Clone, Debug)]
pub(crate) struct Sample {
    pub(crate) phase: Phase,
    /// Seconds since the phase began, at the window's end.
    pub(crate) at: f64,
    pub(crate) done_per_s: f64,
    pub(crate) enqueued_per_s: f64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) size: i64,
    pub(crate) dead: i64,
}

fn histogram() -> Histogram<u64> {
    // 1 µs to 10 min; saturating_record clamps, never resizes.
    Histogram::new_with_bounds(1, 600_000_000, 3).unwrap()
}

/// Shared by a system's producers and consumers and the sampler.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    begun: Instant,
    stopped: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    enqueued: Arc<AtomicU64>,
    window: Arc<Mutex<Histogram<u64>>>,
    held: Arc<Mutex<Histogram<u64>>>,
    phase: Arc<Mutex<Phase>>,
    samples: Arc<Mutex<Vec<Sample>>>,
}

impl Run {
    pub(crate) fn new() -> Run {
        Run {
            begun: Instant::now(),
            stopped: Arc::default(),
            done: Arc::default(),
            enqueued: Arc::default(),
            window: Arc::new(Mutex::new(histogram())),
            held: Arc::new(Mutex::new(histogram())),
            phase: Arc::new(Mutex::new(Phase::Before)),
            samples: Arc::default(),
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
    }

    /// The stamp a producer puts in a task's payload: µs since the run began.
    pub(crate) fn stamp(&self) -> u64 {
        self.begun.elapsed().as_micros() as u64
    }

    /// A 100-byte payload carrying [`Run::stamp`].
    pub(crate) fn payload(&self) -> Vec<u8> {
        let mut p = vec![b'x'; 100];
        p[..8].copy_from_slice(&self.stamp().to_le_bytes());
        p
    }

    pub(crate) fn enqueued(&self, n: u64) {
        self.enqueued.fetch_add(n, Ordering::Relaxed);
    }

    /// A claimed task's payload: records its pickup latency.
    pub(crate) fn picked_up(&self, payload: &[u8]) {
        let Some(stamp) = payload.get(..8) else {
            return;
        };
        let sent = u64::from_le_bytes(stamp.try_into().unwrap());
        let waited = self.stamp().saturating_sub(sent).max(1);
        self.window.lock().unwrap().saturating_record(waited);
        if *self.phase.lock().unwrap() == Phase::Held {
            self.held.lock().unwrap().saturating_record(waited);
        }
    }

    pub(crate) fn completed(&self, n: u64) {
        self.done.fetch_add(n, Ordering::Relaxed);
    }

    /// Samples every `every` for `length`, printing each window.
    pub(crate) async fn sample_for(
        &self,
        phase: Phase,
        length: Duration,
        every: Duration,
        schema: &str,
    ) {
        *self.phase.lock().unwrap() = phase;
        let db = crate::connect().await;
        let sizes = db
            .prepare(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8,
                        coalesce(sum(s.n_dead_tup), 0)::int8
                 FROM pg_class c
                 JOIN pg_namespace n ON n.oid = c.relnamespace
                 LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
                 WHERE n.nspname = $1 AND c.relkind = 'r'",
            )
            .await
            .unwrap();
        let start = Instant::now();
        let mut last = (
            Instant::now(),
            self.done.load(Ordering::Relaxed),
            self.enqueued.load(Ordering::Relaxed),
        );
        while start.elapsed() < length {
            tokio::time::sleep(every.min(length.saturating_sub(start.elapsed()))).await;
            let now = Instant::now();
            let (done, enqueued) = (
                self.done.load(Ordering::Relaxed),
                self.enqueued.load(Ordering::Relaxed),
            );
            let secs = now.duration_since(last.0).as_secs_f64().max(1e-3);
            let (p50_ms, p99_ms) = {
                let mut h = self.window.lock().unwrap();
                let q = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
                let qs = (q(0.5), q(0.99));
                h.reset();
                qs
            };
            let row = db.query_one(&sizes, &[&schema]).await.unwrap();
            let s = Sample {
                phase,
                at: start.elapsed().as_secs_f64(),
                done_per_s: (done - last.1) as f64 / secs,
                enqueued_per_s: (enqueued - last.2) as f64 / secs,
                p50_ms,
                p99_ms,
                size: row.get(0),
                dead: row.get(1),
            };
            println!(
                "{:>6} {:>6.1} s  done {:>7.0}/s  enqueued {:>7.0}/s  pickup p50 {:>8.2} ms  p99 {:>8.2} ms  size {:>7.2} MB  dead {:>8}",
                format!("{phase:?}"),
                s.at,
                s.done_per_s,
                s.enqueued_per_s,
                s.p50_ms,
                s.p99_ms,
                s.size as f64 / 1e6,
                s.dead
            );
            self.samples.lock().unwrap().push(s);
            last = (now, done, enqueued);
        }
    }

    /// One row of the summary table (every cell but the system's name).
    pub(crate) fn summary(&self, every: Duration) -> String {
        let samples = self.samples.lock().unwrap().clone();
        let of = |p: Phase| samples.iter().filter(move |s| s.phase == p);
        // The first window warms up: connections, plans, the first fill.
        let before: Vec<&Sample> = of(Phase::Before).skip(1).collect();
        let mean =
            |xs: &[&Sample]| xs.iter().map(|s| s.done_per_s).sum::<f64>() / xs.len().max(1) as f64;
        let base_rate = mean(&before);
        let base_size = before.iter().map(|s| s.size).max().unwrap_or(0);
        let base_p99 = before.iter().map(|s| s.p99_ms).fold(0.0, f64::max);
        let held: Vec<&Sample> = of(Phase::Held).collect();
        let held_rate = mean(&held);
        let held_size = held.iter().map(|s| s.size).max().unwrap_or(0);
        let dead = held.iter().map(|s| s.dead).max().unwrap_or(0);
        let h = self.held.lock().unwrap();
        let back = of(Phase::After)
            .find(|s| {
                s.size as f64 <= 1.2 * base_size as f64 && s.p99_ms <= (2.0 * base_p99).max(100.0)
            })
            .map_or_else(
                || "not within the run".to_string(),
                |s| format!("≤ {:.0} s (sampled every {} s)", s.at, every.as_secs()),
            );
        format!(
            "{:.0} | {:.0} ({:.0}%) | {:.1} / {:.1} ms | {:.2} MB | {:.2} MB ({:.1}×) | {} | {}",
            base_rate,
            held_rate,
            100.0 * held_rate / base_rate.max(1e-9),
            h.value_at_quantile(0.5) as f64 / 1000.0,
            h.value_at_quantile(0.99) as f64 / 1000.0,
            base_size as f64 / 1e6,
            held_size as f64 / 1e6,
            held_size as f64 / (base_size as f64).max(1.0),
            dead,
            back
        )
    }
}
