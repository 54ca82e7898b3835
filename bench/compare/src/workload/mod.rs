//! The workloads of the comparison, each run against one system at a time
//! so that nothing else competes for the machine.

mod drain;
mod single;
mod steady;

use std::time::Duration;

use crate::config::Config;
use crate::figure::{workload, Figure};
use crate::hold;
use crate::system::System;

/// Runs every selected workload against `system`. A workload that fails
/// becomes a figure whose note says why; the others still run.
pub async fn run_all(system: &dyn System, cfg: &Config) -> Vec<Figure> {
    let mut figures = Vec::new();
    let wants = |w: &str| cfg.workloads.iter().any(|x| x == w);
    let hold = cfg.hold.map(|hold| hold::Plan {
        url: cfg.postgres.clone(),
        hold,
        after: Duration::from_secs(cfg.hold_after),
        length: Duration::from_secs(cfg.hold_for),
        reader_txn: Duration::from_secs(cfg.reader_txn.max(1)),
        every: Duration::from_secs(cfg.sample_every.max(1)),
    });
    if wants("single") {
        for &clients in &cfg.clients {
            let got = single::run(system, clients, cfg.payload, cfg.single_secs).await;
            figures.push(settle(got, system, workload::SINGLE, clients, cfg.payload));
        }
    }
    if wants("batch-drain") {
        figures.extend(batch_drain(system, cfg, cfg.payload, cfg.fill, hold.as_ref()).await);
    }
    if wants("steady") {
        let offer = steady::Offer {
            rate: cfg.steady_rate,
            clients: cfg.steady_clients,
            secs: cfg.steady_secs,
            payload: cfg.payload,
            consumers: cfg.consumers,
            claim_batch: cfg.claim_batch,
        };
        match steady::run(system, offer, hold.as_ref()).await {
            Ok(got) => figures.extend(got),
            Err(e) => figures.push(failed(
                system,
                workload::STEADY,
                cfg.consumers,
                cfg.payload,
                &e,
            )),
        }
    }
    if wants("big") && cfg.big_systems.iter().any(|s| s == system.name()) {
        for &size in &cfg.big_payloads {
            let got = single::run(system, 16, size, cfg.single_secs).await;
            figures.push(settle(got, system, workload::SINGLE, 16, size));
            let tasks = (cfg.big_fill_bytes / size.max(1) as u64).min(cfg.fill);
            figures.extend(batch_drain(system, cfg, size, tasks, None).await);
        }
    }
    // Leave the machine as it was found: no backlog in any system.
    if let Err(e) = system.reset().await {
        eprintln!("{}: final reset failed: {e:#}", system.name());
    }
    figures
}

async fn batch_drain(
    system: &dyn System,
    cfg: &Config,
    payload: usize,
    tasks: u64,
    hold: Option<&hold::Plan>,
) -> Vec<Figure> {
    let sizes = drain::Sizes {
        tasks,
        payload,
        // Large payloads go in smaller batches so one call stays well
        // under any request limit.
        batch: cfg.batch.min((4 << 20) / payload.max(1)).max(1),
        producers: cfg.fill_producers,
        consumers: cfg.consumers,
        claim_batch: cfg.claim_batch,
        max: Duration::from_secs(cfg.max_secs),
    };
    match drain::run(system, sizes, hold).await {
        Ok(figures) => figures.to_vec(),
        Err(e) => vec![
            failed(system, workload::BATCH, cfg.fill_producers, payload, &e),
            failed(system, workload::DRAIN, cfg.consumers, payload, &e),
        ],
    }
}

fn settle(
    got: anyhow::Result<Figure>,
    system: &dyn System,
    workload: &str,
    clients: usize,
    payload: usize,
) -> Figure {
    got.unwrap_or_else(|e| failed(system, workload, clients, payload, &e))
}

fn failed(
    system: &dyn System,
    workload: &str,
    clients: usize,
    payload: usize,
    e: &anyhow::Error,
) -> Figure {
    eprintln!("{} {workload}: failed: {e:#}", system.name());
    Figure::new(system.name(), workload, clients, payload).note(format!("failed: {e:#}"))
}
