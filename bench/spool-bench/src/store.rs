//! Spool's PostgreSQL store as the benchmarks that drive it directly use
//! it: one queue whose leases outlast any run, so that no lease runs out
//! and no task is handed out twice while a benchmark measures, and every
//! claimed task acked.

use std::sync::Arc;
use std::time::Duration;

use spool_core::{QueueName, QueueSettings, Store, Task};
use spool_postgres::{PgConfig, PgStore};

/// Leases of the benchmark's queue: longer than any run.
const LEASE: Duration = Duration::from_secs(600);

/// Connects to [`database_url`](crate::db::database_url) with `config`
/// and puts the queue `queue`.
pub async fn open(config: PgConfig, queue: &str) -> (Arc<PgStore>, QueueName) {
    let store = Arc::new(
        PgStore::connect(&crate::db::database_url(), config)
            .await
            .unwrap(),
    );
    let q = QueueName::new(queue).unwrap();
    let settings = QueueSettings {
        lease: LEASE,
        ..QueueSettings::default()
    };
    store.put_queue(&q, settings.into()).await.unwrap();
    (store, q)
}

/// Acks every task of a claim's answer in one `ack_many`; each must still
/// hold its lease, as each does when leases outlast the run.
pub async fn ack_claimed(store: &PgStore, claimed: &[Task]) {
    let acks = claimed
        .iter()
        .map(|t| (t.id, t.lease.as_ref().unwrap().token))
        .collect();
    let results = store.ack_many(acks).await.unwrap();
    assert!(results.iter().all(|r| r.is_ok()));
}
