//! Steady state: producers offer a fixed rate of single enqueues while
//! consumers keep up; the figure is the pickup latency (payload created →
//! consumer has it) at that rate, and the rate actually achieved.

use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::task::JoinSet;
use tokio::time::MissedTickBehavior;
use tokio_util::sync::CancellationToken;

use crate::figure::{workload, Figure};
use crate::hold;
use crate::payload;
use crate::sink::Sink;
use crate::system::System;

/// How long consumers may take to finish what was offered before the
/// measurement ends anyway.
const SETTLE: Duration = Duration::from_secs(5);

#[derive(Clone, Copy, Debug)]
pub struct Offer {
    pub rate: u64,
    pub clients: usize,
    pub secs: u64,
    pub payload: usize,
    pub consumers: usize,
    pub claim_batch: usize,
}

pub async fn run(
    system: &dyn System,
    o: Offer,
    hold: Option<&hold::Plan>,
) -> anyhow::Result<Vec<Figure>> {
    system.reset().await?;
    let sink = Sink::new()?;
    let stop = CancellationToken::new();
    let mut producers = Vec::with_capacity(o.clients);
    for _ in 0..o.clients {
        producers.push(system.producer().await?);
    }
    // Consumers run on this task, beside the producers' bookkeeping.
    let consumers = system.consume(o.consumers, o.claim_batch, sink.clone(), stop.clone());
    let per_client = Duration::from_secs_f64(o.clients as f64 / o.rate.max(1) as f64);
    let start = Instant::now();
    let end = start + Duration::from_secs(o.secs);
    let mut set = JoinSet::new();
    for mut producer in producers {
        set.spawn(async move {
            let mut tick = tokio::time::interval(per_client);
            tick.set_missed_tick_behavior(MissedTickBehavior::Burst);
            let mut sent = 0u64;
            while Instant::now() < end {
                tick.tick().await;
                producer.enqueue(payload::make(o.payload)).await?;
                sent += 1;
            }
            anyhow::Ok(sent)
        });
    }
    let producing = async {
        let mut sent = 0;
        while let Some(joined) = set.join_next().await {
            sent += joined??;
        }
        let produced_for = start.elapsed();
        let settle_until = Instant::now() + SETTLE;
        while sink.count() < sent && Instant::now() < settle_until {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stop.cancel();
        anyhow::Ok((sent, produced_for))
    };
    let holding = async {
        match hold {
            Some(plan) if !system.pg_schemas().is_empty() => {
                let schemas = system.pg_schemas();
                hold::drive(plan, schemas, system.name(), &sink, start, end).await
            }
            _ => Ok(Vec::new()),
        }
    };
    let (consumed, produced, phases) = tokio::join!(consumers, producing, holding);
    consumed?;
    let (sent, produced_for) = produced?;
    let phases = phases.context("the held horizon failed")?;
    let figure = Figure::new(system.name(), workload::STEADY, o.consumers, o.payload)
        .measured(sent, produced_for.as_secs_f64())
        .latency(sink.pickup_us(0.5), sink.pickup_us(0.99));
    let lost = sent.saturating_sub(sink.count());
    let figure = if lost > 0 {
        figure.note(format!(
            "offered {}/s; {lost} of {sent} not picked up within {} s",
            o.rate,
            SETTLE.as_secs()
        ))
    } else {
        figure.note(format!("offered {}/s", o.rate))
    };
    let phases = phases.into_iter().map(|mut f| {
        f.clients = o.consumers;
        f.payload = o.payload;
        f
    });
    Ok(std::iter::once(figure).chain(phases).collect())
}
