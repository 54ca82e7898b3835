//! What each handler outcome does to the task: ok acks, an error retries
//! with backoff, a permanent error is dead at once and runs `on_dead`, a
//! snooze does not count the attempt, a panic is a failure, a payload that
//! does not decode is dead, a retry policy caps the attempts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool_core::{NewTask, Payload, StoreError, Task, TaskState};
use spool_runtime::{
    Client, Context, EnqueueOptions, Handler, Job, RetryPolicy, TaskError, Worker,
};

use crate::support::{eventually, fast_queue, q, remaining, tasks};

const QUEUE: &str = "outcomes";

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Act {
    Succeed,
    FailTwice,
    Permanent,
    Panic,
    SnoozeOnce,
    AlwaysFail,
}

#[derive(Serialize, Deserialize)]
struct Step {
    act: Act,
}

impl Job for Step {
    const KIND: &'static str = "step";
    const QUEUE: &'static str = QUEUE;
}

/// A handler with state, a retry policy and an `on_dead` step.
#[derive(Default, Clone)]
struct Stepper {
    /// Attempts seen per action.
    seen: Arc<Mutex<HashMap<Act, Vec<u32>>>>,
    dead: Arc<Mutex<Vec<(Act, Task)>>>,
}

impl Handler<Step> for Stepper {
    async fn run(&self, ctx: Context, step: Step) -> Result<(), TaskError> {
        let runs = {
            let mut seen = self.seen.lock().unwrap();
            let v = seen.entry(step.act).or_default();
            v.push(ctx.attempt());
            v.len()
        };
        match step.act {
            Act::Succeed => Ok(()),
            Act::FailTwice if runs <= 2 => Err(std::io::Error::other("flaky").into()),
            Act::FailTwice => Ok(()),
            Act::Permanent => Err(TaskError::permanent("no such mailbox")),
            Act::Panic if runs == 1 => panic!("boom"),
            Act::Panic => Ok(()),
            Act::SnoozeOnce if runs == 1 => Err(TaskError::snooze(Duration::from_millis(50))),
            Act::SnoozeOnce => Ok(()),
            Act::AlwaysFail => Err(TaskError::retry("still failing")),
        }
    }

    fn retry(&self) -> RetryPolicy {
        RetryPolicy::default()
            .fixed(Duration::from_millis(20))
            .max_attempts(3)
    }

    async fn on_dead(&self, task: Task, step: Step) {
        self.dead.lock().unwrap().push((step.act, task));
    }
}

#[tokio::test]
async fn each_outcome_does_what_it_says() {
    let e = crate::support::Embedded::open();
    fast_queue(e.store.as_ref(), QUEUE, 20).await;
    let client = Client::new(e.store.clone());
    let stepper = Stepper::default();
    let worker = Worker::builder(e.store.clone())
        .register(stepper.clone())
        .start()
        .unwrap();
    let acts = [
        Act::Succeed,
        Act::FailTwice,
        Act::Permanent,
        Act::Panic,
        Act::SnoozeOnce,
        Act::AlwaysFail,
    ];
    let mut ids = HashMap::new();
    for act in acts {
        ids.insert(act, client.enqueue(Step { act }).await.unwrap().id);
    }
    // Everything but the two that end dead completes.
    eventually(Duration::from_secs(10), "only the dead remain", || async {
        remaining(e.store.as_ref(), QUEUE).await == 2 && stepper.dead.lock().unwrap().len() == 2
    })
    .await;
    let left = tasks(e.store.as_ref(), QUEUE).await;
    assert!(left.iter().all(|t| t.state == TaskState::Dead));

    let seen = stepper.seen.lock().unwrap().clone();
    assert_eq!(seen[&Act::Succeed], [1]);
    assert_eq!(seen[&Act::FailTwice], [1, 2, 3]);
    assert_eq!(seen[&Act::Permanent], [1], "dead at once");
    assert_eq!(seen[&Act::Panic], [1, 2], "a panic is a failure, retried");
    assert_eq!(seen[&Act::SnoozeOnce], [1, 1], "a snooze does not count");
    assert_eq!(seen[&Act::AlwaysFail], [1, 2, 3], "the policy caps at 3");

    let dead = stepper.dead.lock().unwrap().clone();
    let permanent = &dead.iter().find(|(a, _)| *a == Act::Permanent).unwrap().1;
    assert_eq!(permanent.id, ids[&Act::Permanent]);
    assert_eq!(permanent.errors.last().unwrap().message, "no such mailbox");
    let always = &dead.iter().find(|(a, _)| *a == Act::AlwaysFail).unwrap().1;
    assert_eq!(always.attempt, 3);
    assert_eq!(always.errors.len(), 3);
    assert!(worker.shutdown(Duration::from_secs(5)).await.finished);
}

