//! [`RespStore`]: every `Store` operation as one RESP command to a Spool
//! server (docs/resp.md), for workers and producers that want the lean
//! protocol instead of HTTP.
//!
//! Invariants: payloads round-trip exactly, format included (binary bytes
//! are sent with `BINARY`, so bytes that happen to be JSON stay binary);
//! the store's clock is the server's (`TIME`); a transport failure is
//! `Unavailable`; errors map from their stable codes as over HTTP.

use std::time::Duration;

use async_trait::async_trait;
use bytes::BytesMut;
use spool_core::groups::validate_limit;
use spool_core::store::validate_lease_wait;
use spool_core::task::RunAt;
use spool_core::time::duration_millis;
use spool_core::{
    Ack, Cadence, ClaimRequest, EnqueueOutcome, FailRequest, GroupStats, Kind, LeaseToken,
    ListOrder, ListRequest, NewTask, Parent, ParentFailure, Payload, PayloadFormat, QueueChange,
    QueueName, QueueSettings, QueueStats, RateLimit, Schedule, ScheduleSpec, Store, StoreError,
    Task, TaskId, TaskPage, TaskPatch, TaskRef, Timestamp,
};

use super::conn::encode;
use super::decode::{self, bad_answer, Fields};
use super::pool::Pool;
use super::value::Value;
use crate::builder::DEFAULT_TIMEOUT;
use crate::http::Target;

/// Idle connections kept for reuse by default.
const DEFAULT_IDLE: usize = 64;

/// A [`Store`] that is a Spool server's RESP listener.
///
/// Cheap to clone: clones share the connections. Built with
/// [`RespStore::new`] or [`RespStore::builder`].
#[derive(Clone, Debug)]
pub struct RespStore {
    pool: std::sync::Arc<Pool>,
}

/// Settings of a [`RespStore`].
#[derive(Debug)]
pub struct RespStoreBuilder {
    addr: String,
    token: Option<String>,
    timeout: Duration,
    max_idle: usize,
}

impl RespStoreBuilder {
    /// The token the server requires (sent with `HELLO 3 AUTH`).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// How long a call may take (a claim adds its wait). Default 30 s.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How many idle connections are kept for reuse (each call in flight
    /// has one of its own). Default 64.
    pub fn max_idle(mut self, n: usize) -> Self {
        self.max_idle = n;
        self
    }

    /// Connections open lazily, on first use.
    pub fn build(self) -> RespStore {
        RespStore {
            pool: std::sync::Arc::new(Pool::new(
                self.addr,
                self.token,
                self.timeout,
                self.max_idle,
            )),
        }
    }
}

/// The words of one command, built up argument by argument.
struct Cmd(Vec<Vec<u8>>);

impl Cmd {
    fn new(name: &str) -> Cmd {
        Cmd(vec![name.as_bytes().to_vec()])
    }

    fn arg(mut self, a: impl AsRef<[u8]>) -> Cmd {
        self.0.push(a.as_ref().to_vec());
        self
    }

    fn num(self, n: impl std::fmt::Display) -> Cmd {
        self.arg(n.to_string())
    }

    fn ms(self, d: Duration) -> Cmd {
        self.num(duration_millis(d))
    }

    /// `name value`, or nothing when there is no value.
    fn option(self, name: &str, value: Option<impl std::fmt::Display>) -> Cmd {
        match value {
            Some(v) => self.arg(name).num(v),
            None => self,
        }
    }

    /// A limit that may be removed: `name n`, `name OFF`, or nothing when
    /// it does not change.
    fn limit(self, name: &str, change: Option<Option<u32>>) -> Cmd {
        match change {
            None => self,
            Some(None) => self.arg(name).arg("OFF"),
            Some(Some(n)) => self.arg(name).num(n),
        }
    }

