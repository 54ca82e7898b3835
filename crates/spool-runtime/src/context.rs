//! What a run sees: its task, its deadline, a cancellation signal, and the
//! heartbeat that pushes the deadline back.
//!
//! The deadline is the lease's expiry (a moment before it, so that the
//! runtime's "deadline exceeded" reaches the store while the lease is still
//! valid), or the handler's own timeout if that comes first. At the deadline
//! the runtime cancels the token and drops the run's future; a handler that
//! hands work to other tasks or threads should pass the token on. The same
//! happens when the lease is lost before the deadline: the task was
//! cancelled, or another worker holds it now (the worker's lease watcher
//! hears of it, or a heartbeat is refused).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use spool_core::outcome::is_null;
use spool_core::schedule::tick_key;
use spool_core::{
    Dependencies, Kind, LeaseToken, QueueName, Store, StoreError, Task, TaskGroup, TaskId, TaskKey,
    TaskResult, Timestamp,
};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::client::Client;
use crate::clock::StoreClock;

/// How long before the lease's expiry a run is cut off: a twentieth of the
/// lease, at most this much.
const REPORT_MARGIN: Duration = Duration::from_millis(100);

/// A running task's view of itself. Cheap to clone.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Shared>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("id", &self.id())
            .field("queue", self.queue())
            .field("kind", self.kind())
            .field("attempt", &self.attempt())
            .field("remaining", &self.remaining())
            .finish_non_exhaustive()
    }
}

struct Shared {
    task: Task,
    token: LeaseToken,
    store: Arc<dyn Store>,
    clock: Arc<StoreClock>,
    /// What `heartbeat` extends the lease by.
    lease: Duration,
    /// The handler's timeout, as an instant: no extension goes past it.
    limit: Option<Instant>,
    lease_state: Mutex<LeaseState>,
    /// Made on first use: most runs never ask for it.
    cancel: OnceLock<CancellationToken>,
    /// Set when the run is cut off; a token made after that is cancelled.
    cut: AtomicBool,
    /// Set when the lease was found lost; `lost_signal` wakes the run.
    lost: AtomicBool,
    lost_signal: Notify,
    /// What the ack leaves for the tasks waiting for this one.
    result: Mutex<Option<TaskResult>>,
}

/// The lease as extensions leave it.
#[derive(Clone, Copy, Debug)]
struct LeaseState {
    /// When the lease runs out, here.
    expires: Instant,
    /// When the run is cut off.
    deadline: Instant,
}

impl LeaseState {
    fn new(expires: Instant, lease: Duration, limit: Option<Instant>) -> Self {
        LeaseState {
            expires,
            deadline: cut_off(expires, lease, limit),
        }
    }
}

/// The instant a run must end by, for a lease expiring at `expires` (local).
fn cut_off(expires: Instant, lease: Duration, limit: Option<Instant>) -> Instant {
    let margin = (lease / 20).min(REPORT_MARGIN);
    let by_lease = expires.checked_sub(margin).unwrap_or(expires);
    match limit {
        Some(l) => l.min(by_lease),
        None => by_lease,
    }
}

impl Context {
    /// `expires` is the lease's expiry here; the timeout counts from
    /// `started`.
    pub(crate) fn new(
        task: Task,
        token: LeaseToken,
        store: Arc<dyn Store>,
        clock: Arc<StoreClock>,
        lease: (Duration, Instant),
        timeout: Option<Duration>,
        started: Instant,
    ) -> Self {
        let (lease, expires) = lease;
        let limit = timeout.map(|t| started + t);
        Context {
            inner: Arc::new(Shared {
                task,
                token,
                store,
                clock,
                lease,
                limit,
                lease_state: Mutex::new(LeaseState::new(expires, lease, limit)),
                cancel: OnceLock::new(),
                cut: AtomicBool::new(false),
                lost: AtomicBool::new(false),
                lost_signal: Notify::new(),
                result: Mutex::new(None),
            }),
        }
    }

