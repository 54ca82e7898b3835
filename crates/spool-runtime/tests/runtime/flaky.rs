//! A handler that fails with probability 0.3, on two workers sharing one
//! store: every task finishes exactly once and no task ever runs twice at
//! the same time.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use spool_runtime::{Client, Context, Job, QueueConfig, TaskError, Worker};

use crate::support::{eventually, fast_queue, remaining};

#[derive(Serialize, Deserialize)]
struct Flaky {
    n: u32,
}

impl Job for Flaky {
    const KIND: &'static str = "flaky";
}

#[derive(Default)]
struct Log {
    running: HashSet<u64>,
    overlaps: u32,
    done: HashMap<u32, u32>,
    failures: u32,
}

const TASKS: u32 = 400;

#[tokio::test]
async fn every_task_finishes_once_and_never_runs_twice_at_once() {
    let e = crate::support::Embedded::open();
    // 100 attempts: 0.3^100, nothing dies.
    fast_queue(e.store.as_ref(), "flaky", 100).await;
    let log = Arc::new(Mutex::new(Log::default()));
    let handler = {
        let log = log.clone();
        move |ctx: Context, job: Flaky| {
            let log = log.clone();
            async move {
                let id = ctx.id().0;
                if !log.lock().unwrap().running.insert(id) {
                    log.lock().unwrap().overlaps += 1;
                }
                let (pause, fail) = {
                    let mut rng = rand::thread_rng();
                    (rng.gen_range(0..3u64), rng.gen_bool(0.3))
                };
                tokio::time::sleep(Duration::from_millis(pause)).await;
                let mut l = log.lock().unwrap();
                l.running.remove(&id);
                if fail {
                    l.failures += 1;
                    return Err(TaskError::retry("unlucky"));
                }
                *l.done.entry(job.n).or_default() += 1;
                Ok(())
            }
        }
    };
    let config = QueueConfig::new().concurrency(16);
    let workers: Vec<Worker> = (0..2)
        .map(|i| {
            Worker::builder(e.store.clone())
                .id(format!("flaky-{i}"))
                .queue("flaky", config.clone())
                .register(handler.clone())
                .start()
                .unwrap()
        })
        .collect();
    Client::new(e.store.clone())
        .enqueue_many((0..TASKS).map(|n| Flaky { n }))
        .await
        .unwrap();
    eventually(Duration::from_secs(30), "the queue is empty", || async {
        remaining(e.store.as_ref(), "flaky").await == 0
    })
    .await;
    {
        let l = log.lock().unwrap();
        assert_eq!(l.overlaps, 0, "a task ran twice at once");
        assert_eq!(l.done.len(), TASKS as usize, "every task finished");
        assert!(l.done.values().all(|&c| c == 1), "no task finished twice");
        assert!(l.failures > TASKS / 10, "failures: {}", l.failures);
    }
    for w in workers {
        assert!(w.shutdown(Duration::from_secs(5)).await.finished);
    }
}