    /// `NAME limit period_ms burst`, or `NAME OFF`, for a rate limit given.
    fn rate_limit(self, name: &str, change: Option<Option<RateLimit>>) -> Cmd {
        match change {
            None => self,
            Some(None) => self.arg(name).arg("OFF"),
            Some(Some(r)) => self
                .arg(name)
                .num(r.limit)
                .num(duration_millis(r.period))
                .num(r.burst),
        }
    }

    fn target(self, t: &TaskRef) -> Cmd {
        match t {
            TaskRef::Id(id) => self.num(id.0),
            TaskRef::Key(q, k) => self.arg("KEY").arg(q.as_str()).arg(k.as_str()),
        }
    }

    fn token(self, id: TaskId, token: LeaseToken) -> Cmd {
        self.num(id.0).arg(token.to_string())
    }

    /// A payload, marked `BINARY` unless it is JSON.
    fn payload(self, p: &Payload) -> Cmd {
        let c = self.arg(&p.bytes);
        match p.format {
            PayloadFormat::Json => c,
            PayloadFormat::Binary => c.arg("BINARY"),
        }
    }

    fn task(mut self, t: &NewTask) -> Cmd {
        self = self.payload(&t.payload);
        if let Some(k) = &t.key {
            self = self.arg("KEY").arg(k.as_str());
        }
        match t.run_at {
            RunAt::Now => {}
            RunAt::After(d) => self = self.arg("DELAY").ms(d),
            RunAt::At(at) => self = self.arg("AT").num(at.0),
        }
        if t.priority != 0 {
            self = self.arg("PRIORITY").num(t.priority);
        }
        if let Some(n) = t.max_attempts {
            self = self.arg("MAXATTEMPTS").num(n);
        }
        if let Some(k) = &t.kind {
            self = self.arg("KIND").arg(k.as_str());
        }
        if let Some(ms) = t.lease_ms {
            self = self.arg("LEASE").num(ms);
        }
        if let Some(tp) = &t.traceparent {
            self = self.arg("TRACEPARENT").arg(tp.as_str());
        }
        if let Some(g) = &t.group {
            self = self.arg("GROUP").arg(g.as_str());
        }
        // In the order named. A position is only valid in ENQUEUEBATCH;
        // the server refuses one in a lone ENQUEUE, where it could only
        // name the task itself.
        for p in &t.after {
            self = match *p {
                Parent::Task(id) => self.arg("AFTER").num(id.0),
                Parent::InBatch(at) => self.arg("AFTERBATCH").num(at),
            };
        }
        if t.if_parent_fails != ParentFailure::default() {
            self = self.arg("IFPARENTFAILS").arg(t.if_parent_fails.as_str());
        }
        self
    }

    fn frame(&self) -> BytesMut {
        let mut out = BytesMut::new();
        encode(&self.0, &mut out);
        out
    }
}

impl RespStore {
    /// A store at `addr` (`host:port` of the server's RESP listener).
    pub fn new(addr: impl Into<String>, token: Option<String>) -> RespStore {
        let mut b = RespStore::builder(addr);
        b.token = token;
        b.build()
    }

    /// Settings for a store at `addr` (`host:port` of the server's RESP
    /// listener): token, timeout, idle connections kept.
    pub fn builder(addr: impl Into<String>) -> RespStoreBuilder {
        RespStoreBuilder {
            addr: addr.into(),
            token: None,
            timeout: DEFAULT_TIMEOUT,
            max_idle: DEFAULT_IDLE,
        }
    }

    async fn run(&self, cmd: Cmd, target: Target<'_>) -> Result<Value, StoreError> {
        decode::check(self.pool.call(cmd.frame(), Duration::ZERO).await?, target)
    }

    async fn ok(&self, cmd: Cmd, target: Target<'_>) -> Result<(), StoreError> {
        decode::ok(self.run(cmd, target).await?)
    }

    async fn task(&self, cmd: Cmd, token: Option<LeaseToken>) -> Result<Task, StoreError> {
        decode::task(self.run(cmd, Target::Task).await?, token)
    }
}