    /// The task's id in the store.
    pub fn id(&self) -> TaskId {
        self.inner.task.id
    }

    /// The queue the task was claimed from.
    pub fn queue(&self) -> &QueueName {
        &self.inner.task.queue
    }

    /// The kind that chose this handler.
    pub fn kind(&self) -> &Kind {
        &self.inner.task.kind
    }

    /// 1 on the first run, counting every claim (docs/spec.md §2).
    pub fn attempt(&self) -> u32 {
        self.inner.task.attempt
    }

    /// The task's own limit: when this attempt fails, the task is dead
    /// (a handler's [`crate::RetryPolicy`] may stop sooner).
    pub fn max_attempts(&self) -> u32 {
        self.inner.task.max_attempts
    }

    /// The idempotency key it was enqueued with, if any: a handy key for the
    /// run's own side effects.
    pub fn key(&self) -> Option<&TaskKey> {
        self.inner.task.key.as_ref()
    }

    /// The group it was enqueued in, if any (a customer, an API host).
    pub fn group(&self) -> Option<&TaskGroup> {
        self.inner.task.group.as_ref()
    }

    /// The tasks it waited for and how they ended, when it was enqueued
    /// after others (docs/spec.md §3.2): a batch's callback reads
    /// `completed()` and `failed` here. By the time it runs, every parent
    /// has ended, so `waiting_on` is empty.
    pub fn deps(&self) -> Option<&Dependencies> {
        self.inner.task.deps.as_deref()
    }

    /// What `parent`'s ack left as its result, decoded: `None` when it is
    /// not a parent of this task or left no result (docs/spec.md §3.2).
    pub fn parent_result<T: DeserializeOwned>(
        &self,
        parent: TaskId,
    ) -> Option<Result<T, serde_json::Error>> {
        let results = &self.deps()?.results;
        let at = results.binary_search_by_key(&parent, |(id, _)| *id).ok()?;
        Some(serde_json::from_str(results[at].1.as_str()))
    }

