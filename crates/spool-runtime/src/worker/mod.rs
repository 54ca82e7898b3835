//! Workers: one pool per queue, each a concurrency limit, an acquisition
//! loop and its runs; one acker batching the acks of every pool.
//!
//! - `config`: a pool's settings;
//! - `pool`: a queue's slots and handlers, shared by its loop and runs;
//! - `acquire`: the acquisition loop, which claims as many tasks as the
//!   pool has free slots (never more), long-polling the store;
//! - `run`: one run under its deadline, with its span and metrics;
//! - `report`: what a run's outcome becomes in the store;
//! - `acker`: acks gathered into `ack_many` calls;
//! - `rate`: the optional per-queue rate limit;
//! - `span`: the tracing span of a run;
//! - `leases`: the leases the runs hold;
//! - `watch`: the lease watcher, which cuts off a run whose lease is lost
//!   (its task cancelled) within 100 ms.
//!
//! Shutdown (docs/spec.md §6): stop claiming, let runs finish until the timeout,
//! then cut off the rest and release their tasks (the attempt is not
//! counted), flush the acks.

mod acker;
mod acquire;
mod config;
mod leases;
mod pool;
mod rate;
mod report;
mod run;
mod span;
mod watch;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use spool_core::{Kind, QueueName, Store};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::clock::StoreClock;
use crate::error::StartError;
use crate::handler::{ErasedHandler, Handler, Typed};

use crate::job::Job;
use crate::metrics::QueueMetrics;
pub use config::QueueConfig;

/// How often the worker re-measures the store's clock.
const CLOCK_REFRESH: Duration = Duration::from_secs(10);
/// How long cut-off runs get to release their tasks at shutdown.
const RELEASE_GRACE: Duration = Duration::from_secs(5);

/// What every pool and run of a worker shares.
pub(crate) struct Shared {
    pub store: Arc<dyn Store>,
    pub id: String,
    pub clock: Arc<StoreClock>,
    pub acks: mpsc::Sender<acker::QueuedAck>,
    /// Stop claiming.
    pub stop: CancellationToken,
    /// Cut off the runs still going and release their tasks.
    pub abandon: CancellationToken,
    pub released: AtomicUsize,
    /// Cancelled once the store's clock was read (or could not be): runs
    /// need it for their deadlines.
    pub clock_read: CancellationToken,
    /// The leases the runs hold, for the lease watcher.
    pub leases: Arc<leases::Leases>,
}

/// Sets a worker up: its queues and their handlers.
#[must_use]
pub struct WorkerBuilder {
    store: Arc<dyn Store>,
    id: Option<String>,
    queues: BTreeMap<String, QueueConfig>,
    handlers: Vec<(&'static str, &'static str, Arc<dyn ErasedHandler>)>,
}

impl std::fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field("id", &self.id)
            .field("queues", &self.queues)
            .finish_non_exhaustive()
    }
}

/// A running worker. Dropping it stops claiming and lets runs finish in the
/// background; [`Worker::shutdown`] also waits for them.
#[must_use = "dropping a Worker stops it"]
pub struct Worker {
    shared: Arc<Shared>,
    pools: Vec<Arc<pool::Pool>>,
    loops: Vec<JoinHandle<()>>,
    acker: Option<JoinHandle<()>>,
    acker_done: CancellationToken,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("id", &self.shared.id)
            .finish_non_exhaustive()
    }
}

/// How a shutdown went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Every run finished before the timeout.
    pub finished: bool,
    /// Tasks cut off and given back, their attempt not counted.
    pub released: usize,
}

/// `host:pid:random`: an operator reading a lease's owner can find the
/// process.
fn default_id() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "worker".into());
    let host: String = host.chars().take(64).collect();
    format!("{host}:{}:{:08x}", std::process::id(), rand_suffix())
}

/// A few random bits to tell apart workers of one process: every
/// `RandomState` is seeded afresh.
fn rand_suffix() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let h = std::collections::hash_map::RandomState::new().build_hasher();
    h.finish() as u32
}

impl Worker {
    /// A worker on `store`: register handlers, configure queues, then
    /// [`WorkerBuilder::start`].
    pub fn builder(store: Arc<dyn Store>) -> WorkerBuilder {
        WorkerBuilder {
            store,
            id: None,
            queues: BTreeMap::new(),
            handlers: Vec::new(),
        }
    }

