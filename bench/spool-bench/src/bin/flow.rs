//! Flow control under load (docs/spec.md §4): how exactly a rate limit
//! holds, how fairly claims serve groups, and what limits and many groups
//! cost a claim, on the embedded engine or on PostgreSQL across nodes.
//!
//! ```text
//! cargo run --release -p spool-bench --bin flow -- rate     [--store S] [--nodes N] [--seconds 60] [--claimers 32]
//! cargo run --release -p spool-bench --bin flow -- fairness [--store S] [--nodes N] [--big 1000000] [--small 1000]
//! cargo run --release -p spool-bench --bin flow -- cost     [--store S] [--nodes N] [--tasks 200000] [--groups 10000]
//! ```
//! - `rate`: a queue limited to `--limit` (1,000) tasks per second, burst
//!   `--burst` (100), holding more tasks than the run can take;
//!   `--claimers` loops long-poll claims of up to 10 and ack them. Reports
//!   the tasks handed out per second over `--seconds`, less the opening
//!   burst, against the limit.
//! - `fairness`: `--big` tasks of group A enqueued before `--small` of
//!   group B; `--claimers` (4) loops claim 100 and ack. Reports which claim
//!   first held a B task, and how many A tasks had been handed out when
//!   the last B task was.
//! - `cost`: the same drain of `--tasks` tasks three times, each run on a
//!   queue of its own: a plain queue of ungrouped tasks, then one with a
//!   rate limit, `max_leased` and `group_concurrency` (`--group-concurrency`,
//!   100; 0: none) set (none of them binding) whose tasks spread over
//!   `--groups` groups (0: none), then
//!   the same with a `group_rate_limit` too (not binding either: what a
//!   bucket per group costs). Reports the throughputs and their ratios to
//!   the plain drain, the best of `--rounds` (3) drains each.
//!
//! `--store embedded` (the default) opens an engine in a temporary
//! directory; `--store postgres` opens `--nodes` stores (3) on one fresh
//! schema at `DATABASE_URL` (default: the local development server), the
//! claimers spread over them, and drops the schema at the end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand, ValueEnum};
use spool::embedded::{Engine, EngineConfig};
use spool_bench::db::{database_url, drop_schema, fresh_schema};
use spool_core::{
    ClaimRequest, NewTask, Payload, QueueChange, QueueName, QueueSettings, RateLimit, Store, Task,
    TaskGroup,
};
use spool_postgres::{PgConfig, PgStore};

#[derive(Parser, Debug)]
struct Options {
    #[command(subcommand)]
    what: What,
    /// Where the tasks are kept.
    #[arg(long, value_enum, default_value = "embedded", global = true)]
    store: StoreKind,
    /// PostgreSQL stores (nodes) on the one schema.
    #[arg(long, default_value_t = 3, global = true)]
    nodes: usize,
}

