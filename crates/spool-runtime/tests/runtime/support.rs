//! Stores under test and small helpers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use spool_client::RemoteStore;
use spool_core::{QueueName, QueueSettings, Store, Task};
use spool_engine::{Engine, EngineConfig};
use spool_server::{AppState, ServerConfig};
use tokio::sync::oneshot;

/// An engine in a temporary directory, removed on drop.
pub struct Embedded {
    pub store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
}

pub fn embedded() -> Embedded {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(EngineConfig::new(dir.path())).unwrap();
    Embedded {
        store: Arc::new(engine),
        _dir: dir,
    }
}

/// A real server on port 0 over a fresh engine; stops on drop.
pub struct Server {
    pub url: String,
    _stop: oneshot::Sender<()>,
    _store: Embedded,
}

pub async fn server() -> Server {
    let store = embedded();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let state = AppState::new(store.store.clone());
    tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        spool_server::run(listener, state, ServerConfig::default(), shutdown)
            .await
            .unwrap();
    });
    Server {
        url,
        _stop: stop,
        _store: store,
    }
}

impl Server {
    pub fn remote(&self) -> Arc<dyn Store> {
        Arc::new(RemoteStore::new(&self.url, None).unwrap())
    }
}

/// Creates `queue` with fast retries (10 ms doubling to 50 ms).
pub async fn fast_queue(store: &dyn Store, queue: &str, max_attempts: u32) {
    let settings = QueueSettings {
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        max_attempts,
        ..QueueSettings::default()
    };
    store.put_queue(&q(queue), settings.into()).await.unwrap();
}

pub fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// Polls `check` every 10 ms until it is true; fails after `limit`.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let until = tokio::time::Instant::now() + limit;
    while !check().await {
        assert!(
            tokio::time::Instant::now() < until,
            "timed out after {limit:?} waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// How many tasks the queue still holds, in any state.
pub async fn remaining(store: &dyn Store, queue: &str) -> u64 {
    store
        .stats()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.name.as_str() == queue)
        .map_or(0, |s| s.counts.total())
}

/// Every task of the queue, in any state.
pub async fn tasks(store: &dyn Store, queue: &str) -> Vec<Task> {
    let req = spool_core::ListRequest {
        limit: 1000,
        ..spool_core::ListRequest::new(q(queue))
    };
    store.list(req).await.unwrap().tasks
}

/// The p-th percentile (0..=100) of `values`, which it sorts.
pub fn percentile(values: &mut [i64], p: usize) -> i64 {
    values.sort_unstable();
    if values.is_empty() {
        return 0;
    }
    let i = (values.len() * p / 100).min(values.len() - 1);
    values[i]
}
