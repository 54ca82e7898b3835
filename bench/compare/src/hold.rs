//! A held xmin horizon during the steady workload, for the systems that
//! keep their tasks in PostgreSQL: after `--hold-after` seconds something
//! holds the horizon on their database for `--hold-for` seconds, then lets
//! it go, and the steady load runs on to its end. Two holders, as
//! `bench/spool-bench/src/holder.rs` has them:
//! - `writer`: one session runs `BEGIN; SELECT txid_current();` and sits
//!   idle in that transaction;
//! - `readers`: four REPEATABLE READ sessions scan every table of the
//!   system's schemas (`System::pg_schemas`) every 200 ms, in transactions
//!   of `--reader-txn` seconds, one after another, started staggered so a
//!   snapshot is always open.
//!
//! Every `--sample-every` seconds a line: tasks done per second, and the
//! system's tables with their indexes (`pg_total_relation_size`, every
//! table of its schemas) and their dead tuples (`pg_stat_user_tables`).
//! The run ends with one figure per phase (before, held, after): the rate
//! of tasks done, the pickup p50/p99 of the tasks picked up in it, and the
//! largest size and dead-tuple count sampled in it.
//!
//! The drain takes the same holders with [`around`]: held from before its
//! fill to the end of its drain, the tables sampled all the while.

use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use tokio::task::JoinSet;
use tokio_postgres::{Client, NoTls};
use tokio_util::sync::CancellationToken;

use crate::figure::{workload, Figure};
use crate::sink::Sink;

/// What holds the horizon.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Hold {
    /// An idle transaction that took an XID.
    Writer,
    /// Four REPEATABLE READ sessions scanning the system's tables.
    Readers,
}

/// When and how the horizon is held, from the command line.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The database the PostgreSQL systems use.
    pub url: String,
    pub hold: Hold,
    pub after: Duration,
    pub length: Duration,
    pub reader_txn: Duration,
    pub every: Duration,
}

const READERS: usize = 4;

/// The system's tables with their indexes, and their dead tuples, in the
/// schemas `$1`.
const SIZES: &str = "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::int8,
                            coalesce(sum(s.n_dead_tup), 0)::int8
                     FROM pg_class c
                     JOIN pg_namespace n ON n.oid = c.relnamespace
                     LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
                     WHERE n.nspname = ANY($1) AND c.relkind = 'r'";
const SCAN_EVERY: Duration = Duration::from_millis(200);

/// The phases, in order, with the workload names of their figures.
const PHASES: [&str; 3] = [
    workload::HOLD_BEFORE,
    workload::HOLD_HELD,
    workload::HOLD_AFTER,
];

