//! Results over HTTP (docs/spec.md §3.2, §7.1): `result` on an ack, handed
//! to the tasks waiting for the acked one as their `parent_results`; a
//! result over the limit, or given with `reschedule_at`, answered 400
//! with the task still leased.
//!
//! The server runs over the embedded engine, which keeps results.

use reqwest::StatusCode;
use serde_json::json;

use super::support::{Answer, TestServer};

async fn ack(s: &TestServer, id: u64, body: serde_json::Value) -> Answer {
    s.post(&format!("/v1/tasks/{id}/ack"), &body.to_string())
        .await
}

#[tokio::test]
async fn an_acks_result_reaches_the_task_waiting_for_it() {
    let s = TestServer::start().await;
    let parent = s.enqueue("flow", r#"{"kind":"extract"}"#).await;
    let child = s
        .enqueue("flow", &format!(r#"{{"kind":"load","after":[{parent}]}}"#))
        .await;
    let t = s.get(&format!("/v1/tasks/{child}")).await;
    assert!(t.json.get("parent_results").is_none(), "{}", t.text);

    let (id, token) = s.claim_one("flow").await;
    assert_eq!(id, parent);
    let acked = ack(&s, id, json!({ "token": token, "result": { "rows": 3 } })).await;
    assert_eq!(acked.status, StatusCode::NO_CONTENT, "{}", acked.text);

    let t = s.get(&format!("/v1/tasks/{child}")).await;
    assert_eq!(t.status, StatusCode::OK, "{}", t.text);
    assert_eq!(t.json["state"], "ready", "{}", t.text);
    assert_eq!(t.json["parents_completed"], 1);
    assert_eq!(
        t.json["parent_results"],
        json!([{ "id": parent, "result": { "rows": 3 } }]),
        "{}",
        t.text
    );
    // The claim answers the same task JSON: a worker reads them there.
    let claimed = s.post("/v1/queues/flow/claim", r#"{"worker":"w2"}"#).await;
    let task = &claimed.json["tasks"][0];
    assert_eq!(task["id"], child, "{}", claimed.text);
    assert_eq!(task["parent_results"][0]["result"]["rows"], 3);
}

#[tokio::test]
async fn results_come_by_parent_id_and_only_from_parents_that_left_one() {
    let s = TestServer::start().await;
    let a = s.enqueue("fan", "{}").await;
    let b = s.enqueue("fan", "{}").await;
    let c = s.enqueue("fan", "{}").await;
    let child = s
        .enqueue("fan", &format!(r#"{{"after":[{c},{a},{b}]}}"#))
        .await;
    // Claimed in id order: a, b, c. b leaves no result.
    for (expect, result) in [(a, Some(json!("A"))), (b, None), (c, Some(json!([1, 2])))] {
        let (id, token) = s.claim_one("fan").await;
        assert_eq!(id, expect);
        let body = match result {
            Some(r) => json!({ "token": token, "result": r }),
            None => json!({ "token": token }),
        };
        let acked = ack(&s, id, body).await;
        assert_eq!(acked.status, StatusCode::NO_CONTENT, "{}", acked.text);
    }
    let t = s.get(&format!("/v1/tasks/{child}")).await;
    assert_eq!(
        t.json["parent_results"],
        json!([{ "id": a, "result": "A" }, { "id": c, "result": [1, 2] }]),
        "{}",
        t.text
    );
    assert_eq!(t.json["after"], json!([c, a, b]), "the order named stays");
}

#[tokio::test]
async fn a_refused_result_leaves_the_task_leased() {
    let s = TestServer::start().await;
    let parent = s.enqueue("big", "{}").await;
    let child = s
        .enqueue("big", &format!(r#"{{"after":[{parent}]}}"#))
        .await;
    let (id, token) = s.claim_one("big").await;
    assert_eq!(id, parent);

    // 4,097 bytes written compactly: one over the limit.
    let over = json!({ "token": token, "result": "x".repeat(4095) });
    let later = "2100-01-01T00:00:00.000Z";
    let both = json!({ "token": token, "result": 1, "reschedule_at": later });
    for body in [over, both] {
        let refused = ack(&s, id, body).await;
        refused.assert_error(400, "bad_request");
        let t = s.get(&format!("/v1/tasks/{parent}")).await;
        assert_eq!(t.json["state"], "leased", "{}", t.text);
        let c = s.get(&format!("/v1/tasks/{child}")).await;
        assert_eq!(c.json["state"], "pending", "{}", c.text);
        assert_eq!(c.json["waiting_on"], json!([parent]));
    }
    let refused = ack(
        &s,
        id,
        json!({ "token": token, "result": "x".repeat(4095) }),
    )
    .await;
    assert!(refused.text.contains("4096"), "{}", refused.text);

    // Exactly at the limit is taken; the same token still holds.
    let at_limit = json!({ "token": token, "result": "x".repeat(4094) });
    let acked = ack(&s, id, at_limit).await;
    assert_eq!(acked.status, StatusCode::NO_CONTENT, "{}", acked.text);
    let c = s.get(&format!("/v1/tasks/{child}")).await;
    assert_eq!(c.json["state"], "ready", "{}", c.text);
    let kept = c.json["parent_results"][0]["result"].as_str().unwrap();
    assert_eq!(kept.len(), 4094);
}

#[tokio::test]
async fn a_plain_ack_after_a_refused_result_completes_the_task() {
    let s = TestServer::start().await;
    let parent = s.enqueue("retry", "{}").await;
    let child = s
        .enqueue("retry", &format!(r#"{{"after":[{parent}]}}"#))
        .await;
    let (id, token) = s.claim_one("retry").await;
    let big = json!({ "token": token, "result": { "blob": "y".repeat(5000) } });
    ack(&s, id, big).await.assert_error(400, "bad_request");
    let acked = ack(&s, id, json!({ "token": token })).await;
    assert_eq!(acked.status, StatusCode::NO_CONTENT, "{}", acked.text);
    s.get(&format!("/v1/tasks/{parent}"))
        .await
        .assert_error(404, "not_found");
    let c = s.get(&format!("/v1/tasks/{child}")).await;
    assert_eq!(c.json["state"], "ready", "{}", c.text);
    assert!(c.json.get("parent_results").is_none(), "{}", c.text);
}

#[tokio::test]
async fn a_result_with_a_stale_token_is_lease_lost_and_hands_nothing_on() {
    let s = TestServer::start().await;
    let parent = s.enqueue("stale", "{}").await;
    let child = s
        .enqueue("stale", &format!(r#"{{"after":[{parent}]}}"#))
        .await;
    let (id, _) = s.claim_one("stale").await;
    let wrong = json!({ "token": "0000000000000000", "result": { "rows": 1 } });
    ack(&s, id, wrong).await.assert_error(409, "lease_lost");
    let c = s.get(&format!("/v1/tasks/{child}")).await;
    assert_eq!(c.json["state"], "pending", "{}", c.text);
    assert!(c.json.get("parent_results").is_none(), "{}", c.text);
}

#[tokio::test]
async fn openapi_documents_results() {
    let s = TestServer::start().await;
    let doc = s.get("/openapi.json").await.json;
    let schemas = &doc["components"]["schemas"];
    let ack = &schemas["AckBody"];
    assert!(ack["properties"]["result"].is_object(), "AckBody: {ack}");
    let required = ack["required"].as_array().unwrap();
    assert!(!required.contains(&json!("result")), "{ack}");

    let task = &schemas["TaskJson"];
    let results = &task["properties"]["parent_results"];
    assert!(results.is_object(), "TaskJson.parent_results: {task}");
    let required = task["required"].as_array().unwrap();
    assert!(!required.contains(&json!("parent_results")), "{task}");
    let item = &schemas["ParentResultJson"];
    for field in ["id", "result"] {
        assert!(item["properties"][field].is_object(), "{item}");
    }
}
