//! Stores under test and small helpers.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use spool_client::RemoteStore;
use spool_core::{QueueName, QueueSettings, Store, Task};
pub(crate) use spool_testkit::server::{Embedded, Server};

/// A `RemoteStore` talking to `server` over HTTP.
pub(crate) fn remote(server: &Server) -> Arc<dyn Store> {
    Arc::new(RemoteStore::new(&server.base, None).unwrap())
}

/// Creates `queue` with fast retries (10 ms doubling to 50 ms).
pub(crate) async fn fast_queue(store: &dyn Store, queue: &str, max_attempts: u32) {
    let settings = QueueSettings {
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        max_attempts,
        ..QueueSettings::default()
    };
    store.put_queue(&q(queue), settings.into()).await.unwrap();
}

pub(crate) fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

/// Polls `check` every 10 ms until it is true; fails after `limit`.
pub(crate) async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
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
pub(crate) async fn remaining(store: &dyn Store, queue: &str) -> u64 {
    store
        .stats()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.name.as_str() == queue)
        .map_or(0, |s| s.counts.total())
}

/// Every task of the queue, in any state.
pub(crate) async fn tasks(store: &dyn Store, queue: &str) -> Vec<Task> {
    let req = spool_core::ListRequest {
        limit: 1000,
        ..spool_core::ListRequest::new(q(queue))
    };
    store.list(req).await.unwrap().tasks
}

/// The p-th percentile (0..=100) of `values`, which it sorts.
pub(crate) fn percentile(values: &mut [i64], p: usize) -> i64 {
    values.sort_unstable();
    if values.is_empty() {
        return 0;
    }
    let i = (values.len() * p / 100).min(values.len() - 1);
    values[i]
}
