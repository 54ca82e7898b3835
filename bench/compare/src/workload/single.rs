//! Single enqueues from N concurrent clients, each waiting for its
//! durable acknowledgement before sending the next, for a fixed time.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tokio::task::JoinSet;

use crate::figure::{workload, Figure};
use crate::payload;
use crate::system::System;

pub async fn run(
    system: &dyn System,
    clients: usize,
    size: usize,
    secs: u64,
) -> anyhow::Result<Figure> {
    system.reset().await?;
    let mut producers = Vec::with_capacity(clients);
    for _ in 0..clients {
        producers.push(system.producer().await?);
    }
    let start = Instant::now();
    let end = start + Duration::from_secs(secs);
    let mut set = JoinSet::new();
    for mut producer in producers {
        set.spawn(async move {
            let mut hist = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
            while Instant::now() < end {
                let t = Instant::now();
                producer.enqueue(payload::make(size)).await?;
                hist.saturating_record(t.elapsed().as_micros() as u64);
            }
            anyhow::Ok(hist)
        });
    }
    let mut merged = Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)?;
    while let Some(done) = set.join_next().await {
        merged.add(done??)?;
    }
    let elapsed = start.elapsed().as_secs_f64();
    Ok(Figure::new(system.name(), workload::SINGLE, clients, size)
        .measured(merged.len(), elapsed)
        .latency(
            merged.value_at_quantile(0.5),
            merged.value_at_quantile(0.99),
        ))
}
