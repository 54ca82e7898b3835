//! Batches: jobs of one queue, of any types, enqueued in one atomic
//! request, where a task may wait for tasks before it in the same batch —
//! a workflow, or a batch of members and the callback that waits for them
//! all (docs/spec.md §3.2).
//!
//! Positions are what the stores take (`Parent::InBatch`, the HTTP API's
//! `after_batch`, RESP's `AFTERBATCH`); the builder checks them before
//! anything is sent, so a bad batch fails whole, with the position at
//! fault, and enqueues nothing.

use std::sync::Arc;

use spool_core::{deps, EnqueueOutcome, NewTask, QueueName, Store};

use crate::client::{Client, EnqueueOptions};
use crate::error::EnqueueError;
use crate::job::{self, Job};

/// Jobs enqueued together, all or none, in one request: a workflow whose
/// tasks wait for one another ([`EnqueueOptions::after_in_batch`]), or a
/// batch of members and its [callback](Batch::callback), which runs once
/// when every member has ended. Made by [`Client::batch`].
///
/// Tasks take positions 0, 1, 2, ... in the order added ([`Batch::len`]
/// is the next one's). Every job of a batch goes to one queue, its first
/// job's `QUEUE`; kinds may differ. At most 10,000 tasks in all, the
/// callback included.
///
/// A task that cannot be added (a payload that does not encode, a bad
/// name, a position that is not before its own, another queue) makes
/// [`Batch::enqueue`] fail with that error, for the first such task, and
/// send nothing; the tasks added after it are not looked at.
///
/// The callback's handler reads how the batch went from
/// [`Context::deps`](crate::Context::deps) — `after` lists the members
/// in the order added, `completed()` and `failed` how they ended — and
/// what each member left with
/// [`Context::set_result`](crate::Context::set_result) with
/// [`Context::parent_result`](crate::Context::parent_result):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use serde::{Deserialize, Serialize};
/// use spool_runtime::{Client, Context, EnqueueOptions, Job, TaskError, Worker};
///
/// #[derive(Serialize, Deserialize)]
/// struct Resize {
///     image: String,
/// }
///
/// impl Job for Resize {
///     const KIND: &'static str = "resize";
///     const QUEUE: &'static str = "images";
/// }
///
/// /// The callback: in the members' queue.
/// #[derive(Serialize, Deserialize)]
/// struct AlbumReady {
///     album: String,
/// }
///
/// impl Job for AlbumReady {
///     const KIND: &'static str = "album_ready";
///     const QUEUE: &'static str = "images";
/// }
///
/// async fn resize(ctx: Context, job: Resize) -> Result<(), TaskError> {
///     ctx.set_result(&job.image.len())?; // what the callback reads
///     Ok(())
/// }
///
/// async fn album_ready(ctx: Context, job: AlbumReady) -> Result<(), TaskError> {
///     let Some(batch) = ctx.deps() else {
///         return Ok(()); // a callback added to an empty batch waits for nothing
///     };
///     let sizes = batch
///         .after
///         .iter()
///         .filter_map(|member| ctx.parent_result::<usize>(*member))
///         .collect::<Result<Vec<_>, _>>()?;
///     println!(
///         "{}: {} resized ({sizes:?}), {} failed",
///         job.album,
///         batch.completed(),
///         batch.failed
///     );
///     Ok(())
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let dir = tempfile::tempdir()?;
/// # let config = spool_engine::EngineConfig::new(dir.path());
/// # let store: Arc<dyn spool_core::Store> = Arc::new(spool_engine::Engine::open(config)?);
/// let client = Client::new(store.clone());
/// let mut batch = client.batch();
/// for image in ["beach.png", "dunes.png"] {
///     batch = batch.add(Resize { image: image.into() }, EnqueueOptions::new());
/// }
/// let tasks = batch
///     .callback(AlbumReady { album: "holidays".into() }, EnqueueOptions::new())
///     .enqueue()
///     .await?;
/// assert_eq!(tasks.len(), 3); // the members, then the callback
///
/// let worker = Worker::builder(store)
///     .register(resize)
///     .register(album_ready)
///     .start()?;
/// # while client.store().stats().await?.iter().any(|q| q.counts.total() > 0) {
/// #     tokio::time::sleep(Duration::from_millis(5)).await;
/// # }
/// worker.shutdown(Duration::from_secs(30)).await;
/// # Ok(())
/// # }
/// ```
#[must_use = "a batch enqueues nothing until `enqueue` is awaited"]
pub struct Batch {
    store: Arc<dyn Store>,
    /// The first job's queue, which every other must name.
    queue: Option<QueueName>,
    tasks: Vec<NewTask>,
    /// The first task that could not be added: what `enqueue` answers.
    error: Option<EnqueueError>,
}

impl std::fmt::Debug for Batch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("queue", &self.queue)
            .field("len", &self.tasks.len())
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// An empty [`Batch`] to fill and enqueue in one atomic request.
    pub fn batch(&self) -> Batch {
        Batch {
            store: self.store().clone(),
            queue: None,
            tasks: Vec::new(),
            error: None,
        }
    }
}

impl Batch {
    /// Adds `job` at the next position ([`Batch::len`]), with its delay,
    /// key, group, parents ... A key already live in the queue makes it a
    /// duplicate, as in [`Client::enqueue_with`]: tasks that name its
    /// position wait for the task that holds the key.
    pub fn add<J: Job>(mut self, job: J, options: EnqueueOptions) -> Self {
        if self.error.is_none() {
            if let Err(e) = self.push(&job, options) {
                self.error = Some(e);
            }
        }
        self
    }

