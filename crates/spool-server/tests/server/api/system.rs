//! Health, clock, metrics, the OpenAPI document, the placeholder admin page,
//! and HTTP/2.

use reqwest::StatusCode;

use crate::api::support::{is_millis_utc, TestServer};

#[tokio::test]
async fn healthz_and_time() {
    let s = TestServer::start().await;
    let a = s.get("/healthz").await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.json["status"], "ok");
    let a = s.get("/v1/time").await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(is_millis_utc(a.json["now"].as_str().unwrap()), "{}", a.text);
}

#[tokio::test]
async fn metrics_show_queue_gauges_counters_and_the_claim_histogram() {
    let s = TestServer::start().await;
    s.enqueue("metered", "{}").await;
    s.enqueue("metered", "{}").await;
    let grouped = r#"{"tasks":[{"group":"acme"},{"group":"acme"},{"group":"globex"}]}"#;
    let r = s.post("/v1/queues/metered-groups/tasks", grouped).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let (id, token) = s.claim_one("metered").await;
    let r = s
        .post(
            &format!("/v1/tasks/{id}/ack"),
            &format!(r#"{{"token":"{token}"}}"#),
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);

    let a = s.get("/metrics").await;
    assert_eq!(a.status, StatusCode::OK);
    let ct = a.headers["content-type"].to_str().unwrap();
    assert!(ct.starts_with("text/plain"), "{ct}");
    let text = a.text;
    for needle in [
        r#"spool_tasks{queue="metered",state="ready"} 1"#,
        r#"spool_tasks{queue="metered",state="leased"} 0"#,
        r#"spool_tasks_enqueued_total{queue="metered"}"#,
        "spool_tasks_completed_total",
        r#"spool_claim_duration_seconds_bucket{queue="metered""#,
        "spool_http_requests_total",
        r#"spool_queue_group_backlog_max{queue="metered-groups"} 2"#,
        r#"spool_queue_group_backlog_max{queue="metered"} 0"#,
    ] {
        assert!(text.contains(needle), "missing {needle} in\n{text}");
    }
}

#[tokio::test]
async fn made_up_methods_and_queue_names_do_not_grow_the_metrics() {
    let s = TestServer::start().await;
    let salt = std::process::id();
    for i in 0..20 {
        let method = format!("XMETHOD{salt}N{i}");
        let m = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        s.send(m, "/healthz", None).await;
        let a = s
            .post(
                &format!("/v1/queues/madeup{salt}n{i}/claim"),
                r#"{"worker":"w"}"#,
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    }
    let text = s.get("/metrics").await.text;
    assert!(
        !text.contains("XMETHOD"),
        "a method became a label:\n{text}"
    );
    assert!(
        !text.contains("madeup"),
        "a queue name became a label:\n{text}"
    );
    assert!(text.contains(r#"method="other""#), "{text}");
    assert!(
        text.contains(r#"spool_claim_duration_seconds_bucket{queue="other""#),
        "{text}"
    );
}

/// Every route the router serves, as OpenAPI names it.
const ROUTES: &[(&str, &str)] = &[
    ("/v1/queues/{queue}/tasks", "post"),
    ("/v1/queues/{queue}/tasks", "get"),
    ("/v1/queues/{queue}/claim", "post"),
    ("/v1/tasks/{id}/ack", "post"),
    ("/v1/tasks/{id}/fail", "post"),
    ("/v1/tasks/{id}/release", "post"),
    ("/v1/tasks/{id}/extend", "post"),
    ("/v1/tasks/{id}/snooze", "post"),
    ("/v1/ack", "post"),
    ("/v1/leases/wait", "post"),
    ("/v1/tasks/{id}", "get"),
    ("/v1/tasks/{id}", "patch"),
    ("/v1/tasks/{id}", "delete"),
    ("/v1/queues/{queue}/keys/{key}", "get"),
    ("/v1/queues/{queue}/keys/{key}", "patch"),
    ("/v1/queues/{queue}/keys/{key}", "delete"),
    ("/v1/tasks/{id}/retry", "post"),
    ("/v1/queues/{queue}/retry", "post"),
    ("/v1/queues", "get"),
    ("/v1/queues/{queue}/groups", "get"),
    ("/v1/queues/{queue}", "put"),
    ("/v1/queues/{queue}", "get"),
    ("/v1/queues/{queue}/pause", "post"),
    ("/v1/queues/{queue}/resume", "post"),
    ("/v1/schedules", "get"),
    ("/v1/schedules/{name}", "put"),
    ("/v1/schedules/{name}", "delete"),
    ("/v1/schedules/{name}/fire", "post"),
    ("/v1/time", "get"),
    ("/healthz", "get"),
    ("/metrics", "get"),
    ("/openapi.json", "get"),
    ("/", "get"),
];

#[tokio::test]
async fn openapi_documents_every_route_with_its_answers() {
    let s = TestServer::start().await;
    let a = s.get("/openapi.json").await;
    assert_eq!(a.status, StatusCode::OK);
    let doc = a.json;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let documented: usize = paths.values().map(|p| p.as_object().unwrap().len()).sum();
    assert_eq!(
        documented,
        ROUTES.len(),
        "{:?}",
        paths.keys().collect::<Vec<_>>()
    );
    for (path, method) in ROUTES {
        let op = &doc["paths"][path][method];
        assert!(op.is_object(), "{method} {path} is not documented");
        assert!(op["responses"]["default"].is_object(), "{method} {path}");
        if *path != "/healthz" {
            assert!(op["responses"]["401"].is_object(), "{method} {path}");
        }
    }
    assert_eq!(
        doc["paths"]["/v1/queues/{queue}/tasks"]["post"]["responses"]["201"]["content"]
            ["application/json"]["schema"]["$ref"],
        "#/components/schemas/EnqueueResponse"
    );
    for schema in [
        "TaskJson",
        "ErrorBody",
        "EnqueueItem",
        "EnqueueBatch",
        "ClaimBody",
        "SettingsJson",
        "QueuesJson",
        "GroupsJson",
    ] {
        assert!(
            doc["components"]["schemas"][schema].is_object(),
            "schema {schema}"
        );
    }
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());

    // And every documented route answers something other than 404/405.
    for (path, method) in ROUTES {
        let concrete = path
            .replace("{queue}", "q")
            .replace("{id}", "1")
            .replace("{key}", "k");
        let m = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let a = s.send(m, &concrete, Some("{}")).await;
        let code = a.json["error"]["code"].as_str().unwrap_or("");
        assert!(
            code != "method_not_allowed"
                && !(a.status == 404
                    && a.json["error"]["message"]
                        .as_str()
                        .unwrap_or("")
                        .starts_with("no route")),
            "{method} {concrete}: {}",
            a.text
        );
    }
}

#[tokio::test]
async fn the_admin_placeholder_answers_html() {
    let s = TestServer::start().await;
    let a = s.get("/").await;
    assert_eq!(a.status, StatusCode::OK);
    assert!(a.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
}

#[tokio::test]
async fn http2_with_prior_knowledge_works() {
    let s = TestServer::start().await;
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let res = client
        .post(s.url("/v1/queues/h2/tasks"))
        .header("content-type", "application/json")
        .body(r#"{"payload":1}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.version(), reqwest::Version::HTTP_2);
    assert_eq!(res.status(), StatusCode::CREATED);
}
