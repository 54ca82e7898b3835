//! Schema creation and migration: concurrent starters, versions, refusals.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{connect, database_url, fresh_schema, test_config, DropSchema};
use spool_postgres::{PgConfig, PgStore};
use tokio_postgres::{Client, NoTls};

async fn client() -> Client {
    let (client, connection) = tokio_postgres::connect(&database_url(), NoTls)
        .await
        .expect("a connection to the test database");
    tokio::spawn(connection);
    client
}

/// (version, times applied) for every recorded migration.
async fn versions(schema: &str) -> Vec<(i32, i64)> {
    let sql = format!(
        "SELECT version, count(*) FROM \"{schema}\".migrations GROUP BY version ORDER BY version"
    );
    client()
        .await
        .query(&sql, &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_starters_migrate_once() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let starters: Vec<_> = (0..8)
        .map(|_| {
            let config = PgConfig {
                pool_size: 1,
                ..test_config(&schema)
            };
            tokio::spawn(connect(config))
        })
        .collect();
    let mut stores = Vec::new();
    for s in starters {
        stores.push(s.await.expect("every starter connects"));
    }
    assert_eq!(
        versions(&schema).await,
        vec![(1, 1), (2, 1), (3, 1), (4, 1), (5, 1)]
    );

    // Every starter sees a working schema.
    for store in &stores {
        spool_core::Store::now(store).await.unwrap();
    }
    // A later start finds nothing to do.
    drop(stores);
    connect(test_config(&schema)).await;
    assert_eq!(
        versions(&schema).await,
        vec![(1, 1), (2, 1), (3, 1), (4, 1), (5, 1)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_from_a_newer_build_is_refused() {
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    drop(connect(test_config(&schema)).await);
    let sql = format!("INSERT INTO \"{schema}\".migrations (version, name) VALUES (999, 'future')");
    client().await.batch_execute(&sql).await.unwrap();
    let err = PgStore::connect(&database_url(), test_config(&schema))
        .await
        .unwrap_err();
    assert_eq!(err.code(), "schema_too_new", "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_schema_names_are_refused_before_connecting() {
    for bad in ["", "Spool", "a-b", "x\"; DROP TABLE y; --"] {
        let config = PgConfig {
            schema: bad.to_string(),
            ..PgConfig::default()
        };
        let err = PgStore::connect("postgres://nobody@127.0.0.1:1/none", config)
            .await
            .unwrap_err();
        assert_eq!(err.code(), "config", "{bad:?}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_a_connect_error() {
    let config = PgConfig {
        connect_timeout: Duration::from_secs(2),
        ..test_config(&fresh_schema())
    };
    let err = PgStore::connect("postgres://postgres@127.0.0.1:1/test", config)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "connect", "{err}");
}

/// Tasks queued on a schema at version 4 (before the stats cache and the
/// index of retried tasks) are all claimable after migrating to 5, with
/// their attempts and priorities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_queued_before_migration_5_are_claimed_after_it() {
    use spool_core::{ClaimRequest, NewTask, Payload, QueueName, Store};
    let schema = fresh_schema();
    let _drop = DropSchema(schema.clone());
    let q = QueueName::new("kept").unwrap();
    let old = connect(test_config(&schema)).await;
    let tasks = (0..20u8)
        .map(|i| NewTask::new(Payload::binary(vec![i])).priority(i16::from(i % 3)))
        .collect();
    let ids: Vec<_> = old
        .enqueue(&q, tasks)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.id)
        .collect();
    drop(old);
    // Back to version 4, as a store of the previous build left it.
    client()
        .await
        .batch_execute(&format!(
            "DROP TABLE \"{schema}\".stats_cache; DROP INDEX \"{schema}\".tasks_retried; \
             DELETE FROM \"{schema}\".migrations WHERE version = 5"
        ))
        .await
        .unwrap();
    assert_eq!(versions(&schema).await.last(), Some(&(4, 1)));

    let new = connect(test_config(&schema)).await;
    assert_eq!(versions(&schema).await.last(), Some(&(5, 1)));
    let claimed = new.claim(ClaimRequest::new(q, "w").max(100)).await.unwrap();
    let mut got: Vec<_> = claimed.iter().map(|t| t.id).collect();
    got.sort();
    let mut want = ids;
    want.sort();
    assert_eq!(got, want, "every queued task is claimed");
    assert!(
        claimed.windows(2).all(|w| w[0].priority <= w[1].priority),
        "in claim order"
    );
}
