//! Batched enqueue of a pre-fill, then the drain of that backlog by
//! concurrent no-op consumers: two figures from one run. With `--hold`,
//! for the systems that keep their tasks in PostgreSQL, the horizon is held
//! from before the fill to the end of the drain, and the drain's figure
//! carries the largest size and dead-tuple count of the system's tables.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::figure::{workload, Figure};
use crate::hold;
use crate::payload;
use crate::sink::Sink;
use crate::system::System;

/// How the fill and the drain are sized.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub tasks: u64,
    pub payload: usize,
    pub batch: usize,
    pub producers: usize,
    pub consumers: usize,
    pub claim_batch: usize,
    pub max: Duration,
}

pub async fn run(
    system: &dyn System,
    s: Sizes,
    hold: Option<&hold::Plan>,
) -> anyhow::Result<[Figure; 2]> {
    system.reset().await?;
    let both = async {
        let filled = fill(system, s).await?;
        let drained = drain(system, s, filled.tasks).await?;
        anyhow::Ok([filled, drained])
    };
    let schemas = system.pg_schemas();
    let Some(plan) = hold.filter(|_| !schemas.is_empty()) else {
        return both.await;
    };
    let (both, seen) = hold::around(plan, schemas, both).await?;
    let [filled, drained] = both?;
    let held = format!(
        "horizon held ({:?}) from before the fill to the end of the drain: \
         tables and indexes at most {:.2} MB, {} dead tuples",
        plan.hold,
        seen.size as f64 / 1e6,
        seen.dead
    );
    let note = |f: &Figure| {
        if f.note.is_empty() {
            held.clone()
        } else {
            format!("{}; {held}", f.note)
        }
    };
    let (filled_note, drained_note) = (note(&filled), note(&drained));
    Ok([
        filled.note(filled_note),
        drained.note(drained_note).tables(seen.size, seen.dead),
    ])
}

async fn fill(system: &dyn System, s: Sizes) -> anyhow::Result<Figure> {
    let next = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + s.max;
    let mut set = JoinSet::new();
    for _ in 0..s.producers {
        let mut producer = system.producer().await?;
        let next = next.clone();
        set.spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                let first = next.fetch_add(s.batch as u64, Ordering::Relaxed);
                if first >= s.tasks {
                    break;
                }
                let n = (s.tasks - first).min(s.batch as u64) as usize;
                producer
                    .enqueue_batch((0..n).map(|_| payload::make(s.payload)).collect())
                    .await?;
                done += n as u64;
            }
            anyhow::Ok(done)
        });
    }
    let mut done = 0;
    while let Some(joined) = set.join_next().await {
        done += joined??;
    }
    let figure = Figure::new(system.name(), workload::BATCH, s.producers, s.payload)
        .measured(done, start.elapsed().as_secs_f64());
    Ok(if done < s.tasks {
        figure.note(format!(
            "cut at {} s: {done} of {} enqueued",
            s.max.as_secs(),
            s.tasks
        ))
    } else {
        figure
    })
}

async fn drain(system: &dyn System, s: Sizes, tasks: u64) -> anyhow::Result<Figure> {
    let sink = Sink::new()?;
    let stop = CancellationToken::new();
    let start = Instant::now();
    let watcher = {
        let (sink, stop) = (sink.clone(), stop.clone());
        tokio::spawn(async move {
            while sink.count() < tasks && start.elapsed() < s.max {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            stop.cancel();
            // The drain ends when the last task is seen, not when the
            // consumers have wound down.
            start.elapsed()
        })
    };
    let consumed = system
        .consume(s.consumers, s.claim_batch, sink.clone(), stop.clone())
        .await;
    stop.cancel();
    let elapsed = watcher.await?.as_secs_f64();
    consumed?;
    let done = sink.count().min(tasks);
    let figure =
        Figure::new(system.name(), workload::DRAIN, s.consumers, s.payload).measured(done, elapsed);
    Ok(if done < tasks {
        figure.note(format!(
            "cut at {} s: {done} of {tasks} drained",
            s.max.as_secs()
        ))
    } else {
        figure
    })
}
