//! Where the CPU went during a workload: the whole machine, this process,
//! and this process's threads by name (the engine's core and log threads,
//! the async workers). This is what tells a CPU-bound figure (a thread or
//! the machine near full) from one bound by waiting (fsync, hand-offs).
//!
//! Read from Linux's /proc; elsewhere the figures are absent, not wrong.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::Serialize;

/// Counters at one instant.
#[derive(Debug, Clone)]
pub(crate) struct CpuSample {
    at: Instant,
    /// Nanoseconds on a CPU, per thread id, with the thread's name.
    threads: BTreeMap<u64, (String, u64)>,
    /// Busy and total jiffies of all CPUs (/proc/stat).
    machine: Option<(u64, u64)>,
}

/// CPU use between two samples, in cores (1.0 = one core fully busy).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CpuUse {
    /// Every process on the machine, this one included.
    pub machine_cores: Option<f64>,
    pub process_cores: f64,
    /// By thread name, summed over threads of that name.
    pub threads: BTreeMap<String, f64>,
}

pub(crate) fn sample() -> CpuSample {
    CpuSample {
        at: Instant::now(),
        threads: threads().unwrap_or_default(),
        machine: machine(),
    }
}

impl CpuSample {
    /// CPU use from `self` until `later`; `nproc` scales the machine figure.
    pub(crate) fn until(&self, later: &CpuSample, nproc: usize) -> CpuUse {
        let wall_ns = later.at.duration_since(self.at).as_nanos().max(1) as f64;
        let mut by_name: BTreeMap<String, f64> = BTreeMap::new();
        for (tid, (name, ns)) in &later.threads {
            let before = self.threads.get(tid).map_or(0, |(_, ns)| *ns);
            *by_name.entry(name.clone()).or_default() += ns.saturating_sub(before) as f64 / wall_ns;
        }
        let machine_cores = self.machine.zip(later.machine).map(|((b0, t0), (b1, t1))| {
            (b1.saturating_sub(b0)) as f64 / (t1.saturating_sub(t0)).max(1) as f64 * nproc as f64
        });
        CpuUse {
            machine_cores,
            process_cores: by_name.values().sum(),
            threads: by_name,
        }
    }
}

/// Each thread of this process: id, name, and time on a CPU.
fn threads() -> Option<BTreeMap<u64, (String, u64)>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir("/proc/self/task").ok()? {
        let Ok(entry) = entry else { continue };
        let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // A thread may exit between listing and reading: skip it.
        let path = entry.path();
        let (Ok(name), Ok(stat)) = (
            std::fs::read_to_string(path.join("comm")),
            std::fs::read_to_string(path.join("schedstat")),
        ) else {
            continue;
        };
        let Some(on_cpu) = stat.split_whitespace().next().and_then(|s| s.parse().ok()) else {
            continue;
        };
        out.insert(tid, (name.trim().to_string(), on_cpu));
    }
    Some(out)
}

/// Busy and total jiffies from the first line of /proc/stat.
fn machine() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let idle = fields.get(3)? + fields.get(4).unwrap_or(&0);
    let total: u64 = fields.iter().take(8).sum();
    Some((total - idle, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_shows_up_by_name() {
        let before = sample();
        let spin = std::thread::Builder::new()
            .name("cpu-test-spin".into())
            .spawn(|| {
                let start = Instant::now();
                let mut x = 0u64;
                while start.elapsed().as_millis() < 200 {
                    x = x.wrapping_add(1);
                }
                x
            });
        let Ok(spin) = spin else { return };
        // Sample while the thread still runs: an exited thread is gone.
        std::thread::sleep(std::time::Duration::from_millis(150));
        let during = sample();
        let _ = spin.join();
        if before.machine.is_none() {
            return; // not Linux
        }
        let used = before.until(&during, 1);
        let spin = used.threads.get("cpu-test-spin").copied().unwrap_or(0.0);
        assert!(spin > 0.3, "{used:?}");
        assert!(used.process_cores >= spin);
    }
}
