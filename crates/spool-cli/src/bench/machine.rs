//! Notes on the machine a benchmark ran on, stored with its results so
//! figures are never compared across machines by accident.

use std::process::Command;

use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    /// CPUs this process may use.
    pub nproc: usize,
    /// `uname -srm`.
    pub kernel: String,
    pub cpu_model: Option<String>,
    pub mem_total_bytes: Option<u64>,
}

pub(crate) fn describe() -> Machine {
    Machine {
        nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: uname().unwrap_or_else(|| "unknown".to_string()),
        cpu_model: proc_field("/proc/cpuinfo", "model name"),
        mem_total_bytes: proc_field("/proc/meminfo", "MemTotal")
            .and_then(|v| v.trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kib| kib * 1024),
    }
}

fn uname() -> Option<String> {
    let out = Command::new("uname").arg("-srm").output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The value of the first `name: value` line of a /proc file.
fn proc_field(path: &str, name: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_string())
    })
}
