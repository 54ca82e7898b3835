//! Task groups over HTTP: a task's `group`, a queue's `group_concurrency`
//! and `GET /v1/queues/{queue}/groups`.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::api::support::{Answer, TestServer};

/// `PUT /v1/queues/fair` with `body`.
async fn put_fair(s: &TestServer, body: &str) -> Answer {
    s.send(Method::PUT, "/v1/queues/fair", Some(body)).await
}

/// The groups of `tasks`, sorted, `None` for a task without one.
fn groups_of(tasks: &Value) -> Vec<Option<String>> {
    let mut groups: Vec<Option<String>> = tasks
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.get("group").map(|g| g.as_str().unwrap().to_string()))
        .collect();
    groups.sort();
    groups
}

#[tokio::test]
async fn a_task_keeps_its_group_and_one_without_shows_none() {
    let s = TestServer::start().await;
    let id = s.enqueue("g", r#"{"group":"customer:42 ü"}"#).await;
    let plain = s.enqueue("g", "{}").await;
    let a = s.get(&format!("/v1/tasks/{id}")).await;
    assert_eq!(a.json["group"], "customer:42 ü", "{}", a.text);
    let a = s.get(&format!("/v1/tasks/{plain}")).await;
    assert!(a.json.get("group").is_none(), "{}", a.text);

    let a = s
        .post(
            "/v1/queues/g/tasks",
            r#"{"tasks":[{"group":"a"},{"group":"b","key":"k"},{}]}"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    let listed = s.get("/v1/queues/g/tasks").await;
    let some = |g: &str| Some(g.to_string());
    let want = vec![None, None, some("a"), some("b"), some("customer:42 ü")];
    assert_eq!(groups_of(&listed.json["tasks"]), want, "{}", listed.text);
    let claimed = s
        .post("/v1/queues/g/claim", r#"{"worker":"w","max":10}"#)
        .await;
    assert_eq!(groups_of(&claimed.json["tasks"]), want, "{}", claimed.text);
}

#[tokio::test]
async fn malformed_groups_are_refused_and_nothing_is_enqueued() {
    let s = TestServer::start().await;
    let long = format!(r#"{{"group":"{}"}}"#, "g".repeat(129));
    for body in [
        r#"{"group":""}"#,
        r#"{"group":".."}"#,
        r#"{"group":7}"#,
        long.as_str(),
    ] {
        s.post("/v1/queues/g/tasks", body)
            .await
            .assert_error(400, "bad_request");
    }
    let batch = s
        .post(
            "/v1/queues/g/tasks",
            r#"{"tasks":[{"group":"fine"},{"group":""}]}"#,
        )
        .await;
    batch.assert_error(400, "bad_request");
    assert!(batch.text.contains("tasks[1]"), "{}", batch.text);
    assert_eq!(s.counts().await, json!({"queues": []}));
}

#[tokio::test]
async fn group_concurrency_is_set_kept_and_removed() {
    let s = TestServer::start().await;
    let a = put_fair(&s, r#"{"group_concurrency":3}"#).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["group_concurrency"], 3);
    assert_eq!(s.get("/v1/queues/fair").await.json["group_concurrency"], 3);
    let a = put_fair(&s, r#"{"max_attempts":4}"#).await;
    assert_eq!(a.json["group_concurrency"], 3, "other changes keep it");
    put_fair(&s, r#"{"group_concurrency":0}"#)
        .await
        .assert_error(400, "bad_request");
    let a = put_fair(&s, r#"{"group_concurrency":null}"#).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert!(a.json.get("group_concurrency").is_none(), "{}", a.text);
    assert_eq!(a.json["max_attempts"], 4);
}

#[tokio::test]
async fn a_group_rate_limit_is_set_enforced_and_removed() {
    let s = TestServer::start().await;
    let limit = json!({"limit": 1, "period_ms": 60000, "burst": 2});
    let a = put_fair(&s, &json!({ "group_rate_limit": limit }).to_string()).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["group_rate_limit"], limit);
    assert_eq!(
        s.get("/v1/queues/fair").await.json["group_rate_limit"],
        limit
    );
    let tasks: Vec<_> = ["a", "a", "a", "b", "b", "b"]
        .iter()
        .map(|g| json!({ "group": g }))
        .collect();
    let made = s
        .post(
            "/v1/queues/fair/tasks",
            &json!({ "tasks": tasks }).to_string(),
        )
        .await;
    assert!(made.status.is_success(), "{}", made.text);
    let claim = || s.post("/v1/queues/fair/claim", r#"{"worker":"w","max":10}"#);
    let got = claim().await;
    assert_eq!(
        got.json["tasks"].as_array().map(Vec::len),
        Some(4),
        "{}",
        got.text
    );
    let none = claim().await;
    assert_eq!(none.json["tasks"], json!([]), "{}", none.text);
    let groups = s.get("/v1/queues/fair/groups").await;
    let tokens: Vec<&Value> = groups.json["groups"]
        .as_array()
        .map(|g| g.iter().map(|g| &g["rate_tokens"]).collect())
        .unwrap_or_default();
    assert_eq!(tokens, [&json!(0), &json!(0)], "{}", groups.text);
    let metrics = s.get("/metrics").await.text;
    assert!(
        metrics.contains(r#"spool_claims_throttled_total{queue="fair"} 1"#),
        "{metrics}"
    );
    put_fair(
        &s,
        r#"{"group_rate_limit":{"limit":0,"period_ms":1000,"burst":1}}"#,
    )
    .await
    .assert_error(400, "bad_request");
    let a = put_fair(&s, r#"{"group_rate_limit":null}"#).await;
    assert!(a.json.get("group_rate_limit").is_none(), "{}", a.text);
    let rest = claim().await;
    assert_eq!(
        rest.json["tasks"].as_array().map(Vec::len),
        Some(2),
        "{}",
        rest.text
    );
}

#[tokio::test]
async fn group_concurrency_bounds_each_groups_leases() {
    let s = TestServer::start().await;
    let a = put_fair(&s, r#"{"group_concurrency":1}"#).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    let a = s
        .post(
            "/v1/queues/fair/tasks",
            r#"{"tasks":[{"group":"a"},{"group":"a"},{"group":"a"},{"group":"b"},{}]}"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    let claimed = s
        .post("/v1/queues/fair/claim", r#"{"worker":"w","max":10}"#)
        .await;
    let some = |g: &str| Some(g.to_string());
    assert_eq!(
        groups_of(&claimed.json["tasks"]),
        vec![None, some("a"), some("b")],
        "one task per group, and the one without a group: {}",
        claimed.text
    );
}

#[tokio::test]
async fn groups_are_reported_busiest_first() {
    let s = TestServer::start().await;
    s.enqueue("work", r#"{"group":"leasy"}"#).await;
    s.enqueue("work", r#"{"group":"leasy"}"#).await;
    let claimed = s
        .post("/v1/queues/work/claim", r#"{"worker":"w","max":2}"#)
        .await;
    assert_eq!(claimed.json["tasks"].as_array().unwrap().len(), 2);
    let a = s
        .post(
            "/v1/queues/work/tasks",
            r#"{"tasks":[{"group":"big"},{"group":"big"},{"group":"big","delay_ms":600000},
                         {"group":"small"},{}]}"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);

    let a = s.get("/v1/queues/work/groups").await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(
        a.json,
        json!({"groups": [
            {"group": "big", "waiting": 3, "leased": 0, "rate_tokens": null},
            {"group": "small", "waiting": 1, "leased": 0, "rate_tokens": null},
            {"group": "leasy", "waiting": 0, "leased": 2, "rate_tokens": null},
        ]})
    );
    let a = s.get("/v1/queues/work/groups?limit=1").await;
    assert_eq!(
        a.json,
        json!({"groups": [{"group": "big", "waiting": 3, "leased": 0, "rate_tokens": null}]})
    );
    let a = s.get("/v1/queues/nowhere/groups?limit=1000").await;
    assert_eq!(a.json, json!({"groups": []}), "{}", a.text);
}

#[tokio::test]
async fn a_groups_limit_out_of_range_is_refused() {
    let s = TestServer::start().await;
    for query in ["limit=0", "limit=1001", "limit=x", "limit=-1", "top=3"] {
        s.get(&format!("/v1/queues/work/groups?{query}"))
            .await
            .assert_error(400, "bad_request");
    }
}
