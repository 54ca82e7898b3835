//! One measured figure: the unit of the JSON output, the table and the
//! chart.

use serde::{Deserialize, Serialize};

/// The workloads of the comparison, by the names the report uses.
pub mod workload {
    pub const SINGLE: &str = "enqueue-single";
    pub const BATCH: &str = "enqueue-batch";
    pub const DRAIN: &str = "drain";
    pub const STEADY: &str = "steady";
}

#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Figure {
    pub system: String,
    pub workload: String,
    /// Concurrent clients (producers, or consumers for a drain).
    pub clients: usize,
    /// Payload size in bytes.
    pub payload: usize,
    /// Tasks the measurement completed.
    pub tasks: u64,
    pub seconds: f64,
    /// Tasks per second.
    pub rate: f64,
    /// Latency quantiles in microseconds: of each enqueue call for the
    /// enqueue workloads, of pickup (created → consumer has it) otherwise.
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
    /// Why a figure is partial or missing (cut at the time limit, error).
    pub note: String,
}

impl Figure {
    pub fn new(system: &str, workload: &str, clients: usize, payload: usize) -> Figure {
        Figure {
            system: system.to_string(),
            workload: workload.to_string(),
            clients,
            payload,
            tasks: 0,
            seconds: 0.0,
            rate: 0.0,
            p50_us: None,
            p99_us: None,
            note: String::new(),
        }
    }

    /// Fills in the throughput of `tasks` done in `seconds`.
    pub fn measured(mut self, tasks: u64, seconds: f64) -> Figure {
        self.tasks = tasks;
        self.seconds = seconds;
        self.rate = if seconds > 0.0 {
            tasks as f64 / seconds
        } else {
            0.0
        };
        self
    }

    pub fn latency(mut self, p50_us: u64, p99_us: u64) -> Figure {
        self.p50_us = Some(p50_us);
        self.p99_us = Some(p99_us);
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Figure {
        self.note = note.into();
        self
    }

    /// The label of this figure's row in the table and the chart.
    pub fn row_label(&self) -> String {
        match self.workload.as_str() {
            workload::SINGLE => {
                let s = if self.clients == 1 { "" } else { "s" };
                format!(
                    "single enqueue, {} client{s}, {} B",
                    self.clients, self.payload
                )
            }
            workload::BATCH => format!("batched enqueue, {} B", self.payload),
            workload::DRAIN => format!("drain, {} B", self.payload),
            workload::STEADY => format!("steady state, {} B", self.payload),
            other => other.to_string(),
        }
    }
}
