//! Claim, ack, fail, release, extend, snooze and batch ack.

use std::time::{Duration, Instant};

use reqwest::{Method, StatusCode};

use crate::api::support::{is_millis_utc, TestServer};

#[tokio::test]
async fn claim_leases_in_order_and_only_the_claim_shows_the_token() {
    let s = TestServer::start().await;
    let low = s.enqueue("q", r#"{"priority":5}"#).await;
    let high = s.enqueue("q", r#"{"priority":-1}"#).await;
    let a = s
        .post(
            "/v1/queues/q/claim",
            r#"{"worker":"w1","max":10,"lease_ms":5000}"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let tasks = a.json["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0]["id"], high);
    assert_eq!(tasks[1]["id"], low);
    let t = &tasks[0];
    assert_eq!(t["state"], "leased");
    assert_eq!(t["attempt"], 1);
    assert_eq!(t["lease"]["owner"], "w1");
    assert!(!t["lease"]["token"].as_str().unwrap().is_empty());
    assert!(is_millis_utc(t["lease"]["expires_at"].as_str().unwrap()));

    let g = s.get(&format!("/v1/tasks/{high}")).await.json;
    assert_eq!(g["state"], "leased");
    assert_eq!(g["lease"]["owner"], "w1");
    assert!(
        g["lease"].get("token").is_none(),
        "GET never shows the token"
    );
    let list = s.get("/v1/queues/q/tasks").await.json;
    assert!(list["tasks"][0]["lease"].get("token").is_none());

    let empty = s.post("/v1/queues/q/claim", r#"{"worker":"w2"}"#).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.json["tasks"], serde_json::json!([]));
    let unknown = s
        .post("/v1/queues/nobody/claim", r#"{"worker":"w2"}"#)
        .await;
    assert_eq!(unknown.status, StatusCode::OK);
    assert_eq!(unknown.json["tasks"], serde_json::json!([]));
}

#[tokio::test]
async fn long_poll_returns_when_a_task_arrives() {
    let s = TestServer::start().await;
    let url = s.url("/v1/queues/lp/claim");
    let client = s.client.clone();
    let start = Instant::now();
    let claim = tokio::spawn(async move {
        client
            .post(url)
            .header("content-type", "application/json")
            .body(r#"{"worker":"w","wait_ms":10000}"#)
            .send()
            .await
            .unwrap()
            .json::<serde_json::Value>()
            .await
            .unwrap()
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let id = s.enqueue("lp", "{}").await;
    let got = claim.await.unwrap();
    assert_eq!(got["tasks"][0]["id"], id);
    assert!(start.elapsed() < Duration::from_secs(5));

    let start = Instant::now();
    let none = s
        .post("/v1/queues/lp/claim", r#"{"worker":"w","wait_ms":300}"#)
        .await;
    assert_eq!(none.json["tasks"], serde_json::json!([]));
    assert!(start.elapsed() >= Duration::from_millis(250));
}

#[tokio::test]
async fn ack_completes_and_stale_or_wrong_tokens_are_refused() {
    let s = TestServer::start().await;
    let id = s.enqueue("q", "{}").await;
    let (_, token) = s.claim_one("q").await;
    let ack = format!("/v1/tasks/{id}/ack");

    s.post(&ack, r#"{"token":"0000000000000000"}"#)
        .await
        .assert_error(409, "lease_lost");
    s.post(&ack, r#"{"token":"not-a-token-at-all"}"#)
        .await
        .assert_error(409, "lease_lost");
    let a = s.post(&ack, &format!(r#"{{"token":"{token}"}}"#)).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.text);
    assert!(a.text.is_empty());
    s.get(&format!("/v1/tasks/{id}"))
        .await
        .assert_error(404, "not_found");
    s.post(&ack, &format!(r#"{{"token":"{token}"}}"#))
        .await
        .assert_error(404, "not_found");
    s.post("/v1/tasks/987654321/ack", r#"{"token":"garbage"}"#)
        .await
        .assert_error(404, "not_found");

    // An unleased task: any token is lease_lost.
    let idle = s.enqueue("q", "{}").await;
    s.post(
        &format!("/v1/tasks/{idle}/ack"),
        r#"{"token":"00000000000000ff"}"#,
    )
    .await
    .assert_error(409, "lease_lost");
}

#[tokio::test]
async fn ack_with_reschedule_at_rearms_the_task() {
    let s = TestServer::start().await;
    let id = s.enqueue("q", "{}").await;
    let (_, token) = s.claim_one("q").await;
    let a = s
        .post(
            &format!("/v1/tasks/{id}/ack"),
            &format!(r#"{{"token":"{token}","reschedule_at":"2099-05-05T05:05:05.555Z"}}"#),
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.text);
    let t = s.get(&format!("/v1/tasks/{id}")).await.json;
    assert_eq!(t["state"], "scheduled");
    assert_eq!(t["attempt"], 0);
    assert_eq!(t["run_at"], "2099-05-05T05:05:05.555Z");
}

#[tokio::test]
async fn fail_retries_then_dies_and_retry_revives() {
    let s = TestServer::start().await;
    let id = s.enqueue("q", r#"{"max_attempts":2}"#).await;

    let (_, token) = s.claim_one("q").await;
    let a = s
        .post(
            &format!("/v1/tasks/{id}/fail"),
            &format!(
                r#"{{"token":"{token}","message":"first","retry_at":"2000-01-01T00:00:00Z"}}"#
            ),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["state"], "ready", "retry_at in the past: at once");
    assert_eq!(a.json["errors"][0]["message"], "first");
    assert_eq!(a.json["errors"][0]["attempt"], 1);
    assert!(is_millis_utc(a.json["errors"][0]["at"].as_str().unwrap()));

    let (_, token) = s.claim_one("q").await;
    let a = s
        .post(
            &format!("/v1/tasks/{id}/fail"),
            &format!(r#"{{"token":"{token}","message":"second"}}"#),
        )
        .await;
    assert_eq!(a.json["state"], "dead", "out of attempts");
    assert_eq!(a.json["errors"].as_array().unwrap().len(), 2);

    let a = s.post(&format!("/v1/tasks/{id}/retry"), "").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["state"], "ready");
    assert_eq!(a.json["attempt"], 0);

    // Discard: dead at once; the queue-wide retry brings it back.
    let (_, token) = s.claim_one("q").await;
    let a = s
        .post(
            &format!("/v1/tasks/{id}/fail"),
            &format!(r#"{{"token":"{token}","message":"bad input","discard":true}}"#),
        )
        .await;
    assert_eq!(a.json["state"], "dead");
    let a = s.post("/v1/queues/q/retry", "").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["retried"], 1);
    let a = s.post("/v1/queues/q/retry", "").await;
    assert_eq!(a.json["retried"], 0);
}

#[tokio::test]
async fn release_extend_and_snooze() {
    let s = TestServer::start().await;
    let id = s.enqueue("q", "{}").await;

    let (_, token) = s.claim_one("q").await;
    let a = s
        .post(
            &format!("/v1/tasks/{id}/release"),
            &format!(r#"{{"token":"{token}"}}"#),
        )
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT, "{}", a.text);
    let t = s.get(&format!("/v1/tasks/{id}")).await.json;
    assert_eq!(t["state"], "ready");
    assert_eq!(t["attempt"], 0, "a released attempt does not count");

    let a = s
        .post("/v1/queues/q/claim", r#"{"worker":"w","lease_ms":1000}"#)
        .await;
    let token = a.json["tasks"][0]["lease"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let before = a.json["tasks"][0]["lease"]["expires_at"]
        .as_str()
        .unwrap()
        .to_string();
    let a = s
        .post(
            &format!("/v1/tasks/{id}/extend"),
            &format!(r#"{{"token":"{token}","lease_ms":600000}}"#),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let after = a.json["lease"]["expires_at"].as_str().unwrap();
    assert!(after > before.as_str(), "{after} > {before}");
    assert!(a.json["lease"].get("token").is_none());

    let a = s
        .post(
            &format!("/v1/tasks/{id}/snooze"),
            &format!(r#"{{"token":"{token}","run_at":"2099-01-01T00:00:00Z"}}"#),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["state"], "scheduled");
    assert_eq!(a.json["attempt"], 0);

    s.post(
        &format!("/v1/tasks/{id}/extend"),
        &format!(r#"{{"token":"{token}","lease_ms":10}}"#),
    )
    .await
    .assert_error(409, "lease_lost");
    s.post(
        &format!("/v1/tasks/{id}/release"),
        &format!(r#"{{"token":"{token}"}}"#),
    )
    .await
    .assert_error(409, "lease_lost");
}

#[tokio::test]
async fn a_leased_task_cannot_be_patched_and_cancel_fences_the_holder() {
    let s = TestServer::start().await;
    let id = s.enqueue("q", "{}").await;
    let (_, token) = s.claim_one("q").await;
    s.send(
        Method::PATCH,
        &format!("/v1/tasks/{id}"),
        Some(r#"{"priority":1}"#),
    )
    .await
    .assert_error(409, "lease_held");
    let a = s
        .send(Method::DELETE, &format!("/v1/tasks/{id}"), None)
        .await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    s.post(
        &format!("/v1/tasks/{id}/ack"),
        &format!(r#"{{"token":"{token}"}}"#),
    )
    .await
    .assert_error(404, "not_found");
}

#[tokio::test]
async fn batch_ack_answers_per_item_in_request_order() {
    let s = TestServer::start().await;
    let a = s.enqueue("q", "{}").await;
    let b = s.enqueue("q", "{}").await;
    let c = s.enqueue("q", "{}").await;
    let claimed = s
        .post("/v1/queues/q/claim", r#"{"worker":"w","max":3}"#)
        .await
        .json;
    let token = |id: u64| {
        claimed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["lease"]["token"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let body = format!(
        r#"{{"acks":[{{"id":{a},"token":"{}"}},{{"id":{b},"token":"00000000000000aa"}},
            {{"id":424242,"token":"{}"}},{{"id":{c},"token":"garbage"}},{{"id":{c},"token":"{}"}}]}}"#,
        token(a),
        token(b),
        token(c)
    );
    let r = s.post("/v1/ack", &body).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let results = r.json["results"].as_array().unwrap();
    let statuses: Vec<u64> = results
        .iter()
        .map(|x| x["status"].as_u64().unwrap())
        .collect();
    assert_eq!(statuses, vec![204, 409, 404, 409, 204]);
    assert_eq!(results[0]["id"], a);
    assert!(results[0].get("error").is_none());
    assert_eq!(results[1]["error"]["code"], "lease_lost");
    assert_eq!(results[2]["error"]["code"], "not_found");
    assert_eq!(results[2]["id"], 424242);
    assert_eq!(results[3]["error"]["code"], "lease_lost");
    s.get(&format!("/v1/tasks/{a}"))
        .await
        .assert_error(404, "not_found");
    assert_eq!(
        s.get(&format!("/v1/tasks/{b}")).await.json["state"],
        "leased"
    );

    let empty = s.post("/v1/ack", r#"{"acks":[]}"#).await;
    assert_eq!(empty.status, StatusCode::OK);
    assert_eq!(empty.json["results"], serde_json::json!([]));
}
