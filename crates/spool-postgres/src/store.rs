//! [`PgStore`]: the handle, how it connects, and what runs beside it.
//!
//! Connecting builds the pool, migrates the schema, then starts four
//! background tasks on the caller's tokio runtime: the LISTEN connection
//! ([`crate::wake`]), the sweeper ([`crate::sweep`]), the notifier
//! ([`crate::notifier`]) and the vacuum ([`crate::vacuum`]). They stop when the
//! last clone of the handle is dropped. The operations themselves live in
//! [`crate::ops`], one file per group, as methods of [`Shared`].

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use spool_core::{
    ClaimRequest, EnqueueOutcome, FailRequest, Kind, LeaseToken, ListRequest, NewTask, QueueName,
    QueueSettings, QueueStats, Schedule, ScheduleSpec, Store, StoreError, Task, TaskId, TaskPage,
    TaskPatch, TaskRef, Timestamp,
};
use tokio::task::JoinHandle;

use crate::config::PgConfig;
use crate::error::{self, PgError};
use crate::floor::{Floors, Ready};
use crate::migrate;
use crate::notifier::{self, Notifier};
use crate::ops::enqueue::{enqueue_on, NotifyIn};
use crate::sql::Sql;
use crate::sweep;
use crate::tls;
use crate::vacuum;
use crate::wake::{self, Wakeups};

/// What every operation needs: the pool, the statements, the settings and
/// this process's waiters.
pub(crate) struct Shared {
    pub(crate) pool: Pool,
    pub(crate) sql: Sql,
    pub(crate) config: PgConfig,
    /// The schema's LISTEN/NOTIFY channel.
    pub(crate) channel: String,
    pub(crate) wakeups: Arc<Wakeups>,
    /// Where this process's claims start ([`crate::floor`]).
    pub(crate) floors: Arc<Floors>,
    pub(crate) notifier: Notifier,
    /// Tasks this process claimed since it last vacuumed ([`crate::vacuum`]).
    pub(crate) claimed_since_vacuum: AtomicU64,
}

impl Shared {
    /// A pooled connection, or `unavailable` after `acquire_timeout`.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(error::pool)
    }

    /// Wakes claimers waiting on `queue` and lowers claim floors for what
    /// became `ready`: here at once, elsewhere through a NOTIFY the
    /// notifier sends soon, coalesced with others. Call it after the change
    /// it announces has committed.
    pub(crate) fn notify(&self, queue: &str, ready: Ready) {
        self.floors.lower(queue, ready);
        self.wakeups.wake(queue);
        self.notifier.request(queue, ready);
    }
}

/// Aborts the background tasks when the last handle goes.
struct Background(Vec<JoinHandle<()>>);

impl Drop for Background {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Spool's PostgreSQL store. Cheap to clone; clones share the pool.
#[derive(Clone)]
pub struct PgStore {
    pub(crate) shared: Arc<Shared>,
    _background: Arc<Background>,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.shared.config.schema)
            .field("pool", &self.shared.pool.status())
            .finish()
    }
}

/// Appends a server setting to the connection's startup options.
fn with_option(pg: &mut tokio_postgres::Config, option: &str) {
    let options = match pg.get_options() {
        Some(o) if !o.is_empty() => format!("{o} {option}"),
        _ => option.to_string(),
    };
    pg.options(options);
}

