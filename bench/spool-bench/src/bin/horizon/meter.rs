//! What a run measures: tasks enqueued and completed, pickup latency, and
//! the system's tables sampled at a fixed interval, per phase.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use spool_bench::tables::{self, Sizes};

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
    pub(crate) sizes: Sizes,
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
    before: Arc<Mutex<Histogram<u64>>>,
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
            before: Arc::new(Mutex::new(histogram())),
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
        match *self.phase.lock().unwrap() {
            Phase::Before => self.before.lock().unwrap().saturating_record(waited),
            Phase::Held => self.held.lock().unwrap().saturating_record(waited),
            Phase::After => {}
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
            let sizes = tables::read(&db, schema).await;
            let s = Sample {
                phase,
                at: start.elapsed().as_secs_f64(),
                done_per_s: (done - last.1) as f64 / secs,
                enqueued_per_s: (enqueued - last.2) as f64 / secs,
                p50_ms,
                p99_ms,
                sizes,
            };
            println!(
                "{:>6} {:>6.1} s  done {:>7.0}/s  enqueued {:>7.0}/s  pickup p50 {:>8.2} ms  p99 {:>8.2} ms  size {:>7.2} + {:>6.2} MB  dead {:>8}",
                format!("{phase:?}"),
                s.at,
                s.done_per_s,
                s.enqueued_per_s,
                s.p50_ms,
                s.p99_ms,
                s.sizes.table as f64 / 1e6,
                s.sizes.index as f64 / 1e6,
                s.sizes.dead
            );
            self.samples.lock().unwrap().push(s);
            last = (now, done, enqueued);
        }
    }

    /// One row of the summary table (every cell but the system's name),
    /// in the columns of [`SUMMARY_HEAD`].
    pub(crate) fn summary(&self, every: Duration) -> String {
        let samples = self.samples.lock().unwrap().clone();
        let of = |p: Phase| samples.iter().filter(move |s| s.phase == p);
        // The first window warms up: connections, plans, the first fill.
        let before: Vec<&Sample> = of(Phase::Before).skip(1).collect();
        let mean =
            |xs: &[&Sample]| xs.iter().map(|s| s.done_per_s).sum::<f64>() / xs.len().max(1) as f64;
        let largest = |xs: &[&Sample]| {
            xs.iter()
                .map(|s| s.sizes)
                .max_by_key(Sizes::total)
                .unwrap_or_default()
        };
        let base_rate = mean(&before);
        let base_size = largest(&before);
        let base_p99 = before.iter().map(|s| s.p99_ms).fold(0.0, f64::max);
        let held: Vec<&Sample> = of(Phase::Held).collect();
        let held_rate = mean(&held);
        let held_size = largest(&held);
        let mut held_totals: Vec<i64> = held.iter().map(|s| s.sizes.total()).collect();
        held_totals.sort_unstable();
        let held_median = held_totals.get(held_totals.len() / 2).copied().unwrap_or(0);
        let dead = held.iter().map(|s| s.sizes.dead).max().unwrap_or(0);
        let back = of(Phase::After)
            .find(|s| {
                s.sizes.total() as f64 <= 1.2 * base_size.total() as f64
                    && s.p99_ms <= (2.0 * base_p99).max(100.0)
            })
            .map_or_else(
                || "not within the run".to_string(),
                |s| format!("≤ {:.0} s (sampled every {} s)", s.at, every.as_secs()),
            );
        let quantiles = |h: &Mutex<Histogram<u64>>| {
            let h = h.lock().unwrap();
            format!(
                "{:.1} / {:.1} ms",
                h.value_at_quantile(0.5) as f64 / 1000.0,
                h.value_at_quantile(0.99) as f64 / 1000.0
            )
        };
        let ratio = |x: i64| x as f64 / (base_size.total() as f64).max(1.0);
        format!(
            "{:.0} | {} | {:.0} ({:.0}%) | {} | {} | {:.2} MB ({:.1}×) | {} ({:.1}×) | {} | {}",
            base_rate,
            quantiles(&self.before),
            held_rate,
            100.0 * held_rate / base_rate.max(1e-9),
            quantiles(&self.held),
            base_size.cell(),
            held_median as f64 / 1e6,
            ratio(held_median),
            held_size.cell(),
            ratio(held_size.total()),
            dead,
            back
        )
    }
}

/// The summary table's head, for [`Run::summary`]'s rows. Sizes are the
/// system's tables + their indexes, the baseline's and the hold's largest
/// sample (by their sum) and the hold's median sample; ratios are to the
/// baseline's largest.
pub(crate) const SUMMARY_HEAD: &str = "| system | baseline tasks/s | baseline pickup p50 / p99 | held tasks/s (ratio) | held pickup p50 / p99 | baseline size, largest | held size, median | held size, largest | dead tuples, most | back to baseline after release |
| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |";
