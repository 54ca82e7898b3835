//! Dependencies over HTTP (docs/spec.md §3.2, §7.1): `after`, `after_batch`
//! and `if_parent_fails` at enqueue, the dependency fields of the task JSON,
//! `pending` in the counts and in lists, and bad values answered 400.
//!
//! The server runs over the reference model, which keeps dependencies,
//! so these check the API's shapes whatever store the build has; the
//! conformance suite checks the stores' semantics.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::json;
use spool_core::SystemClock;
use spool_server::ServerConfig;
use spool_testkit::model::Model;

use super::support::TestServer;

async fn over_the_model() -> TestServer {
    let model = Arc::new(Model::new(Arc::new(SystemClock)));
    TestServer::serve(model, ServerConfig::default(), ()).await
}

#[tokio::test]
async fn a_dependent_shows_its_parents_until_they_end() {
    let s = over_the_model().await;
    let parent = s.enqueue("flow", r#"{"payload":1}"#).await;
    let child = s
        .enqueue(
            "flow",
            &format!(r#"{{"payload":2,"after":[{parent}],"if_parent_fails":"run"}}"#),
        )
        .await;

    let t = s.get(&format!("/v1/tasks/{child}")).await;
    assert_eq!(t.status, StatusCode::OK, "{}", t.text);
    assert_eq!(t.json["state"], "pending");
    assert_eq!(t.json["after"], json!([parent]));
    assert_eq!(t.json["waiting_on"], json!([parent]));
    assert_eq!(t.json["parents_failed"], 0);
    assert_eq!(t.json["parents_completed"], 0);
    assert_eq!(t.json["if_parent_fails"], "run");
    let p = s.get(&format!("/v1/tasks/{parent}")).await;
    for field in ["after", "waiting_on", "parents_failed", "if_parent_fails"] {
        assert!(p.json.get(field).is_none(), "{field} on {}", p.text);
    }

    let counts = s.counts().await;
    let q = &counts["queues"][0];
    assert_eq!(q["counts"]["pending"], 1, "{counts}");
    assert_eq!(q["counts"]["ready"], 1, "{counts}");
    assert_eq!(q["kinds"]["flow"]["pending"], 1, "{counts}");
    let listed = s.get("/v1/queues/flow/tasks?state=pending").await;
    assert_eq!(listed.json["tasks"][0]["id"], child, "{}", listed.text);
    assert_eq!(listed.json["tasks"].as_array().map(Vec::len), Some(1));

    let (id, token) = s.claim_one("flow").await;
    assert_eq!(id, parent);
    let acked = s
        .post(
            &format!("/v1/tasks/{id}/ack"),
            &json!({ "token": token }).to_string(),
        )
        .await;
    assert_eq!(acked.status, StatusCode::NO_CONTENT, "{}", acked.text);
    let t = s.get(&format!("/v1/tasks/{child}")).await;
    assert_eq!(t.json["state"], "ready", "{}", t.text);
    assert_eq!(t.json["waiting_on"], json!([]));
    assert_eq!(t.json["parents_completed"], 1);
}

#[tokio::test]
async fn a_batch_names_parents_by_position() {
    let s = over_the_model().await;
    let body = r#"{"tasks":[{"kind":"extract"},{"kind":"load","after_batch":[0]}]}"#;
    let a = s.post("/v1/queues/etl/tasks", body).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    let (first, second) = (&a.json["tasks"][0]["id"], &a.json["tasks"][1]["id"]);
    let t = s.get(&format!("/v1/tasks/{second}")).await;
    assert_eq!(t.json["after"], json!([first]), "{}", t.text);
    assert_eq!(t.json["if_parent_fails"], "cancel");
}

#[tokio::test]
async fn bad_dependencies_are_400_and_create_nothing() {
    let s = over_the_model().await;
    s.enqueue("bad", r#"{"payload":1}"#).await;
    let before = s.counts().await;
    let too_many: Vec<u64> = (1..=10_001).collect();
    let too_many = json!({ "after": too_many }).to_string();
    let single = s
        .post("/v1/queues/bad/tasks", r#"{"after_batch":[0]}"#)
        .await;
    single.assert_error(400, "bad_request");
    assert!(single.text.contains("single task"), "{}", single.text);
    for body in [
        r#"{"after_batch":[0]}"#,
        r#"{"after_batch":[-1]}"#,
        r#"{"after_batch":[4294967296]}"#,
        r#"{"after":["1"]}"#,
        r#"{"after":[-1]}"#,
        r#"{"after":1}"#,
        r#"{"after":[999999]}"#,
        r#"{"if_parent_fails":"maybe"}"#,
        r#"{"if_parent_fails":null,"after_batch":[0]}"#,
        r#"{"tasks":[{"after_batch":[1]},{}]}"#,
        r#"{"tasks":[{},{"after_batch":[7]}]}"#,
        &too_many,
    ] {
        let a = s.post("/v1/queues/bad/tasks", body).await;
        a.assert_error(400, "bad_request");
    }
    assert_eq!(s.counts().await, before);
}

#[tokio::test]
async fn openapi_documents_dependencies() {
    let s = TestServer::start().await;
    let doc = s.get("/openapi.json").await.json;
    let schemas = &doc["components"]["schemas"];
    let item = &schemas["EnqueueItem"]["properties"];
    for field in ["after", "after_batch", "if_parent_fails"] {
        assert!(item[field].is_object(), "EnqueueItem.{field}: {item}");
    }
    // Optional: a task without dependencies has none of them.
    let task = &schemas["TaskJson"];
    let required = task["required"].as_array().unwrap();
    for field in [
        "after",
        "waiting_on",
        "parents_failed",
        "parents_completed",
        "if_parent_fails",
    ] {
        assert!(
            task["properties"][field].is_object(),
            "TaskJson.{field}: {task}"
        );
        assert!(
            !required.contains(&json!(field)),
            "{field} required: {task}"
        );
    }
    assert!(schemas["CountsJson"]["properties"]["pending"].is_object());
    assert_eq!(
        schemas["ParentFailure"]["enum"],
        json!(["cancel", "run"]),
        "{}",
        schemas["ParentFailure"]
    );
}