async fn connect(url: &str) -> anyhow::Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .with_context(|| format!("cannot connect to PostgreSQL at {url}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// A hold in progress.
struct Held {
    stop: CancellationToken,
    writer: Option<Client>,
    readers: JoinSet<anyhow::Result<()>>,
}

async fn take(plan: &Plan, schemas: &[&str]) -> anyhow::Result<Held> {
    eprintln!("   holding the horizon: {:?}", plan.hold);
    let url = plan.url.as_str();
    let mut held = Held {
        stop: CancellationToken::new(),
        writer: None,
        readers: JoinSet::new(),
    };
    match plan.hold {
        Hold::Writer => {
            let c = connect(url).await?;
            c.batch_execute("BEGIN; SELECT txid_current();").await?;
            held.writer = Some(c);
        }
        Hold::Readers => {
            // Every ordinary and partitioned table that is not itself a
            // partition: a scan of a parent reads its partitions.
            let tables: Vec<String> = connect(url)
                .await?
                .query(
                    "SELECT format('%I.%I', n.nspname, c.relname)
                     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE n.nspname = ANY($1) AND c.relkind IN ('r', 'p')
                       AND NOT c.relispartition
                     ORDER BY 1",
                    &[&schemas],
                )
                .await?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let scan: String = tables
                .iter()
                .map(|t| format!("SELECT count(*) FROM {t};"))
                .collect();
            eprintln!("   readers scan {} tables", tables.len());
            for r in 0..READERS {
                let c = connect(url).await?;
                let (stop, scan, txn) = (held.stop.clone(), scan.clone(), plan.reader_txn);
                // Staggered, so some reader's snapshot is always open.
                let offset = txn * r as u32 / READERS as u32;
                held.readers.spawn(async move {
                    let mut length = txn.saturating_sub(offset).max(SCAN_EVERY);
                    while !stop.is_cancelled() {
                        c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                            .await?;
                        let began = Instant::now();
                        while began.elapsed() < length && !stop.is_cancelled() {
                            // A table the system dropped meanwhile ends this
                            // transaction early; the next one starts afresh.
                            if let Err(e) = c.batch_execute(&scan).await {
                                eprintln!("   reader: {e}");
                                break;
                            }
                            tokio::time::sleep(SCAN_EVERY).await;
                        }
                        c.batch_execute("ROLLBACK").await?;
                        length = txn;
                    }
                    Ok(())
                });
            }
        }
    }
    Ok(held)
}

impl Held {
    async fn release(mut self) -> anyhow::Result<()> {
        self.stop.cancel();
        if let Some(c) = self.writer.take() {
            c.batch_execute("COMMIT").await?;
        }
        while let Some(done) = self.readers.join_next().await {
            done??;
        }
        Ok(())
    }
}

/// The largest size and dead-tuple count of a system's tables seen while
/// the horizon was held around some work.
pub struct Tables {
    pub size: i64,
    pub dead: i64,
}

/// Runs `work` with the horizon held from before it starts until it ends,
/// sampling the system's tables every `plan.every` and once at the end.
pub async fn around<T>(
    plan: &Plan,
    schemas: &[&str],
    work: impl std::future::Future<Output = T>,
) -> anyhow::Result<(T, Tables)> {
    let db = connect(&plan.url).await?;
    let sizes = db.prepare(SIZES).await?;
    let held = take(plan, schemas).await?;
    let mut seen = Tables { size: 0, dead: 0 };
    let mut sample = async || -> anyhow::Result<()> {
        let row = db.query_one(&sizes, &[&schemas]).await?;
        seen.size = seen.size.max(row.get(0));
        seen.dead = seen.dead.max(row.get(1));
        Ok(())
    };
    tokio::pin!(work);
    let mut tick = tokio::time::interval(plan.every);
    let out = loop {
        tokio::select! {
            out = &mut work => break out,
            _ = tick.tick() => sample().await?,
        }
    };
    sample().await?;
    held.release().await?;
    Ok((out, seen))
}

/// What one phase saw.
struct Phase {
    began: Instant,
    done_at_start: u64,
    pickup_at_start: Histogram<u64>,
    size: i64,
    dead: i64,
}

/// Runs beside the steady load from its `start` to its `end`: samples,
/// takes and releases the horizon, and returns one figure per phase.
pub async fn drive(
    plan: &Plan,
    schemas: &[&str],
    system: &str,
    sink: &Sink,
    start: Instant,
    end: Instant,
) -> anyhow::Result<Vec<Figure>> {
    let db = connect(&plan.url).await?;
    let sizes = db.prepare(SIZES).await?;
    let boundaries = [start + plan.after, start + plan.after + plan.length, end];
    let mut phases: Vec<Phase> = Vec::with_capacity(3);
    let mut figures = Vec::with_capacity(3);
    let mut held = None;
    let mut last = (Instant::now(), sink.count());
    let begin_phase = |phases: &mut Vec<Phase>| {
        phases.push(Phase {
            began: Instant::now(),
            done_at_start: sink.count(),
            pickup_at_start: sink.pickup(),
            size: 0,
            dead: 0,
        })
    };
    begin_phase(&mut phases);
    for (i, &until) in boundaries.iter().enumerate() {
        while Instant::now() < until {
            let next = (Instant::now() + plan.every).min(until);
            tokio::time::sleep_until(next.into()).await;
            let row = db.query_one(&sizes, &[&schemas]).await?;
            let (size, dead): (i64, i64) = (row.get(0), row.get(1));
            let (now, done) = (Instant::now(), sink.count());
            let rate = (done - last.1) as f64 / now.duration_since(last.0).as_secs_f64().max(1e-3);
            last = (now, done);
            let phase = phases.last_mut().expect("a phase is open");
            phase.size = phase.size.max(size);
            phase.dead = phase.dead.max(dead);
            eprintln!(
                "   {:<7} {:>6.1} s  done {:>7.0}/s  size {:>8.2} MB  dead {:>9}",
                PHASES[i].trim_start_matches("steady-"),
                now.duration_since(start).as_secs_f64(),
                rate,
                size as f64 / 1e6,
                dead
            );
        }
        // The phase ends: its figure, then the hold changes hands.
        let phase = phases.last().expect("a phase is open");
        let mut pickup = sink.pickup();
        pickup
            .subtract(&phase.pickup_at_start)
            .context("pickup histograms differ")?;
        let done = sink.count() - phase.done_at_start;
        figures.push(
            Figure::new(system, PHASES[i], 0, 0)
                .measured(done, phase.began.elapsed().as_secs_f64())
                .latency(
                    pickup.value_at_quantile(0.5),
                    pickup.value_at_quantile(0.99),
                )
                .tables(phase.size, phase.dead),
        );
        match i {
            0 => held = Some(take(plan, schemas).await?),
            1 => {
                if let Some(h) = held.take() {
                    h.release().await?;
                }
            }
            _ => break,
        }
        begin_phase(&mut phases);
    }
    Ok(figures)
}
