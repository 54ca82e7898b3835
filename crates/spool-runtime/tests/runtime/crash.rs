//! A worker killed mid-task delays its tasks by at most one lease: another
//! worker runs them after the lease expires, as their next attempt. Killed
//! twice over: in-process (its Tokio runtime dropped: no release, no fail),
//! and as a child process (this test binary run again) killed with SIGKILL.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use spool_runtime::{Client, Context, Job, QueueConfig, Worker};

use crate::support::{eventually, remaining, remote};

#[derive(Serialize, Deserialize)]
struct Work {
    n: u32,
}

impl Job for Work {
    const KIND: &'static str = "work";
}

const LEASE: Duration = Duration::from_millis(600);

#[tokio::test]
async fn a_killed_workers_tasks_rerun_after_the_lease() {
    let e = crate::support::Embedded::open();
    let client = Client::new(e.store.clone());
    client
        .enqueue_many((0..3).map(|n| Work { n }))
        .await
        .unwrap();

    // The doomed worker, on its own runtime: its handlers hang.
    let (started_tx, started_rx) = std::sync::mpsc::channel::<u32>();
    let doomed = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let _worker = {
        let _inside = doomed.enter();
        Worker::builder(e.store.clone())
            .id("doomed")
            .queue("work", QueueConfig::new().concurrency(3).lease(LEASE))
            .register(move |_ctx: Context, job: Work| {
                let started = started_tx.clone();
                async move {
                    let _ = started.send(job.n);
                    std::future::pending::<()>().await;
                    Ok(())
                }
            })
            .start()
            .unwrap()
    };
    for _ in 0..3 {
        started_rx.recv_timeout(Duration::from_secs(5)).unwrap();
    }
    let killed = Instant::now();
    doomed.shutdown_background();

    let reruns = Arc::new(Mutex::new(HashMap::new()));
    let log = reruns.clone();
    let survivor = Worker::builder(e.store.clone())
        .id("survivor")
        .register(move |ctx: Context, job: Work| {
            let log = log.clone();
            async move {
                log.lock().unwrap().insert(
                    job.n,
                    (ctx.attempt(), killed.elapsed(), ctx.task().errors.clone()),
                );
                Ok(())
            }
        })
        .start()
        .unwrap();
    eventually(Duration::from_secs(10), "the tasks reran", || async {
        remaining(e.store.as_ref(), "work").await == 0
    })
    .await;
    let reruns = reruns.lock().unwrap().clone();
    assert_eq!(reruns.len(), 3);
    for (attempt, after, errors) in reruns.values() {
        assert_eq!(*attempt, 2, "the crashed run counted as an attempt");
        assert!(
            *after >= LEASE - Duration::from_millis(200),
            "reran after {after:?}"
        );
        assert!(
            *after < LEASE + Duration::from_secs(2),
            "reran after {after:?}"
        );
        assert_eq!(
            errors.last().map(|e| e.message.as_str()),
            Some("lease expired")
        );
    }
    assert!(survivor.shutdown(Duration::from_secs(5)).await.finished);
}

/// Set in the child process: the server it works for.
const CHILD_URL: &str = "SPOOL_TEST_CHILD_URL";

/// The body of the child process of the next test; does nothing in a
/// normal run. Its handlers say which task they started, then hang.
#[tokio::test]
async fn child_worker_process() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        return;
    };
    let store: Arc<dyn spool_core::Store> =
        Arc::new(spool_client::RemoteStore::new(url, None).unwrap());
    let _worker = Worker::builder(store)
        .id("child")
        .queue("work", QueueConfig::new().concurrency(3).lease(LEASE))
        .register(|_ctx: Context, job: Work| async move {
            println!("started {}", job.n);
            std::future::pending::<()>().await;
            Ok(())
        })
        .start()
        .unwrap();
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn a_worker_process_killed_with_sigkill_is_replaced_after_the_lease() {
    use tokio::io::{AsyncBufReadExt, BufReader};

    let server = crate::support::Server::builder().start().await;
    let store = remote(&server);
    Client::new(store.clone())
        .enqueue_many((0..3).map(|n| Work { n }))
        .await
        .unwrap();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash::child_worker_process", "--nocapture"])
        .env(CHILD_URL, &server.base)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut started = 0;
    while started < 3 {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("the child started its runs")
            .unwrap()
            .expect("the child is alive");
        started += usize::from(line.starts_with("started "));
    }
    child.start_kill().unwrap(); // SIGKILL
    child.wait().await.unwrap();
    let killed = Instant::now();

    let attempts = Arc::new(Mutex::new(Vec::new()));
    let log = attempts.clone();
    let survivor = Worker::builder(store.clone())
        .register(move |ctx: Context, _job: Work| {
            let log = log.clone();
            async move {
                log.lock().unwrap().push((ctx.attempt(), killed.elapsed()));
                Ok(())
            }
        })
        .start()
        .unwrap();
    eventually(Duration::from_secs(10), "the tasks reran", || async {
        remaining(store.as_ref(), "work").await == 0
    })
    .await;
    let attempts = attempts.lock().unwrap().clone();
    assert_eq!(attempts.len(), 3);
    for (attempt, after) in attempts {
        assert_eq!(attempt, 2);
        assert!(
            after < LEASE + Duration::from_secs(2),
            "reran after {after:?}"
        );
    }
    assert!(survivor.shutdown(Duration::from_secs(5)).await.finished);
}
