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
        vec![(1, 1), (2, 1), (3, 1), (4, 1)]
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
        vec![(1, 1), (2, 1), (3, 1), (4, 1)]
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
