//! Limits and failures: concurrency, timeouts, a store that hangs, is down,
//! or has a bug.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use spool_server::ServerConfig;
use spool_testkit::server::Embedded;

use crate::api::faulty::{Faulty, Mode, SECRET};
use crate::api::support::{raw, TestServer};

async fn faulty(config: ServerConfig) -> (TestServer, std::sync::Arc<Faulty>) {
    let engine = Embedded::open();
    let f = Faulty::new(engine.store.clone());
    let s = TestServer::serve(f.clone(), config, engine).await;
    (s, f)
}

#[tokio::test]
async fn a_hanging_store_answers_503_in_time_and_healthz_follows_it() {
    let (s, f) = faulty(ServerConfig {
        store_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    })
    .await;
    assert_eq!(s.get("/healthz").await.status, StatusCode::OK);
    f.set(Mode::Hang);
    let start = Instant::now();
    s.post("/v1/queues/q/tasks", "{}")
        .await
        .assert_error(503, "unavailable");
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    s.get("/v1/queues").await.assert_error(503, "unavailable");
    s.get("/healthz").await.assert_error(503, "unavailable");

    f.set(Mode::Normal);
    let a = s.get("/healthz").await;
    assert_eq!(
        a.status,
        StatusCode::OK,
        "back once the store is: {}",
        a.text
    );
    assert_eq!(
        s.post("/v1/queues/q/tasks", "{}").await.status,
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn a_store_that_is_down_answers_503_without_leaking_internals() {
    let (s, f) = faulty(ServerConfig::default()).await;
    f.set(Mode::Down);
    for a in [
        s.post("/v1/queues/q/tasks", "{}").await,
        s.get("/v1/tasks/1").await,
        s.get("/healthz").await,
    ] {
        a.assert_error(503, "unavailable");
        assert!(!a.text.contains(SECRET), "leaked: {}", a.text);
    }
    // Metrics still answer while the store is down.
    assert_eq!(s.get("/metrics").await.status, StatusCode::OK);

    f.set(Mode::Bug);
    let a = s.get("/v1/queues").await;
    a.assert_error(500, "internal");
    assert!(!a.text.contains(SECRET), "leaked: {}", a.text);

    f.set(Mode::Normal);
    assert_eq!(s.get("/healthz").await.status, StatusCode::OK);
}

#[tokio::test]
async fn requests_over_the_concurrency_limit_get_429() {
    let s = TestServer::with_config(ServerConfig {
        concurrency_limit: 1,
        ..ServerConfig::default()
    })
    .await;
    let url = s.url("/v1/queues/slow/claim");
    let client = s.client.clone();
    let waiting = tokio::spawn(async move {
        client
            .post(url)
            .header("content-type", "application/json")
            .body(r#"{"worker":"w","wait_ms":1500}"#)
            .send()
            .await
            .unwrap()
            .status()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    s.get("/v1/queues").await.assert_error(429, "overloaded");
    assert_eq!(
        s.get("/healthz").await.status,
        StatusCode::OK,
        "probes are exempt"
    );
    assert_eq!(waiting.await.unwrap(), StatusCode::OK);
    assert_eq!(s.get("/v1/queues").await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_body_that_never_arrives_gets_408() {
    let s = TestServer::with_config(ServerConfig {
        request_timeout: Duration::from_millis(400),
        ..ServerConfig::default()
    })
    .await;
    let start = Instant::now();
    // Promises 100 bytes, sends 2.
    let a = raw(
        &s.addr(),
        "POST /v1/queues/q/tasks HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 100",
        b"{}",
    )
    .await;
    a.assert_error(408, "request_timeout");
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(s.counts().await["queues"], serde_json::json!([]));
}

#[tokio::test]
async fn a_stopped_engine_fails_healthz_for_good() {
    let fs = spool_wal::FaultyFs::new(7);
    let mut config = spool_engine::EngineConfig::new("/data");
    config.fs = std::sync::Arc::new(fs.clone());
    let engine = spool_engine::Engine::open(config).unwrap();
    let s = TestServer::serve(std::sync::Arc::new(engine), ServerConfig::default(), ()).await;
    assert_eq!(s.get("/healthz").await.status, StatusCode::OK);
    // A failed log write stops the engine until a restart.
    fs.fail_sync_after(0);
    s.post("/v1/queues/q/tasks", "{}")
        .await
        .assert_error(503, "unavailable");
    s.get("/healthz").await.assert_error(503, "unavailable");
    // Reading the clock must not make it look healthy again.
    s.get("/v1/time").await.assert_error(503, "unavailable");
    s.get("/healthz").await.assert_error(503, "unavailable");
}

#[tokio::test]
async fn a_settings_change_does_not_undo_a_concurrent_pause() {
    let (s, f) = faulty(ServerConfig::default()).await;
    let (client, url) = (s.client.clone(), s.url("/v1/queues/q"));
    let put = move |body: &'static str| {
        let (client, url) = (client.clone(), url.clone());
        async move {
            client
                .put(url)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(put("{}").await, StatusCode::OK);
    f.set(Mode::SlowSettingsRead);
    // A server that read the settings (slowly here) and wrote them back
    // would let the pause land in between and undo it.
    let change = tokio::spawn(put(r#"{"max_attempts":7}"#));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pause = s.post("/v1/queues/q/pause", "").await;
    assert_eq!(pause.status, StatusCode::NO_CONTENT, "{}", pause.text);
    assert_eq!(change.await.unwrap(), StatusCode::OK);
    f.set(Mode::Normal);
    let now = s.get("/v1/queues/q").await.json;
    assert_eq!(now["max_attempts"], 7, "{now}");
    assert_eq!(now["paused"], true, "the pause was undone: {now}");
}