    /// The worker id its leases are taken under.
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// Stops claiming, waits up to `timeout` for runs in progress, then
    /// cuts off the rest and releases their tasks without counting the
    /// attempt; flushes pending acks.
    pub async fn shutdown(mut self, timeout: Duration) -> ShutdownReport {
        self.shared.stop.cancel();
        for l in self.loops.drain(..) {
            let _ = l.await;
        }
        let finished = all_idle(&self.pools, Instant::now() + timeout).await;
        if !finished {
            self.shared.abandon.cancel();
            if !all_idle(&self.pools, Instant::now() + RELEASE_GRACE).await {
                tracing::warn!("some runs did not give their tasks back in time");
            }
        }
        self.acker_done.cancel();
        if let Some(acker) = self.acker.take() {
            let _ = acker.await;
        }
        ShutdownReport {
            finished,
            released: self.shared.released.load(Ordering::SeqCst),
        }
    }
}

/// Waits until every pool has all its slots back, or `until`.
async fn all_idle(pools: &[Arc<pool::Pool>], until: Instant) -> bool {
    for p in pools {
        let all = u32::try_from(p.concurrency()).unwrap_or(u32::MAX);
        match tokio::time::timeout_at(until, p.slots().acquire_many(all)).await {
            // Kept idle: the pool claims nothing more.
            Ok(Ok(permits)) => permits.forget(),
            Ok(Err(_)) => {}
            Err(_) => return false,
        }
    }
    true
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shared.stop.cancel();
    }
}

impl WorkerBuilder {
    /// The worker id (1–256 bytes); default `host:pid:random`.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Settings of one queue's pool. A queue with handlers but no settings
    /// gets the defaults.
    pub fn queue(mut self, queue: &str, config: QueueConfig) -> Self {
        self.queues.insert(queue.to_string(), config);
        self
    }

    /// Runs `J::KIND` tasks of queue `J::QUEUE` with `handler`: an async
    /// function `(Context, J) -> Result<(), TaskError>` or a [`Handler`].
    pub fn register<J: Job, H: Handler<J>>(mut self, handler: H) -> Self {
        self.handlers
            .push((J::QUEUE, J::KIND, Typed::<J, H>::erase(handler)));
        self
    }

    /// Checks the settings and starts a pool per queue. Must be called from
    /// within a Tokio runtime.
    pub fn start(self) -> Result<Worker, StartError> {
        if self.handlers.is_empty() {
            return Err(StartError::NoHandlers);
        }
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| StartError::NoRuntime)?;
        let id = self.id.unwrap_or_else(default_id);
        if id.is_empty() || id.len() > spool_core::store::MAX_WORKER_ID {
            return Err(StartError::BadWorkerId);
        }
        let mut by_queue: BTreeMap<QueueName, HashMap<Kind, Arc<dyn ErasedHandler>>> =
            BTreeMap::new();
        for (queue, kind, handler) in self.handlers {
            let (queue, kind) = (QueueName::new(queue)?, Kind::new(kind)?);
            let kinds = by_queue.entry(queue.clone()).or_default();
            if kinds.insert(kind.clone(), handler).is_some() {
                return Err(StartError::DuplicateKind { queue, kind });
            }
        }
        let mut configs = BTreeMap::new();
        for (name, config) in self.queues {
            let queue = QueueName::new(name)?;
            config.check(&queue)?;
            configs.insert(queue, config);
        }

        let (acks, rx) = mpsc::channel(acker::CAPACITY);
        let shared = Arc::new(Shared {
            store: self.store,
            id,
            clock: Arc::new(StoreClock::local()),
            acks,
            stop: CancellationToken::new(),
            abandon: CancellationToken::new(),
            released: AtomicUsize::new(0),
            clock_read: CancellationToken::new(),
            leases: Arc::default(),
        });
        let acker_done = CancellationToken::new();
        let acker = runtime.spawn(acker::run(shared.store.clone(), rx, acker_done.clone()));
        runtime.spawn(keep_clock(shared.clone()));
        runtime.spawn(watch::run(shared.clone()));
        let mut pools = Vec::new();
        let mut loops = Vec::new();
        for (queue, handlers) in by_queue {
            let config = configs.remove(&queue).unwrap_or_default();
            let metrics = QueueMetrics::new(&queue);
            let pool = Arc::new(pool::Pool::new(
                queue,
                config,
                handlers,
                metrics,
                shared.clone(),
            ));
            loops.push(runtime.spawn(acquire::acquire(pool.clone())));
            pools.push(pool);
        }
        Ok(Worker {
            shared,
            pools,
            loops,
            acker: Some(acker),
            acker_done,
        })
    }
}

/// Measures the store's clock now and then until the worker stops.
async fn keep_clock(shared: Arc<Shared>) {
    loop {
        if let Err(e) = shared.clock.measure(shared.store.as_ref()).await {
            tracing::debug!(error = %e, "cannot read the store's clock; keeping the last reading");
        }
        shared.clock_read.cancel();
        tokio::select! {
            () = tokio::time::sleep(CLOCK_REFRESH) => {}
            () = shared.stop.cancelled() => return,
        }
    }
}