fn count_mismatch(got: usize, sent: usize) -> StoreError {
    bad_answer(format!("{got} results for {sent} items"))
}

#[async_trait]
impl Store for RespStore {
    async fn enqueue(
        &self,
        queue: &QueueName,
        tasks: Vec<NewTask>,
    ) -> Result<Vec<EnqueueOutcome>, StoreError> {
        let target = Target::Queue(queue);
        match tasks.as_slice() {
            [] => Ok(Vec::new()),
            [one] => {
                let cmd = Cmd::new("ENQUEUE").arg(queue.as_str()).task(one);
                Ok(vec![decode::enqueued(self.run(cmd, target).await?)?])
            }
            many => {
                let mut cmd = Cmd::new("ENQUEUEBATCH").arg(queue.as_str());
                for t in many {
                    cmd = cmd.arg("TASK").task(t);
                }
                let answers = decode::array(self.run(cmd, target).await?)?;
                if answers.len() != many.len() {
                    return Err(count_mismatch(answers.len(), many.len()));
                }
                answers.into_iter().map(decode::enqueued).collect()
            }
        }
    }

    async fn claim(&self, req: ClaimRequest) -> Result<Vec<Task>, StoreError> {
        req.validate()?;
        let mut cmd = Cmd::new("CLAIM")
            .arg(req.queue.as_str())
            .arg("MAX")
            .num(req.max)
            .arg("WAIT")
            .ms(req.wait)
            .arg("WORKER")
            .arg(&req.worker)
            .arg("FULL");
        if let Some(lease) = req.lease {
            cmd = cmd.arg("LEASE").ms(lease);
        }
        let answer = self.pool.call(cmd.frame(), req.wait).await?;
        decode::array(decode::check(answer, Target::Queue(&req.queue))?)?
            .into_iter()
            .map(|t| decode::task(t, None))
            .collect()
    }

    async fn ack(&self, id: TaskId, token: LeaseToken, ack: Ack) -> Result<(), StoreError> {
        let mut cmd = Cmd::new("ACK").token(id, token);
        match &ack {
            Ack::Done => {}
            Ack::Result(r) => cmd = cmd.arg("RESULT").arg(r.as_str()),
            Ack::Reschedule(at) => cmd = cmd.arg("RESCHEDULE").num(at.0),
        }
        self.ok(cmd, Target::Task).await
    }

    async fn ack_many(
        &self,
        acks: Vec<(TaskId, LeaseToken)>,
    ) -> Result<Vec<Result<(), StoreError>>, StoreError> {
        if acks.is_empty() {
            return Ok(Vec::new());
        }
        let cmd = acks
            .iter()
            .fold(Cmd::new("ACKMANY"), |c, (id, t)| c.token(*id, *t));
        let answers = decode::array(self.run(cmd, Target::Task).await?)?;
        if answers.len() != acks.len() {
            return Err(count_mismatch(answers.len(), acks.len()));
        }
        Ok(answers
            .into_iter()
            .map(|v| decode::check(v, Target::Task).and_then(decode::ok))
            .collect())
    }

    async fn fail(
        &self,
        id: TaskId,
        token: LeaseToken,
        req: FailRequest,
    ) -> Result<Task, StoreError> {
        let mut cmd = Cmd::new("FAIL").token(id, token).arg(&req.message);
        if let Some(at) = req.retry_at {
            cmd = cmd.arg("RETRYAT").num(at.0);
        }
        if req.discard {
            cmd = cmd.arg("DISCARD");
        }
        self.task(cmd.arg("FULL"), Some(token)).await
    }

    async fn release(&self, id: TaskId, token: LeaseToken) -> Result<(), StoreError> {
        self.ok(Cmd::new("RELEASE").token(id, token), Target::Task)
            .await
    }

    async fn snooze(
        &self,
        id: TaskId,
        token: LeaseToken,
        run_at: Timestamp,
    ) -> Result<Task, StoreError> {
        let cmd = Cmd::new("SNOOZE").token(id, token).num(run_at.0);
        self.task(cmd, Some(token)).await
    }

