//! Queue settings, pause/resume, the overview with counts.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::api::support::TestServer;

#[tokio::test]
async fn put_creates_a_queue_get_reads_it_and_partial_puts_keep_the_rest() {
    let s = TestServer::start().await;
    s.get("/v1/queues/fresh")
        .await
        .assert_error(404, "not_found");

    let a = s
        .send(
            Method::PUT,
            "/v1/queues/fresh",
            Some(
                r#"{"lease_ms":5000,"max_attempts":3,"backoff_base_ms":200,"backoff_max_ms":60000,
                     "dedup_window_ms":1000,"max_payload":2048,"paused":false}"#,
            ),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let want = json!({"lease_ms":5000,"max_attempts":3,"backoff_base_ms":200,"backoff_max_ms":60000,
                      "dedup_window_ms":1000,"max_payload":2048,"paused":false});
    assert_eq!(a.json, want);
    assert_eq!(s.get("/v1/queues/fresh").await.json, want);

    let a = s
        .send(
            Method::PUT,
            "/v1/queues/fresh",
            Some(r#"{"max_attempts":9}"#),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["max_attempts"], 9);
    assert_eq!(a.json["lease_ms"], 5000, "absent fields keep their values");

    let defaults = s.send(Method::PUT, "/v1/queues/other", Some("{}")).await;
    assert_eq!(
        defaults.json,
        json!({"lease_ms":30000,"max_attempts":20,"backoff_base_ms":1000,"backoff_max_ms":3600000,
               "dedup_window_ms":900000,"max_payload":1048576,"paused":false})
    );
}

#[tokio::test]
async fn a_paused_queue_hands_out_nothing_until_resumed() {
    let s = TestServer::start().await;
    s.enqueue("p", "{}").await;
    let a = s.post("/v1/queues/p/pause", "").await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.text);
    assert_eq!(s.get("/v1/queues/p").await.json["paused"], true);
    let claim = s.post("/v1/queues/p/claim", r#"{"worker":"w"}"#).await;
    assert_eq!(claim.status, StatusCode::OK);
    assert_eq!(claim.json["tasks"], json!([]));
    // Enqueues still work while paused.
    s.enqueue("p", "{}").await;

    let a = s.post("/v1/queues/p/resume", "").await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    let claim = s
        .post("/v1/queues/p/claim", r#"{"worker":"w","max":5}"#)
        .await;
    assert_eq!(claim.json["tasks"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn the_overview_counts_per_state_and_per_kind() {
    let s = TestServer::start().await;
    s.enqueue("mail", r#"{"kind":"welcome"}"#).await;
    s.enqueue("mail", r#"{"kind":"welcome"}"#).await;
    s.enqueue("mail", r#"{"kind":"digest","delay_ms":600000}"#)
        .await;
    s.enqueue("sms", "{}").await;
    s.claim_one("sms").await;
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;

    let a = s.get("/v1/queues").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let queues = a.json["queues"].as_array().unwrap();
    let mail = queues.iter().find(|q| q["name"] == "mail").unwrap();
    assert_eq!(mail["paused"], false);
    assert_eq!(
        mail["counts"],
        json!({"scheduled":1,"ready":2,"leased":0,"dead":0,"pending":0})
    );
    assert_eq!(
        mail["kinds"]["welcome"],
        json!({"scheduled":0,"ready":2,"leased":0,"dead":0,"pending":0})
    );
    assert_eq!(mail["kinds"]["digest"]["scheduled"], 1);
    assert!(mail["oldest_ready_age_ms"].as_u64().is_some());
    let sms = queues.iter().find(|q| q["name"] == "sms").unwrap();
    assert_eq!(sms["counts"]["leased"], 1);
    assert_eq!(sms["oldest_ready_age_ms"], serde_json::Value::Null);
}

#[tokio::test]
async fn payloads_over_the_queues_max_payload_are_refused_with_413() {
    let s = TestServer::start().await;
    let a = s
        .send(
            Method::PUT,
            "/v1/queues/small",
            Some(r#"{"max_payload":16}"#),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    s.enqueue("small", r#"{"payload":"0123456789"}"#).await;
    s.post(
        "/v1/queues/small/tasks",
        r#"{"payload":"0123456789abcdefghij"}"#,
    )
    .await
    .assert_error(413, "payload_too_large");
    s.post(
        "/v1/queues/small/tasks",
        r#"{"tasks":[{"payload":1},{"payload_base64":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}]}"#,
    )
    .await
    .assert_error(413, "payload_too_large");
    let counts = s.get("/v1/queues").await.json;
    assert_eq!(
        counts["queues"][0]["counts"]["ready"], 1,
        "the batch is atomic"
    );
}
