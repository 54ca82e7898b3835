//! One measured figure: the unit of the JSON output, the table and the
//! chart.

use serde::{Deserialize, Serialize};

/// The workloads of the comparison, by the names the report uses.
pub mod workload {
    pub const SINGLE: &str = "enqueue-single";
    pub const BATCH: &str = "enqueue-batch";
    pub const DRAIN: &str = "drain";
    pub const STEADY: &str = "steady";
    /// The steady state's phases around a held horizon (`--hold`).
    pub const HOLD_BEFORE: &str = "steady-before-hold";
    pub const HOLD_HELD: &str = "steady-held";
    pub const HOLD_AFTER: &str = "steady-after-hold";
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
    /// Around a held horizon: the largest total size of the system's
    /// tables with their indexes, and the most dead tuples, sampled in
    /// the phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dead_tuples: Option<i64>,
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
            size_bytes: None,
            dead_tuples: None,
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

    pub fn tables(mut self, size_bytes: i64, dead_tuples: i64) -> Figure {
        self.size_bytes = Some(size_bytes);
        self.dead_tuples = Some(dead_tuples);
        self
    }

    /// One of the phases around a held horizon.
    pub fn is_hold_phase(&self) -> bool {
        [
            workload::HOLD_BEFORE,
            workload::HOLD_HELD,
            workload::HOLD_AFTER,
        ]
        .contains(&self.workload.as_str())
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
            workload::HOLD_BEFORE => format!("steady, before the hold, {} B", self.payload),
            workload::HOLD_HELD => format!("steady, horizon held, {} B", self.payload),
            workload::HOLD_AFTER => format!("steady, after the hold, {} B", self.payload),
            other => other.to_string(),
        }
    }
}