    async fn extend(
        &self,
        id: TaskId,
        token: LeaseToken,
        lease: Duration,
    ) -> Result<Task, StoreError> {
        let cmd = Cmd::new("EXTEND").token(id, token).ms(lease).arg("FULL");
        self.task(cmd, Some(token)).await
    }

    async fn update(&self, task: TaskRef, patch: TaskPatch) -> Result<Task, StoreError> {
        let mut cmd = Cmd::new("UPDATE").target(&task);
        if let Some(p) = &patch.payload {
            cmd = cmd.arg("PAYLOAD").payload(p);
        }
        if let Some(at) = patch.run_at {
            cmd = cmd.arg("RUNAT").num(at.0);
        }
        if let Some(p) = patch.priority {
            cmd = cmd.arg("PRIORITY").num(p);
        }
        self.task(cmd, None).await
    }

    async fn cancel(&self, task: TaskRef) -> Result<(), StoreError> {
        self.ok(Cmd::new("CANCEL").target(&task), Target::Task)
            .await
    }

    async fn wait_leases_lost(
        &self,
        leases: &[(TaskId, LeaseToken)],
        wait: Duration,
    ) -> Result<Vec<TaskId>, StoreError> {
        validate_lease_wait(leases.len(), wait)?;
        let cmd = leases
            .iter()
            .fold(Cmd::new("LEASEWAIT").ms(wait), |c, (id, t)| {
                c.token(*id, *t)
            });
        let answer = self.pool.call(cmd.frame(), wait).await?;
        decode::array(decode::check(answer, Target::Task)?)?
            .iter()
            .map(|v| decode::uint(v).map(TaskId))
            .collect()
    }

    async fn get(&self, task: TaskRef) -> Result<Task, StoreError> {
        self.task(Cmd::new("GET").target(&task), None).await
    }

    async fn retry(&self, id: TaskId) -> Result<Task, StoreError> {
        self.task(Cmd::new("RETRY").num(id.0), None).await
    }

    async fn retry_dead(&self, queue: &QueueName) -> Result<u64, StoreError> {
        let cmd = Cmd::new("RETRYDEAD").arg(queue.as_str());
        decode::uint(&self.run(cmd, Target::Queue(queue)).await?)
    }

    async fn list(&self, req: ListRequest) -> Result<TaskPage, StoreError> {
        req.validate()?;
        let mut cmd = Cmd::new("LIST")
            .arg(req.queue.as_str())
            .arg("LIMIT")
            .num(req.limit);
        if let Some(state) = req.state {
            cmd = cmd.arg("STATE").arg(state.as_str());
        }
        if req.order == ListOrder::AttemptsDesc {
            cmd = cmd.arg("ORDER").arg("attempts");
        }
        if let Some(cursor) = &req.cursor {
            cmd = cmd.arg("CURSOR").arg(cursor);
        }
        let page = Fields::new(self.run(cmd, Target::Queue(&req.queue)).await?)?;
        Ok(TaskPage {
            tasks: decode::array(page.get("tasks")?.clone())?
                .into_iter()
                .map(|t| decode::task(t, None))
                .collect::<Result<_, _>>()?,
            next_cursor: match page.get("next_cursor")? {
                Value::Null => None,
                Value::Bulk(b) => Some(String::from_utf8(b.to_vec()).map_err(bad_answer)?),
                other => return Err(bad_answer(format!("next_cursor {other:?}"))),
            },
        })
    }

    async fn stats(&self) -> Result<Vec<QueueStats>, StoreError> {
        decode::array(self.run(Cmd::new("QUEUES"), Target::Task).await?)?
            .into_iter()
            .map(decode::queue_stats)
            .collect()
    }