    /// Adds the batch's callback: `job`, waiting for every task added
    /// before it (an earlier callback included) and for the parents
    /// `options` names. Its policy is `run` unless `options` sets one: it
    /// runs once, when the last of them has completed or died, and its
    /// handler reads how they ended (docs/spec.md §3.2).
    /// [`ParentFailure::Cancel`](spool_core::ParentFailure::Cancel) makes it
    /// a callback on success, cancelled as soon as one of them fails.
    /// Added to an empty batch, it waits for nothing and runs at once.
    pub fn callback<J: Job>(self, job: J, options: EnqueueOptions) -> Self {
        let position = self.tasks.len();
        self.add(job, options.after_all_before(position))
    }

    /// How many tasks the batch holds: the position of the next one.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether the batch holds no task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Enqueues the batch atomically, all or none, in one request to the
    /// store; durable when this returns. Answers each task's outcome in
    /// the order added; an empty batch sends nothing and answers none.
    pub async fn enqueue(self) -> Result<Vec<EnqueueOutcome>, EnqueueError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let Some(queue) = self.queue else {
            return Ok(Vec::new());
        };
        Ok(self.store.enqueue(&queue, self.tasks).await?)
    }

    fn push<J: Job>(&mut self, job: &J, options: EnqueueOptions) -> Result<(), EnqueueError> {
        let position = self.tasks.len();
        let (queue, kind) = job::names::<J>()?;
        if let Some(first) = &self.queue {
            if *first != queue {
                return Err(EnqueueError::Batch {
                    position,
                    reason: format!(
                        "its job goes to queue {queue} and the batch to queue {first}: \
                         one batch is one enqueue into one queue"
                    ),
                });
            }
        }
        let task = options.into_task(job, &kind)?;
        check_positions(&task, position)?;
        self.queue.get_or_insert(queue);
        self.tasks.push(task);
        Ok(())
    }
}

/// Refuses a position that is not before `position`, the task's own.
fn check_positions(task: &NewTask, position: usize) -> Result<(), EnqueueError> {
    match deps::position_not_before(task, position) {
        Some(at) => Err(EnqueueError::Batch {
            position,
            reason: format!(
                "it waits for task {at} of the batch: a task may only wait for tasks \
                 added before it"
            ),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde::{Deserialize, Serialize};
    use spool_core::{Parent, ParentFailure, TaskId};

    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Member;

    impl Job for Member {
        const KIND: &'static str = "member";
        const QUEUE: &'static str = "batch";
    }

    #[derive(Serialize, Deserialize)]
    struct Done;

    impl Job for Done {
        const KIND: &'static str = "done";
        const QUEUE: &'static str = "batch";
    }

    #[derive(Serialize, Deserialize)]
    struct Elsewhere;

    impl Job for Elsewhere {
        const KIND: &'static str = "elsewhere";
    }

    /// An empty batch on an engine in a temporary directory (removed
    /// with it): these batches are built, not enqueued.
    fn batch() -> (Batch, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let engine = spool_engine::Engine::open(spool_engine::EngineConfig::new(dir.path()));
        (Client::new(Arc::new(engine.unwrap())).batch(), dir)
    }

    #[test]
    fn a_callback_waits_for_every_task_before_it_and_runs_whatever_they_did() {
        let (b, _dir) = batch();
        let b = b
            .add(Member, EnqueueOptions::new())
            .add(Member, EnqueueOptions::new().after_in_batch(0))
            .callback(Done, EnqueueOptions::new().after(TaskId(7)));
        assert!(b.error.is_none());
        let cb = &b.tasks[2];
        assert_eq!(
            cb.after,
            [
                Parent::Task(TaskId(7)),
                Parent::InBatch(0),
                Parent::InBatch(1)
            ]
        );
        assert_eq!(cb.if_parent_fails, ParentFailure::Run);
        assert_eq!(b.tasks[1].after, [Parent::InBatch(0)]);
        assert_eq!(b.tasks[1].if_parent_fails, ParentFailure::Cancel);
        assert_eq!(b.queue.as_ref().map(QueueName::as_str), Some("batch"));

        let on_success = batch().0.add(Member, EnqueueOptions::new()).callback(
            Done,
            EnqueueOptions::new().if_parent_fails(ParentFailure::Cancel),
        );
        assert_eq!(on_success.tasks[1].if_parent_fails, ParentFailure::Cancel);
    }

    #[test]
    fn a_position_not_before_the_task_or_another_queue_fails_the_batch() {
        let (b, _dir) = batch();
        let b = b
            .add(Member, EnqueueOptions::new())
            .add(Member, EnqueueOptions::new().after_in_batch(1))
            .add(Member, EnqueueOptions::new().after_in_batch(usize::MAX));
        assert_eq!(b.len(), 1, "nothing is added past the first bad task");
        let e = b.error.unwrap();
        assert!(matches!(e, EnqueueError::Batch { position: 1, .. }));
        assert_eq!(
            e.to_string(),
            "task 1 of the batch: it waits for task 1 of the batch: a task may only wait \
             for tasks added before it"
        );
        let far = batch()
            .0
            .add(Member, EnqueueOptions::new().after_in_batch(usize::MAX));
        assert!(matches!(
            far.error,
            Some(EnqueueError::Batch { position: 0, .. })
        ));
        let mixed = batch()
            .0
            .add(Member, EnqueueOptions::new())
            .add(Elsewhere, EnqueueOptions::new());
        let e = mixed.error.unwrap().to_string();
        assert!(e.contains("queue elsewhere"), "{e}");
    }
}
