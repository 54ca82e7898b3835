//! Latency recording: an HDR histogram of nanoseconds per worker, merged at
//! the end, and its summary in microseconds.

use std::time::Duration;

use anyhow::Context;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant decimal digits kept: 0.1% error, enough for p99.9.
const SIGFIG: u8 = 3;

#[derive(Debug, Clone)]
pub(crate) struct Latency {
    hist: Histogram<u64>,
}

/// A latency distribution, as reported.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LatencySummary {
    /// What was timed, e.g. `"enqueue call (1000 tasks)"`.
    pub what: String,
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl Latency {
    pub(crate) fn new() -> anyhow::Result<Latency> {
        // Auto-resizing: the highest value is not known in advance.
        let hist = Histogram::new(SIGFIG).context("cannot create a latency histogram")?;
        Ok(Latency { hist })
    }

    pub(crate) fn record(&mut self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        // `record` grows the histogram; it fails only for values beyond
        // its reach (centuries), which are then clamped rather than lost.
        if self.hist.record(nanos.max(1)).is_err() {
            self.hist.saturating_record(nanos);
        }
    }

    pub(crate) fn summary(&self, what: impl Into<String>) -> LatencySummary {
        let us = |nanos: u64| nanos as f64 / 1000.0;
        LatencySummary {
            what: what.into(),
            count: self.hist.len(),
            mean_us: self.hist.mean() / 1000.0,
            p50_us: us(self.hist.value_at_quantile(0.50)),
            p99_us: us(self.hist.value_at_quantile(0.99)),
            p999_us: us(self.hist.value_at_quantile(0.999)),
            max_us: us(self.hist.max()),
        }
    }
}

/// Merges the histograms of several workers.
pub(crate) fn merged<'a>(parts: impl IntoIterator<Item = &'a Latency>) -> anyhow::Result<Latency> {
    let mut all = Latency::new()?;
    for part in parts {
        all.hist
            .add(&part.hist)
            .context("cannot merge latency histograms")?;
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_out_in_microseconds() -> anyhow::Result<()> {
        let mut a = Latency::new()?;
        let mut b = Latency::new()?;
        for us in 1..=500 {
            a.record(Duration::from_micros(us));
        }
        for us in 501..=1000 {
            b.record(Duration::from_micros(us));
        }
        let s = merged([&a, &b])?.summary("x");
        assert_eq!(s.count, 1000);
        assert!((s.p50_us - 500.0).abs() < 1.0, "{}", s.p50_us);
        assert!((s.p99_us - 990.0).abs() < 1.0, "{}", s.p99_us);
        assert!((s.max_us - 1000.0).abs() < 1.0, "{}", s.max_us);
        Ok(())
    }
}
