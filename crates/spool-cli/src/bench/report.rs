//! The results of a benchmark run: the summary table on stdout and the same
//! data as JSON.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::Context;
use serde::Serialize;

use super::args::BenchArgs;
use super::cpu::CpuUse;
use super::latency::LatencySummary;
use super::machine::Machine;

/// A whole run.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    pub spool_version: &'static str,
    /// The command line, verbatim.
    pub command: Vec<String>,
    pub started_at_unix_ms: u128,
    pub store: String,
    pub machine: Machine,
    pub parameters: BenchArgs,
    pub results: Vec<WorkloadResult>,
}

/// What one workload did.
#[derive(Debug, Serialize)]
pub(crate) struct WorkloadResult {
    pub workload: &'static str,
    /// The tasks (pickup: samples) it was asked for.
    pub target: u64,
    /// The tasks it completed: enqueued, or for cycle claimed and acked.
    pub completed: u64,
    pub seconds: f64,
    pub tasks_per_sec: f64,
    /// It hit `--max-seconds` before completing `target`.
    pub stopped_early: bool,
    pub latencies: Vec<LatencySummary>,
    /// CPU use while it ran (cleanup excluded).
    pub cpu: Option<CpuUse>,
}

impl WorkloadResult {
    pub(crate) fn new(
        workload: &'static str,
        target: u64,
        completed: u64,
        seconds: f64,
        latencies: Vec<LatencySummary>,
    ) -> WorkloadResult {
        WorkloadResult {
            workload,
            target,
            completed,
            seconds,
            tasks_per_sec: if seconds > 0.0 {
                completed as f64 / seconds
            } else {
                0.0
            },
            stopped_early: completed < target,
            latencies,
            cpu: None,
        }
    }

    pub(crate) fn with_cpu(mut self, cpu: CpuUse) -> WorkloadResult {
        self.cpu = Some(cpu);
        self
    }
}

/// Prints one row per workload and latency, e.g.
/// `cycle  2000000  6.1  327,000  pickup (enqueue → claim)  3.1 ms ...`.
pub(crate) fn print_table(report: &Report, out: &mut impl Write) -> std::io::Result<()> {
    writeln!(out, "store:   {}", report.store)?;
    writeln!(
        out,
        "machine: {} CPUs, {}",
        report.machine.nproc, report.machine.kernel
    )?;
    writeln!(out, "payload: {} bytes", report.parameters.payload_bytes)?;
    writeln!(out)?;
    writeln!(
        out,
        "{:<15} {:>10} {:>8} {:>12}  {:<36} {:>9} {:>9} {:>9} {:>9}",
        "workload", "completed", "seconds", "tasks/s", "latency of", "p50", "p99", "p99.9", "max"
    )?;
    for r in &report.results {
        let done = if r.stopped_early {
            format!("{}*", r.completed)
        } else {
            r.completed.to_string()
        };
        let lead = format!(
            "{:<15} {:>10} {:>8.2} {:>12}",
            r.workload,
            done,
            r.seconds,
            thousands(r.tasks_per_sec.round() as u64)
        );
        for (i, l) in r.latencies.iter().enumerate() {
            let lead = if i == 0 { lead.as_str() } else { "" };
            writeln!(
                out,
                "{:<48}  {:<36} {:>9} {:>9} {:>9} {:>9}",
                lead,
                l.what,
                micros(l.p50_us),
                micros(l.p99_us),
                micros(l.p999_us),
                micros(l.max_us)
            )?;
        }
        if r.latencies.is_empty() {
            writeln!(out, "{lead}")?;
        }
    }
    writeln!(
        out,
        "\nCPU use while each ran, in cores of {}:",
        report.machine.nproc
    )?;
    for r in &report.results {
        if let Some(cpu) = &r.cpu {
            writeln!(out, "{:<15} {}", r.workload, cpu_line(cpu))?;
        }
    }
    if report.results.iter().any(|r| r.stopped_early) {
        writeln!(
            out,
            "\n* stopped at --max-seconds {} before its target",
            report.parameters.max_seconds
        )?;
    }
    Ok(())
}

pub(crate) fn write_json(report: &Report, path: &Path) -> anyhow::Result<()> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = BufWriter::new(file);
    serde_json::to_writer_pretty(&mut out, report)
        .with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(out)
        .and_then(|()| out.flush())
        .with_context(|| format!("cannot write {}", path.display()))
}

/// `machine 1.92, spool 1.41 (spool-core 0.97, spool-wal 0.21, ...)`, the
/// threads busiest first and idle ones left out.
fn cpu_line(cpu: &CpuUse) -> String {
    let mut threads: Vec<(&String, &f64)> =
        cpu.threads.iter().filter(|(_, &c)| c >= 0.01).collect();
    threads.sort_by(|a, b| b.1.total_cmp(a.1));
    let threads: Vec<String> = threads
        .into_iter()
        .map(|(name, cores)| format!("{name} {cores:.2}"))
        .collect();
    let machine = cpu
        .machine_cores
        .map_or_else(|| "machine ?".to_string(), |m| format!("machine {m:.2}"));
    format!(
        "{machine}, spool {:.2} ({})",
        cpu.process_cores,
        threads.join(", ")
    )
}

/// `1234567` → `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let head = match digits.len() % 3 {
        0 => 3,
        r => r,
    };
    let mut out = digits[..head].to_string();
    for at in (head..digits.len()).step_by(3) {
        out.push(',');
        out.push_str(&digits[at..at + 3]);
    }
    out
}

/// A latency in the unit that keeps it readable.
fn micros(us: f64) -> String {
    if us < 1000.0 {
        format!("{us:.0} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{:.2} s", us / 1_000_000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_grouped_and_latencies_scaled() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(micros(850.0), "850 µs");
        assert_eq!(micros(1500.0), "1.50 ms");
        assert_eq!(micros(2_500_000.0), "2.50 s");
    }

    #[test]
    fn a_short_run_is_flagged() {
        assert!(WorkloadResult::new("x", 10, 9, 1.0, vec![]).stopped_early);
        let full = WorkloadResult::new("x", 10, 10, 2.0, vec![]);
        assert!(!full.stopped_early);
        assert!((full.tasks_per_sec - 5.0).abs() < 1e-9);
    }
}
