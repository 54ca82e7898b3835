//! Two `spool serve --postgres` nodes on one database schema: a settings
//! change (`PUT` of the lease alone) through one and a pause through the
//! other, at the same moment, many times. The queue ends paused, with the
//! new lease and every other setting as it was, every time: a change is
//! atomic with every other change of the queue, across processes
//! (docs/spec.md §4). A node that read the settings, changed them and
//! wrote them all back would undo a pause that landed in between.
//!
//! Needs PostgreSQL at `DATABASE_URL` (default: the local server); the run
//! uses a schema of its own.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{pg, TestResult};
use reqwest::StatusCode;
use serde_json::{json, Value};

/// How many times the pause and the change race.
const ROUNDS: u64 = 200;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_change_on_one_node_keeps_a_pause_on_another() -> TestResult {
    let admin = pg::admin().await?;
    let schema = pg::fresh_schema("spool_settings");
    let result = race(&schema).await;
    pg::drop_schema(&admin, &schema, result).await
}

async fn race(schema: &str) -> TestResult {
    let owned = schema.to_string();
    let nodes = tokio::task::spawn_blocking(move || pg::start_nodes(&owned, 2)).await??;
    let url = |node: usize, action: &str| format!("{}/v1/queues/raced{action}", nodes[node].base);
    let http = reqwest::Client::new();
    let made = http
        .put(url(0, ""))
        .json(&json!({ "max_attempts": 7, "paused": true }))
        .send()
        .await?;
    assert_eq!(made.status(), StatusCode::OK);

    for round in 1..=ROUNDS {
        let resumed = http.post(url(1, "/resume")).send().await?;
        assert_eq!(resumed.status(), StatusCode::NO_CONTENT);
        let lease_ms = 1000 + round;
        let change = http
            .put(url(0, ""))
            .json(&json!({ "lease_ms": lease_ms }))
            .send();
        let pause = http.post(url(1, "/pause")).send();
        let (change, pause) = tokio::join!(change, pause);
        assert_eq!(change?.status(), StatusCode::OK, "round {round}");
        assert_eq!(pause?.status(), StatusCode::NO_CONTENT, "round {round}");

        let now: Value = http.get(url(1, "")).send().await?.json().await?;
        assert_eq!(
            now["paused"], true,
            "round {round}: the change through one node undid the pause through the other: {now}"
        );
        assert_eq!(now["lease_ms"], lease_ms, "round {round}: {now}");
        assert_eq!(now["max_attempts"], 7, "round {round}: {now}");
    }
    Ok(())
}
