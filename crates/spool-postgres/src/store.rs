//! [`PgStore`]: the handle, how it connects, and what runs beside it.
//!
//! Connecting builds the pool, migrates the schema, then starts four
//! background tasks on the caller's tokio runtime: the LISTEN connection
//! ([`crate::wake`]), the sweeper ([`crate::sweep`]), the notifier
//! ([`crate::notifier`]) and the vacuum ([`crate::vacuum`]). They stop when the
//! last clone of the handle is dropped. The operations themselves live in
//! [`crate::ops`], one file per group, as methods of
//! [`crate::backend::Backend`].

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use spool_core::lease_wait::{wait_until_lost, RECHECK};
use spool_core::store::validate_lease_wait;
use spool_core::{
    groups::GroupStats, Ack, ClaimRequest, EnqueueOutcome, FailRequest, Kind, LeaseToken,
    ListRequest, NewTask, QueueChange, QueueName, QueueSettings, QueueStats, Schedule,
    ScheduleSpec, Store, StoreError, Task, TaskId, TaskPage, TaskPatch, TaskRef, Timestamp,
};
use tokio::task::JoinHandle;

use crate::backend::Backend;
use crate::config::PgConfig;
use crate::early_release;
use crate::error::PgError;
use crate::floor::Floors;
use crate::horizon::XidMarks;
use crate::limited::LimitedQueues;
use crate::migrate;
use crate::notifier::{self, Notifier};
use crate::ops::enqueue::enqueue_on;
use crate::ops::enqueue::general::NotifyIn;
use crate::rotate;
use crate::rotate::CurrentGen;
use crate::sql::Sql;
use crate::sweep;
use crate::tls;
use crate::vacuum;
use crate::wake::{self, Wakeups};

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
    pub(crate) backend: Arc<Backend>,
    _background: Arc<Background>,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("schema", &self.backend.config.schema)
            .field("pool", &self.backend.pool.status())
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
        // The task table is partitioned (migration 6). A scan that must stop
        // after a batch in index order (the claim's, promotion's) merges
        // the partitions' indexes, unless a partition's statistics say it
        // is empty: then the planner read all its rows and sorted them.
        // Without sorts to choose, the merge is the plan, and every
        // statement that needs a sort still gets one (README.md).
        with_option(&mut pg, "-c enable_sort=off");
        // A connection keeps each statement's generic plan until something
        // invalidates it, and a turn of the ring plans them again on the
        // partition it has just emptied, which the planner takes for ten
        // pages: reading ten pages looked cheaper than fetching a batch by
        // ctid, and the promotion then read the current generation whole
        // on every sweep as it grew (src/plans.rs). Every hot statement is
        // written for an index, or for the ctids it was handed; a statement
        // that has no other way still scans (README.md).
        with_option(&mut pg, "-c enable_seqscan=off");
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
        let release_early = {
            let mut client = pool
                .get()
                .await
                .map_err(|e| PgError::Connect(e.to_string()))?;
            migrate::run(&mut client, &schema).await?;
            early_release::probe(&**client).await
        };
        let backend = Arc::new(Backend {
            pool,
            sql: Sql::new(&schema),
            config,
            channel: schema.channel(),
            wakeups: Arc::new(Wakeups::default()),
            floors: Arc::new(Floors::default()),
            notifier: Arc::new(Notifier::default()),
            claimed_since_vacuum: AtomicU64::new(0),
            limited: LimitedQueues::default(),
            release_early,
            current_gen: CurrentGen::default(),
            xid_marks: XidMarks::default(),
        });
        let listener = tokio::spawn(wake::listen(
            pg,
            tls,
            schema.channel(),
            backend.wakeups.clone(),
            backend.floors.clone(),
        ));
        let sweeper = tokio::spawn(sweep::run(backend.clone()));
        let notifier = tokio::spawn(notifier::run(
            backend.notifier.clone(),
            backend.pool.clone(),
            backend.channel.clone(),
        ));
        let vacuum = tokio::spawn(vacuum::run(backend.clone()));
        let rotation = tokio::spawn(rotate::run(backend.clone()));
        Ok(PgStore {
            backend,
            _background: Arc::new(Background(vec![
                listener, sweeper, notifier, vacuum, rotation,
            ])),
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
        let s = &self.backend;
        enqueue_on(
            tx,
            &s.sql,
            &s.current_gen,
            s.config.strict_queues,
            queue,
            tasks,
            NotifyIn::Statement,
        )
        .await
        .map(|done| done.outcomes)
    }

    /// The schema this store keeps its tables in.
    pub fn schema(&self) -> &str {
        &self.backend.config.schema
    }
}

#[async_trait]
impl Store for PgStore {
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        self.backend.enqueue(queue, tasks).await
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        self.backend.claim(req).await
    }

    async fn ack(&self, id: TaskId, token: LeaseToken, ack: Ack) -> Result<(), StoreError> {
        self.backend.ack(id, token, ack).await
    }

    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        self.backend.ack_many(&acks).await
    }

    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        self.backend.fail(id, token, req).await
    }

    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.backend
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
        self.backend.give_back(id, token, Some(run_at), None).await
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        self.backend.extend(id, token, lease).await
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        self.backend.update(task, patch).await
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        self.backend.cancel(task).await
    }

    async fn wait_leases_lost(
        &self,
        leases: &[(TaskId, LeaseToken)],
        wait: Duration,
    ) -> Result<Vec<TaskId>, StoreError> {
        validate_lease_wait(leases.len(), wait)?;
        let signal = Some(self.backend.wakeups.cancels());
        wait_until_lost(signal, RECHECK, wait, || self.backend.leases_lost(leases)).await
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        self.backend.get(task).await
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.backend.retry(id).await
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        self.backend.retry_dead(queue).await
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        self.backend.list(req).await
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        self.backend.stats().await
    }

    async fn groups(&self, queue: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError> {
        self.backend.groups(queue, limit).await
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        self.backend.put_queue(queue, change).await
    }

    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        self.backend.get_queue(queue).await.map(|(_, s)| s)
    }

    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        self.backend.set_paused(queue, paused).await
    }

    async fn now(&self) -> Result<Timestamp, StoreError> {
        self.backend.now().await
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.backend.put_schedule(spec).await
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.backend.list_schedules().await
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        self.backend.delete_schedule(name).await
    }

    fn schedule_changes(&self) -> Option<tokio::sync::watch::Receiver<()>> {
        Some(self.backend.wakeups.schedule_changes())
    }

    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        self.backend.fire_schedule(name, tick).await
    }
}