#[derive(Subcommand, Debug)]
enum What {
    /// How exactly a rate limit holds.
    Rate {
        #[arg(long, default_value_t = 1000)]
        limit: u32,
        #[arg(long, default_value_t = 100)]
        burst: u32,
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        #[arg(long, default_value_t = 32)]
        claimers: usize,
    },
    /// How soon a small group is served behind a large one.
    Fairness {
        #[arg(long, default_value_t = 1_000_000)]
        big: usize,
        #[arg(long, default_value_t = 1000)]
        small: usize,
        #[arg(long, default_value_t = 4)]
        claimers: usize,
    },
    /// What limits and many groups cost a drain.
    Cost {
        #[arg(long, default_value_t = 200_000)]
        tasks: usize,
        #[arg(long, default_value_t = 10_000)]
        groups: usize,
        #[arg(long, default_value_t = 8)]
        claimers: usize,
        /// Drains of each queue, alternating; the best of each counts.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// The limited queues' `group_concurrency`; 0 for none, which
        /// leaves a queue without grouped tasks claimed as one without
        /// groups.
        #[arg(long, default_value_t = 100)]
        group_concurrency: u32,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum StoreKind {
    Embedded,
    Postgres,
}

/// The stores a run spreads its claimers over: one engine, or several
/// PostgreSQL nodes on one schema.
struct Stores {
    nodes: Vec<Arc<dyn Store>>,
    /// The engine's directory or the PostgreSQL schema, removed at the end.
    _dir: Option<tempfile::TempDir>,
    schema: Option<String>,
}

impl Stores {
    async fn open(kind: StoreKind, nodes: usize, pool: usize) -> Stores {
        match kind {
            StoreKind::Embedded => {
                let dir = tempfile::tempdir().unwrap();
                let engine: Arc<dyn Store> =
                    Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
                Stores {
                    nodes: vec![engine],
                    _dir: Some(dir),
                    schema: None,
                }
            }
            StoreKind::Postgres => {
                let schema = fresh_schema("flow");
                let mut all: Vec<Arc<dyn Store>> = Vec::new();
                for _ in 0..nodes.max(1) {
                    let config = PgConfig {
                        schema: schema.clone(),
                        pool_size: pool,
                        ..PgConfig::default()
                    };
                    let store = PgStore::connect(&database_url(), config).await.unwrap();
                    all.push(Arc::new(store));
                }
                Stores {
                    nodes: all,
                    _dir: None,
                    schema: Some(schema),
                }
            }
        }
    }

    fn node(&self, i: usize) -> Arc<dyn Store> {
        self.nodes[i % self.nodes.len()].clone()
    }

    async fn close(self) {
        if let Some(schema) = &self.schema {
            drop(self.nodes);
            drop_schema(&database_url(), schema).await;
        }
    }
}

/// Leases longer than any run: no task is handed out twice meanwhile.
const LEASE: Duration = Duration::from_secs(600);
/// Tasks per enqueue call while filling.
const FILL_BATCH: usize = 1000;

fn payload() -> Payload {
    Payload::json(format!("{{\"pad\":\"{}\"}}", "x".repeat(88)))
}

async fn put(store: &dyn Store, q: &QueueName, settings: QueueSettings) {
    let change: QueueChange = QueueSettings {
        lease: LEASE,
        ..settings
    }
    .into();
    store.put_queue(q, change).await.unwrap();
}

/// Enqueues `n` tasks, the i-th in group `group(i)`.
async fn fill(
    store: &dyn Store,
    q: &QueueName,
    n: usize,
    group: impl Fn(usize) -> Option<TaskGroup>,
) {
    let mut start = 0;
    while start < n {
        let end = (start + FILL_BATCH).min(n);
        let batch = (start..end)
            .map(|i| {
                let t = NewTask::new(payload());
                match group(i) {
                    Some(g) => t.group(g),
                    None => t,
                }
            })
            .collect();
        store.enqueue(q, batch).await.unwrap();
        start = end;
    }
}

async fn ack_all(store: &dyn Store, tasks: &[Task]) {
    if tasks.is_empty() {
        return;
    }
    let acks = tasks
        .iter()
        .map(|t| (t.id, t.lease.as_ref().unwrap().token))
        .collect();
    for r in store.ack_many(acks).await.unwrap() {
        r.unwrap();
    }
}

#[tokio::main]
async fn main() {
    let o = Options::parse();
    match o.what {
        What::Rate {
            limit,
            burst,
            seconds,
            claimers,
        } => rate(o.store, o.nodes, limit, burst, seconds, claimers).await,
        What::Fairness {
            big,
            small,
            claimers,
        } => fairness(o.store, o.nodes, big, small, claimers).await,
        What::Cost {
            tasks,
            groups,
            claimers,
            rounds,
            group_concurrency,
        } => {
            let group_concurrency = (group_concurrency > 0).then_some(group_concurrency);
            cost(
                o.store,
                o.nodes,
                tasks,
                groups,
                claimers,
                rounds,
                group_concurrency,
            )
            .await
        }
    }
}

async fn rate(
    kind: StoreKind,
    nodes: usize,
    limit: u32,
    burst: u32,
    seconds: u64,
    claimers: usize,
) {
    let stores = Stores::open(kind, nodes, claimers + 4).await;
    let q = QueueName::new("rated").unwrap();
    let first = stores.node(0);
    put(&*first, &q, QueueSettings::default()).await;
    let tasks = (u64::from(limit) * (seconds + 10) + u64::from(burst)) as usize;
    fill(&*first, &q, tasks, |_| None).await;
    let rate = RateLimit {
        limit,
        period: Duration::from_secs(1),
        burst,
    };
    let settings = QueueSettings {
        rate_limit: Some(rate),
        ..QueueSettings::default()
    };
    put(&*first, &q, settings).await;

    let handed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let loops: Vec<_> = (0..claimers)
        .map(|i| {
            let (store, q, handed, stop) =
                (stores.node(i), q.clone(), handed.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let req = ClaimRequest::new(q.clone(), format!("c{i}"))
                        .max(10)
                        .wait(Duration::from_millis(500));
                    let got = store.claim(req).await.unwrap();
                    if started.elapsed() <= Duration::from_secs(seconds) {
                        handed.fetch_add(got.len() as u64, Ordering::Relaxed);
                    }
                    ack_all(&*store, &got).await;
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for l in loops {
        l.await.unwrap();
    }
    let n = handed.load(Ordering::Relaxed);
    let steady = n.saturating_sub(u64::from(burst)) as f64 / seconds as f64;
    println!(
        "rate {kind:?} nodes={} claimers={claimers}: {n} tasks in {seconds} s; less the burst of {burst}: {steady:.1}/s against {limit}/s ({:+.2}%)",
        stores.nodes.len(),
        (steady / f64::from(limit) - 1.0) * 100.0
    );
    stores.close().await;
}

async fn fairness(kind: StoreKind, nodes: usize, big: usize, small: usize, claimers: usize) {
    let stores = Stores::open(kind, nodes, claimers + 4).await;
    let q = QueueName::new("fair").unwrap();
    let first = stores.node(0);
    put(&*first, &q, QueueSettings::default()).await;
    let (a, b) = (TaskGroup::new("A").unwrap(), TaskGroup::new("B").unwrap());
    let filled = Instant::now();
    fill(&*first, &q, big, |_| Some(a.clone())).await;
    fill(&*first, &q, small, |_| Some(b.clone())).await;
    println!(
        "filled {big} A then {small} B in {:.1} s",
        filled.elapsed().as_secs_f64()
    );

    // Claims counted in the order they were answered; per claim, its A and B tasks.
    let claims = Arc::new(AtomicU64::new(0));
    let a_out = Arc::new(AtomicU64::new(0));
    let b_out = Arc::new(AtomicU64::new(0));
    let first_b_claim = Arc::new(AtomicU64::new(u64::MAX));
    let a_at_last_b = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let loops: Vec<_> = (0..claimers)
        .map(|i| {
            let store = stores.node(i);
            let (q, b) = (q.clone(), b.clone());
            let (claims, a_out, b_out) = (claims.clone(), a_out.clone(), b_out.clone());
            let (first_b_claim, a_at_last_b) = (first_b_claim.clone(), a_at_last_b.clone());
            tokio::spawn(async move {
                loop {
                    let req = ClaimRequest::new(q.clone(), format!("c{i}")).max(100);
                    let got = store.claim(req).await.unwrap();
                    if got.is_empty() || b_out.load(Ordering::Relaxed) >= small as u64 {
                        ack_all(&*store, &got).await;
                        return;
                    }
                    let nth = claims.fetch_add(1, Ordering::Relaxed);
                    let bs = got.iter().filter(|t| t.group.as_ref() == Some(&b)).count() as u64;
                    let a_total = a_out.fetch_add(got.len() as u64 - bs, Ordering::Relaxed)
                        + (got.len() as u64 - bs);
                    if bs > 0 {
                        first_b_claim.fetch_min(nth, Ordering::Relaxed);
                        if b_out.fetch_add(bs, Ordering::Relaxed) + bs >= small as u64 {
                            a_at_last_b.store(a_total, Ordering::Relaxed);
                        }
                    }
                    ack_all(&*store, &got).await;
                }
            })
        })
        .collect();
    for l in loops {
        l.await.unwrap();
    }
    println!(
        "fairness {kind:?} nodes={} claimers={claimers}: first B task in claim #{} (of 100 each); \
         all {small} B handed out after {} A tasks, {:.2} s after the first claim",
        stores.nodes.len(),
        first_b_claim.load(Ordering::Relaxed) + 1,
        a_at_last_b.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    stores.close().await;
}

async fn cost(
    kind: StoreKind,
    nodes: usize,
    tasks: usize,
    groups: usize,
    claimers: usize,
    rounds: usize,
    group_concurrency: Option<u32>,
) {
    let stores = Stores::open(kind, nodes, claimers + 4).await;
    let first = stores.node(0);
    let plain = QueueName::new("plain").unwrap();
    put(&*first, &plain, QueueSettings::default()).await;
    let limited = QueueName::new("limited").unwrap();
    let settings = QueueSettings {
        rate_limit: Some(RateLimit {
            limit: 10_000_000,
            period: Duration::from_secs(1),
            burst: 10_000_000,
        }),
        max_leased: Some(1_000_000),
        group_concurrency,
        ..QueueSettings::default()
    };
    put(&*first, &limited, settings.clone()).await;
    let rated = QueueName::new("rated").unwrap();
    let per_group = QueueSettings {
        group_rate_limit: settings.rate_limit,
        ..settings
    };
    put(&*first, &rated, per_group).await;
    let names: Vec<TaskGroup> = (0..groups)
        .map(|g| TaskGroup::new(format!("tenant-{g:05}")).unwrap())
        .collect();
    let grouped = |i: usize| (!names.is_empty()).then(|| names[i % names.len()].clone());
    let (mut plain_best, mut limited_best, mut rated_best) = (0f64, 0f64, 0f64);
    for round in 1..=rounds {
        fill(&*first, &plain, tasks, |_| None).await;
        let plain_rate = drain(&stores, &plain, claimers).await;
        fill(&*first, &limited, tasks, grouped).await;
        let limited_rate = drain(&stores, &limited, claimers).await;
        fill(&*first, &rated, tasks, grouped).await;
        let rated_rate = drain(&stores, &rated, claimers).await;
        println!(
            "round {round}: plain {plain_rate:.0}/s, limits + {groups} groups {limited_rate:.0}/s ({:.2}x), \
             and a rate limit per group {rated_rate:.0}/s ({:.2}x)",
            limited_rate / plain_rate,
            rated_rate / plain_rate
        );
        plain_best = plain_best.max(plain_rate);
        limited_best = limited_best.max(limited_rate);
        rated_best = rated_best.max(rated_rate);
    }
    println!(
        "cost {kind:?} nodes={} claimers={claimers} tasks={tasks}: best plain {plain_best:.0}/s, \
         best limits + {groups} groups {limited_best:.0}/s ({:.2}x), \
         and a rate limit per group {rated_best:.0}/s ({:.2}x; {:.2}x of limits alone)",
        stores.nodes.len(),
        limited_best / plain_best,
        rated_best / plain_best,
        rated_best / limited_best
    );
    stores.close().await;
}

/// Claims 100 and acks them, `claimers` loops, until the queue is empty;
/// answers tasks per second.
async fn drain(stores: &Stores, q: &QueueName, claimers: usize) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let loops: Vec<_> = (0..claimers)
        .map(|i| {
            let (store, q, done) = (stores.node(i), q.clone(), done.clone());
            tokio::spawn(async move {
                loop {
                    let req = ClaimRequest::new(q.clone(), format!("c{i}")).max(100);
                    let got = store.claim(req).await.unwrap();
                    if got.is_empty() {
                        return;
                    }
                    ack_all(&*store, &got).await;
                    done.fetch_add(got.len() as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for l in loops {
        l.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}