impl PgStore {
    /// Connects to the database at `url` (a `postgres://` URL or key=value
    /// string), creates or migrates the schema, and starts the background
    /// tasks on the current tokio runtime.
    ///
    /// Must be called within a tokio runtime. `sslmode=require` in `url`
    /// encrypts every connection (`crate::tls` says how the server is
    /// checked); otherwise connections are cleartext.
    pub async fn connect(url: &str, config: PgConfig) -> Result<PgStore, PgError> {
        let schema = config.validate()?;
        let mut pg: tokio_postgres::Config = url.parse().map_err(PgError::Url)?;
        let tls = tls::settle(&mut pg, config.tls_root_cert.as_deref())?;
        if pg.get_connect_timeout().is_none() {
            pg.connect_timeout(config.connect_timeout);
        }
        if pg.get_application_name().is_none() {
            pg.application_name("spool");
        }
        // docs/spec.md §3: an answer means the change is on disk, whatever the
        // server's default.
        with_option(&mut pg, "-c synchronous_commit=on");
        // Every statement is shaped for one plan whatever its parameters
        // (README.md). Left to choose, PostgreSQL re-plans the claim on
        // every call, and planning (~1.5 ms) costs more than running it:
        // forcing the generic plan doubled the drain rate.
        with_option(&mut pg, "-c plan_cache_mode=force_generic_plan");
        // The generic plan estimates `LIMIT $3` as a tenth of the table, so
        // from about two million tasks its cost passes jit_above_cost and
        // every claim compiled itself first: 320 ms of JIT for a 10 ms
        // statement at 10M rows (README.md). Nothing here runs long enough
        // to repay compiling.
        with_option(&mut pg, "-c jit=off");
        let manager = Manager::from_config(
            pg.clone(),
            tls.clone(),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(config.pool_size)
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(config.acquire_timeout))
            .create_timeout(Some(config.connect_timeout))
            .recycle_timeout(Some(config.connect_timeout))
            .build()?;
        {
            let mut client = pool
                .get()
                .await
                .map_err(|e| PgError::Connect(e.to_string()))?;
            migrate::run(&mut client, &schema).await?;
        }
        let shared = Arc::new(Shared {
            pool,
            sql: Sql::new(&schema),
            config,
            channel: schema.channel(),
            wakeups: Arc::new(Wakeups::default()),
            floors: Arc::new(Floors::default()),
            notifier: Notifier::default(),
            claimed_since_vacuum: AtomicU64::new(0),
        });
        let listener = tokio::spawn(wake::listen(
            pg,
            tls,
            schema.channel(),
            shared.wakeups.clone(),
            shared.floors.clone(),
        ));
        let sweeper = tokio::spawn(sweep::run(shared.clone()));
        let notifier = tokio::spawn(notifier::run(shared.clone()));
        let vacuum = tokio::spawn(vacuum::run(shared.clone()));
        Ok(PgStore {
            shared,
            _background: Arc::new(Background(vec![listener, sweeper, notifier, vacuum])),
        })
    }

    /// Enqueues inside the caller's transaction: the tasks exist, and
    /// waiting claimers are woken, only if and when it commits. The same
    /// rules as [`Store::enqueue`] apply, and the batch is atomic with
    /// everything else the transaction does.
    ///
    /// The transaction may be on any connection to the same database (a
    /// `deadpool_postgres::Transaction` dereferences to one). Statements
    /// name the schema explicitly, so the connection's search_path does
    /// not matter. Times (`created_at`, a default `run_at`) are the
    /// transaction's `now()`, its start.
    pub async fn enqueue_in(
        &self,
        tx: &tokio_postgres::Transaction<'_>,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        let s = &self.shared;
        enqueue_on(
            tx,
            &s.sql,
            s.config.strict_queues,
            queue,
            tasks,
            NotifyIn::Statement,
        )
        .await
    }

    /// The schema this store keeps its tables in.
    pub fn schema(&self) -> &str {
        &self.shared.config.schema
    }
}

#[async_trait]
impl Store for PgStore {
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        self.shared.enqueue(queue, tasks).await
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        self.shared.claim(req).await
    }

    async fn ack(
        &self,
        id: TaskId,
        token: LeaseToken,
        reschedule_at: Option<Timestamp>,
    ) -> Result<(), StoreError> {
        self.shared.ack(id, token, reschedule_at).await
    }

    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.shared.ack_many(&acks).await
    }

    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        self.shared.fail(id, token, req).await
    }

    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.shared
            .give_back(id, token, None, None)
            .await
            .map(|_| ())
    }

    async fn snooze(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<Task, StoreError> {
        self.shared.give_back(id, token, Some(run_at), None).await
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        self.shared.extend(id, token, lease).await
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        self.shared.update(task, patch).await
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        self.shared.cancel(task).await
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        self.shared.get(task).await
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.shared.retry(id).await
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        self.shared.retry_dead(queue).await
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        self.shared.list(req).await
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        self.shared.stats().await
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        settings: QueueSettings,
    ) -> Result<QueueSettings, StoreError> {
        self.shared.put_queue(queue, settings).await
    }

    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        self.shared.get_queue(queue).await.map(|(_, s)| s)
    }

    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        self.shared.set_paused(queue, paused).await
    }

    async fn now(&self) -> Result<Timestamp, StoreError> {
        self.shared.now().await
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.shared.put_schedule(spec).await
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.shared.list_schedules().await
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        self.shared.delete_schedule(name).await
    }

    fn schedule_changes(&self) -> Option<tokio::sync::watch::Receiver<()>> {
        Some(self.shared.wakeups.schedule_changes())
    }

    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        self.shared.fire_schedule(name, tick).await
    }
}
