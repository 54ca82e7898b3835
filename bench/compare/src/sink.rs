//! Where consumers report the tasks they processed: a shared count and a
//! histogram of pickup latency (payload creation → consumer has it).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;

use crate::payload;

/// Cheap to clone; all clones share one count and one histogram.
#[derive(Clone, Debug)]
pub struct Sink {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    count: AtomicU64,
    pickup_us: Mutex<Histogram<u64>>,
}

impl Sink {
    pub fn new() -> anyhow::Result<Sink> {
        Ok(Sink {
            inner: Arc::new(Inner {
                count: AtomicU64::new(0),
                pickup_us: Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 3)?),
            }),
        })
    }

    /// Records one processed task.
    pub fn done(&self, payload: &[u8]) {
        self.done_many(std::iter::once(payload));
    }

    /// Records a batch of processed tasks under one lock.
    pub fn done_many<'a>(&self, payloads: impl IntoIterator<Item = &'a [u8]>) {
        let now = payload::now_nanos();
        let mut n = 0;
        if let Ok(mut hist) = self.inner.pickup_us.lock() {
            for p in payloads {
                n += 1;
                if let Some(sent) = payload::sent_at(p) {
                    hist.saturating_record(now.saturating_sub(sent) / 1_000);
                }
            }
        }
        self.inner.count.fetch_add(n, Ordering::Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.inner.count.load(Ordering::Relaxed)
    }

    /// The pickup histogram so far (µs), to subtract a phase's start from
    /// its end.
    pub fn pickup(&self) -> Histogram<u64> {
        self.inner
            .pickup_us
            .lock()
            .map_or_else(|e| e.into_inner().clone(), |h| h.clone())
    }

    /// Pickup latency quantile in microseconds.
    pub fn pickup_us(&self, q: f64) -> u64 {
        self.inner
            .pickup_us
            .lock()
            .map_or(0, |h| h.value_at_quantile(q))
    }
}
