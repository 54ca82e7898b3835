//! `POST /v1/leases/wait`: the lost leases at once, a long poll woken by a
//! cancel, and bad input refused with 400.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::api::support::TestServer;

#[tokio::test]
async fn lost_leases_are_answered_at_once_in_request_order() {
    let s = TestServer::start().await;
    s.enqueue("lw", "{}").await;
    s.enqueue("lw", "{}").await;
    let (held, held_token) = s.claim_one("lw").await;
    let (gone, gone_token) = s.claim_one("lw").await;
    let cancel = s
        .send(reqwest::Method::DELETE, &format!("/v1/tasks/{gone}"), None)
        .await;
    assert_eq!(cancel.status, StatusCode::NO_CONTENT);
    let body = json!({
        "leases": [
            {"id": held, "token": held_token},
            {"id": gone, "token": gone_token},
            {"id": held, "token": "not-a-token"},
        ],
        "wait_ms": 5000,
    });
    let started = Instant::now();
    let a = s.post("/v1/leases/wait", &body.to_string()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json, json!({"lost": [gone, held]}));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_waiting_poll_answers_the_cancel() {
    let s = TestServer::start().await;
    s.enqueue("lw", "{}").await;
    let (id, token) = s.claim_one("lw").await;
    let body = json!({"leases": [{"id": id, "token": token}], "wait_ms": 10000});
    let (url, client) = (s.url("/v1/leases/wait"), s.client.clone());
    let poll = tokio::spawn(async move {
        let res = client.post(url).json(&body).send().await.unwrap();
        (
            res.json::<serde_json::Value>().await.unwrap(),
            Instant::now(),
        )
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let cancel = s
        .send(reqwest::Method::DELETE, &format!("/v1/tasks/{id}"), None)
        .await;
    assert_eq!(cancel.status, StatusCode::NO_CONTENT);
    let cancelled = Instant::now();
    let (answer, at) = poll.await.unwrap();
    assert_eq!(answer, json!({"lost": [id]}));
    let late = at.saturating_duration_since(cancelled);
    assert!(late < Duration::from_millis(100), "{late:?}");
}

#[tokio::test]
async fn bad_waits_are_400() {
    let s = TestServer::start().await;
    let many: Vec<_> = (0..10_001)
        .map(|i| json!({"id": i, "token": "x"}))
        .collect();
    for body in [
        json!({"leases": []}),
        json!({"leases": many}),
        json!({"leases": [{"id": 1, "token": "x"}], "wait_ms": 30001}),
        json!({"leases": [{"id": -1, "token": "x"}]}),
        json!({"leases": [{"id": 1}]}),
        json!({"leases": [{"id": 1, "token": "x"}], "colour": "red"}),
    ] {
        let a = s.post("/v1/leases/wait", &body.to_string()).await;
        a.assert_error(400, "bad_request");
    }
}
