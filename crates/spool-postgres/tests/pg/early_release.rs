//! Claims that hold a lock the other claims of their queue wait for (a
//! grouped or limited queue's row, the global acquire lock) release it
//! before their commit is flushed, and answer only once it is (README.md,
//! "Early lock release"; docs/spec.md §3: an answer means the change is on
//! disk).

use std::time::Duration;

use spool_core::{ClaimRequest, NewTask, Payload, QueueName, QueueSettings, Store, TaskGroup};
use spool_postgres::{ClaimStrategy, PgConfig, PgStore};

use crate::common::{admin, connect, fresh_schema, test_config, DropSchema};

/// By the time a grouped claim answers, the commit record of the
/// transaction that leased its task is in the flushed WAL.
#[tokio::test]
async fn a_grouped_claim_answers_once_its_commit_is_flushed() {
    let (store, schema, _drop) = unturning(ClaimStrategy::SkipLocked).await;
    let q = QueueName::new("grouped").unwrap();
    let settings = QueueSettings {
        group_concurrency: Some(10),
        ..QueueSettings::default()
    };
    store.put_queue(&q, settings.into()).await.unwrap();
    let task = |g: &str| {
        NewTask::new(Payload::binary(g.as_bytes().to_vec())).group(TaskGroup::new(g).unwrap())
    };
    store.enqueue(&q, vec![task("a"), task("b")]).await.unwrap();
    // The first claim teaches the process that the queue has groups.
    let first = store
        .claim(ClaimRequest::new(q.clone(), "w"))
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    claim_is_flushed_when_answered(&store, &schema, &q).await;
}

/// The same for a claim under the global acquire lock.
#[tokio::test]
async fn a_claim_under_the_global_lock_answers_once_its_commit_is_flushed() {
    let (store, schema, _drop) = unturning(ClaimStrategy::GlobalLock).await;
    let q = QueueName::new("strict").unwrap();
    let one = NewTask::new(Payload::binary(vec![1]));
    store.enqueue(&q, vec![one]).await.unwrap();
    claim_is_flushed_when_answered(&store, &schema, &q).await;
}

/// A store in a schema of its own whose ring does not turn during the
/// case: a turn would move the task, and its row would then carry the
/// rotation's transaction, not the claim's.
async fn unturning(claim: ClaimStrategy) -> (PgStore, String, DropSchema) {
    let schema = fresh_schema();
    let drop = DropSchema(schema.clone());
    let config = PgConfig {
        claim,
        rotate_interval: Duration::from_secs(3_600),
        rotate_size: u64::MAX,
        ..test_config(&schema)
    };
    (connect(config).await, schema, drop)
}

/// Claims one task of `q` and reads the WAL back with `pg_walinspect`:
/// between the WAL position before the claim and the flush position read
/// as it answered lies the commit of the transaction that leased the task
/// (its row's `xmin`). Were the claim answered before its flush, that
/// flush would come later, from the WAL writer or another session's
/// commit.
async fn claim_is_flushed_when_answered(store: &PgStore, schema: &str, q: &QueueName) {
    let db = admin().await;
    db.batch_execute("CREATE EXTENSION IF NOT EXISTS pg_walinspect")
        .await
        .unwrap();
    let lsn = |sql: &'static str| {
        let db = &db;
        async move { db.query_one(sql, &[]).await.unwrap().get::<_, String>(0) }
    };
    let before = lsn("SELECT pg_current_wal_insert_lsn()::text").await;
    let claimed = store
        .claim(ClaimRequest::new(q.clone(), "w"))
        .await
        .unwrap();
    let flushed = lsn("SELECT pg_current_wal_flush_lsn()::text").await;
    assert_eq!(claimed.len(), 1);

    let commits: i64 = db
        .query_one(
            &format!(
                "SELECT count(*) FROM pg_get_wal_records_info($1::text::pg_lsn, $2::text::pg_lsn) w \
                 WHERE w.record_type = 'COMMIT' AND w.end_lsn <= $2::text::pg_lsn \
                   AND w.xid = (SELECT xmin FROM \"{schema}\".tasks WHERE id = $3)"
            ),
            &[&before, &flushed, &(claimed[0].id.0 as i64)],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(
        commits, 1,
        "the claim's commit ({before}..{flushed}) should be flushed when it answers"
    );
}