    /// Leaves `value` as this run's result, should it complete: the tasks
    /// waiting for this one read it with [`Context::parent_result`]. The
    /// last call before the handler returns `Ok` counts; a value that
    /// serializes to `null` leaves none. `bad_request` for a value that
    /// does not serialize to JSON of at most
    /// [`MAX_RESULT`](spool_core::outcome::MAX_RESULT) bytes.
    pub fn set_result<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), StoreError> {
        let json = serde_json::to_string(value)
            .map_err(|e| StoreError::bad_request(format!("a result that is not JSON: {e}")))?;
        let result = match is_null(&json) {
            true => None,
            false => Some(TaskResult::from_json(&json)?),
        };
        *self.inner.result.lock().unwrap_or_else(|e| e.into_inner()) = result;
        Ok(())
    }

    /// The result set for the ack, taken.
    pub(crate) fn take_result(&self) -> Option<TaskResult> {
        self.inner
            .result
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// The task as claimed (payload, errors of earlier attempts, ...).
    pub fn task(&self) -> &Task {
        &self.inner.task
    }

    /// The tick this run was fired for, when a schedule enqueued it.
    pub fn scheduled_tick(&self) -> Option<Timestamp> {
        let key = self.key()?.as_str();
        let (name, ms) = key.strip_prefix("sched:")?.rsplit_once(':')?;
        let tick = Timestamp(ms.parse().ok()?);
        let name = Kind::new(name).ok()?;
        (tick_key(&name, tick).as_str() == key).then_some(tick)
    }

    /// When the run will be cut off.
    pub fn deadline(&self) -> std::time::Instant {
        self.deadline_instant().into_std()
    }

    /// How long until the deadline; zero once it has passed.
    pub fn remaining(&self) -> Duration {
        self.deadline_instant()
            .saturating_duration_since(Instant::now())
    }

    /// Cancelled when the run is cut off: its deadline, its lease lost (the
    /// task was cancelled, or another worker holds it now), or a shutdown
    /// that ran out of time. Pass it to work that outlives the run's future.
    pub fn cancellation(&self) -> &CancellationToken {
        let s = &self.inner;
        let token = s.cancel.get_or_init(CancellationToken::new);
        // Paired with `cancel`: one of the two sees the other's write.
        if s.cut.load(Ordering::SeqCst) {
            token.cancel();
        }
        token
    }

    /// Completes when the run is being cut off.
    pub async fn cancelled(&self) {
        self.cancellation().cancelled().await;
    }

    /// Extends the lease by its original length: for long runs that report
    /// progress.
    pub async fn heartbeat(&self) -> Result<(), StoreError> {
        self.extend(self.inner.lease).await
    }

    /// The lease now expires `by` from now; the deadline follows (up to the
    /// handler's timeout, which no extension moves).
    pub async fn extend(&self, by: Duration) -> Result<(), StoreError> {
        let s = &self.inner;
        let task = match s.store.extend(s.task.id, s.token, by).await {
            Ok(task) => task,
            Err(e @ (StoreError::LeaseLost | StoreError::NotFound)) => {
                self.lose_lease();
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        if let Some(lease) = task.lease {
            let expires = s.clock.instant_of(lease.expires_at);
            *s.lease_state.lock().unwrap_or_else(|e| e.into_inner()) =
                LeaseState::new(expires, by, s.limit);
        }
        Ok(())
    }

    /// A client on the same store, to enqueue follow-up work.
    pub fn client(&self) -> Client {
        Client::new(self.inner.store.clone())
    }

    fn lease_state(&self) -> LeaseState {
        *self
            .inner
            .lease_state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn deadline_instant(&self) -> Instant {
        self.lease_state().deadline
    }

    /// When the lease (as last extended) runs out, here.
    pub(crate) fn lease_expiry(&self) -> Instant {
        self.lease_state().expires
    }

    /// Completes at the deadline, following extensions.
    pub(crate) async fn deadline_reached(&self) {
        loop {
            let at = self.deadline_instant();
            tokio::time::sleep_until(at).await;
            if Instant::now() >= self.deadline_instant() {
                return;
            }
        }
    }

    /// The lease this run holds.
    pub(crate) fn token(&self) -> LeaseToken {
        self.inner.token
    }

    /// The lease is lost: cuts the run off.
    pub(crate) fn lose_lease(&self) {
        self.inner.lost.store(true, Ordering::SeqCst);
        self.inner.lost_signal.notify_waiters();
        self.cancel();
    }

    /// Whether the lease was found lost.
    pub(crate) fn is_lease_lost(&self) -> bool {
        self.inner.lost.load(Ordering::SeqCst)
    }

    /// Completes once the lease is found lost.
    pub(crate) async fn lease_lost(&self) {
        let signal = self.inner.lost_signal.notified();
        tokio::pin!(signal);
        // Enabled before the flag is read, so a loss between the two wakes it.
        signal.as_mut().enable();
        if !self.is_lease_lost() {
            signal.await;
        }
    }

    pub(crate) fn cancel(&self) {
        let s = &self.inner;
        s.cut.store(true, Ordering::SeqCst);
        if let Some(token) = s.cancel.get() {
            token.cancel();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cut_off_leaves_a_margin_and_honours_the_timeout() {
        let now = Instant::now();
        let expires = now + Duration::from_secs(30);
        let lease = Duration::from_secs(30);
        assert_eq!(
            cut_off(expires, lease, None),
            expires - Duration::from_millis(100)
        );
        let short = Duration::from_millis(500);
        assert_eq!(
            cut_off(now + short, short, None),
            now + short - Duration::from_millis(25)
        );
        let limit = now + Duration::from_secs(1);
        assert_eq!(cut_off(expires, lease, Some(limit)), limit);
    }
}