#[derive(Serialize, Deserialize)]
struct Typed {
    n: u64,
}

impl Job for Typed {
    const KIND: &'static str = "typed";
}

#[tokio::test]
async fn functions_handle_typed_payloads_and_bad_payloads_die() {
    let e = crate::support::Embedded::open();
    let client = Client::new(e.store.clone());
    let sum = Arc::new(Mutex::new(0u64));
    let total = sum.clone();
    let worker = Worker::builder(e.store.clone())
        .register(move |_ctx: Context, job: Typed| {
            let total = total.clone();
            async move {
                *total.lock().unwrap() += job.n;
                Ok(())
            }
        })
        .start()
        .unwrap();
    client.enqueue(Typed { n: 40 }).await.unwrap();
    client
        .enqueue_with(
            Typed { n: 2 },
            EnqueueOptions::new()
                .delay(Duration::from_millis(50))
                .priority(-1)
                .key("two")
                .max_attempts(3),
        )
        .await
        .unwrap();
    let dup = client
        .enqueue_with(Typed { n: 1000 }, EnqueueOptions::new().key("two"))
        .await
        .unwrap();
    assert!(dup.duplicate);
    // A payload that is not a `Typed` is dead at once, with the reason.
    let bad = e
        .store
        .enqueue(
            &q("typed"),
            vec![NewTask::new(Payload::json(&b"{\"n\":\"x\"}"[..]))],
        )
        .await
        .unwrap()[0]
        .id;
    eventually(Duration::from_secs(5), "both ran", || async {
        *sum.lock().unwrap() == 42
    })
    .await;
    eventually(Duration::from_secs(5), "the bad one is dead", || async {
        matches!(e.store.get(bad.into()).await, Ok(t) if t.state == TaskState::Dead)
    })
    .await;
    let t = e.store.get(bad.into()).await.unwrap();
    assert_eq!(t.attempt, 1);
    assert!(t.errors[0]
        .message
        .contains("cannot decode the payload as typed"));
    assert_eq!(worker.shutdown(Duration::from_secs(1)).await.released, 0);
}

#[tokio::test]
async fn a_kind_without_a_handler_fails_and_is_retried() {
    let e = crate::support::Embedded::open();
    fast_queue(e.store.as_ref(), "typed", 2).await;
    let worker = Worker::builder(e.store.clone())
        .register(|_ctx: Context, _job: Typed| async { Ok(()) })
        .start()
        .unwrap();
    let id = e
        .store
        .enqueue(
            &q("typed"),
            vec![NewTask::new(Payload::json(&b"{}"[..])).kind("other".parse().unwrap())],
        )
        .await
        .unwrap()[0]
        .id;
    eventually(Duration::from_secs(5), "it is dead", || async {
        matches!(e.store.get(id.into()).await, Ok(t) if t.state == TaskState::Dead)
    })
    .await;
    let t = e.store.get(id.into()).await.unwrap();
    assert_eq!(t.attempt, 2);
    assert!(t.errors[0].message.contains("no handler for kind other"));
    drop(worker);
    assert!(matches!(
        e.store.get(spool_core::TaskId(9999).into()).await,
        Err(StoreError::NotFound)
    ));
}