    async fn groups(&self, queue: &QueueName, limit: usize) -> Result<Vec<GroupStats>, StoreError> {
        validate_limit(limit)?;
        let cmd = Cmd::new("GROUPS")
            .arg(queue.as_str())
            .arg("LIMIT")
            .num(limit);
        decode::array(self.run(cmd, Target::Queue(queue)).await?)?
            .into_iter()
            .map(decode::group_stats)
            .collect()
    }

    async fn put_queue(
        &self,
        queue: &QueueName,
        change: QueueChange,
    ) -> Result<QueueSettings, StoreError> {
        // Only the fields given: the server applies them to the settings in
        // force, and the store makes that atomic (docs/spec.md §4).
        let ms = |d: Option<Duration>| d.map(duration_millis);
        let cmd = Cmd::new("QUEUE")
            .arg("SET")
            .arg(queue.as_str())
            .option("LEASE", ms(change.lease))
            .option("MAXATTEMPTS", change.max_attempts)
            .option("BACKOFFBASE", ms(change.backoff_base))
            .option("BACKOFFMAX", ms(change.backoff_max))
            .option("DEDUPWINDOW", ms(change.dedup_window))
            .option("MAXPAYLOAD", change.max_payload)
            .option("PAUSED", change.paused.map(u8::from))
            .rate_limit("RATELIMIT", change.rate_limit)
            .limit("MAXLEASED", change.max_leased)
            .limit("GROUPCONCURRENCY", change.group_concurrency)
            .rate_limit("GROUPRATELIMIT", change.group_rate_limit);
        decode::settings(self.run(cmd, Target::Queue(queue)).await?)
    }

    async fn get_queue(&self, queue: &QueueName) -> Result<QueueSettings, StoreError> {
        let cmd = Cmd::new("QUEUE").arg("GET").arg(queue.as_str());
        decode::settings(self.run(cmd, Target::Queue(queue)).await?)
    }

    async fn set_paused(&self, queue: &QueueName, paused: bool) -> Result<(), StoreError> {
        let name = if paused { "PAUSE" } else { "RESUME" };
        self.ok(Cmd::new(name).arg(queue.as_str()), Target::Queue(queue))
            .await
    }

    async fn now(&self) -> Result<Timestamp, StoreError> {
        decode::now(self.run(Cmd::new("TIME"), Target::Task).await?)
    }

    async fn put_schedule(&self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        let mut cmd = Cmd::new("SCHEDULE")
            .arg("SET")
            .arg(spec.name.as_str())
            .arg(spec.queue.as_str())
            .payload(&spec.payload);
        match &spec.cadence {
            Cadence::Every(d) => cmd = cmd.arg("EVERY").ms(*d),
            Cadence::Cron { expr, tz } => {
                cmd = cmd.arg("CRON").arg(expr);
                if let Some(tz) = tz {
                    cmd = cmd.arg("TZ").arg(tz);
                }
            }
        }
        if let Some(k) = &spec.kind {
            cmd = cmd.arg("KIND").arg(k.as_str());
        }
        if let Some(d) = spec.deadline {
            cmd = cmd.arg("DEADLINE").ms(d);
        }
        decode::schedule(self.run(cmd, Target::Task).await?)
    }

    async fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        let cmd = Cmd::new("SCHEDULE").arg("LIST");
        decode::array(self.run(cmd, Target::Task).await?)?
            .into_iter()
            .map(decode::schedule)
            .collect()
    }

    async fn delete_schedule(&self, name: &Kind) -> Result<(), StoreError> {
        let cmd = Cmd::new("SCHEDULE").arg("DEL").arg(name.as_str());
        self.ok(cmd, Target::Task).await
    }

    async fn fire_schedule(
        &self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        let cmd = Cmd::new("SCHEDULE")
            .arg("FIRE")
            .arg(name.as_str())
            .num(tick.0);
        match self.run(cmd, Target::Task).await? {
            Value::Null => Ok(None),
            v => decode::enqueued(v).map(Some),
        }
    }
}
