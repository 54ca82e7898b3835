//! Schedules over HTTP: put, list with last and next fire times, fire (one
//! task per tick), delete; bad bodies are refused with 400 and change
//! nothing.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::api::support::{is_millis_utc, TestServer};

async fn put(s: &TestServer, name: &str, body: &str) -> crate::api::support::Answer {
    s.send(Method::PUT, &format!("/v1/schedules/{name}"), Some(body))
        .await
}

/// A tick of a 1 s schedule created now: the next whole second after
/// creation, once it has passed.
async fn next_tick(s: &TestServer, name: &str) -> String {
    let list = s.get("/v1/schedules").await.json;
    let me = list["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == name)
        .unwrap()
        .clone();
    let next = me["next_fire_at"].as_str().unwrap().to_string();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    next
}

#[tokio::test]
async fn put_list_fire_and_delete() {
    let s = TestServer::start().await;
    let a = put(
        &s,
        "health",
        r#"{"queue":"checks","payload":{"url":"http://x","n":9007199254740993},"every_ms":1000,"deadline_ms":500}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["name"], "health");
    assert_eq!(a.json["kind"], Value::Null, "the kind is the queue's");
    assert_eq!(a.json["every_ms"], 1000);
    assert_eq!(a.json["deadline_ms"], 500);
    assert_eq!(a.json["last_fire_at"], Value::Null);
    assert!(
        a.text.contains("9007199254740993"),
        "payload kept exactly: {}",
        a.text
    );
    assert!(is_millis_utc(a.json["next_fire_at"].as_str().unwrap()));
    assert!(is_millis_utc(a.json["created_at"].as_str().unwrap()));

    let cron = put(
        &s,
        "nightly",
        r#"{"queue":"reports","kind":"nightly","payload_base64":"AAE=","cron":"0 0 3 * * *","tz":"Europe/Berlin"}"#,
    )
    .await;
    assert_eq!(cron.status, StatusCode::OK, "{}", cron.text);
    assert_eq!(cron.json["payload_base64"], "AAE=");
    assert_eq!(cron.json["tz"], "Europe/Berlin");
    assert_eq!(cron.json["deadline_ms"], Value::Null);

    let list = s.get("/v1/schedules").await;
    assert_eq!(list.status, StatusCode::OK);
    let names: Vec<_> = list.json["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].clone())
        .collect();
    assert_eq!(names, [json!("health"), json!("nightly")]);

    // Two firers of one tick: one task.
    let tick = next_tick(&s, "health").await;
    let body = json!({ "tick": tick }).to_string();
    let first = s.post("/v1/schedules/health/fire", &body).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(first.json["fired"], true);
    let id = first.json["id"].as_u64().unwrap();
    let second = s.post("/v1/schedules/health/fire", &body).await;
    assert_eq!(second.json, json!({"fired": false}));
    let task = s.get(&format!("/v1/tasks/{id}")).await.json;
    assert_eq!(task["queue"], "checks");
    assert_eq!(task["lease_ms"], 500, "the deadline is the tick's lease");
    assert_eq!(task["run_at"], json!(tick));
    assert!(task["key"].as_str().unwrap().starts_with("sched:health:"));
    let listed = s.get("/v1/schedules").await.json;
    assert_eq!(listed["schedules"][0]["last_fire_at"], json!(tick));

    let gone = s.send(Method::DELETE, "/v1/schedules/health", None).await;
    assert_eq!(gone.status, StatusCode::NO_CONTENT, "{}", gone.text);
    s.send(Method::DELETE, "/v1/schedules/health", None)
        .await
        .assert_error(404, "not_found");
    s.post("/v1/schedules/health/fire", &body)
        .await
        .assert_error(404, "not_found");
    // Its task stays.
    assert_eq!(
        s.get(&format!("/v1/tasks/{id}")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn standard_cron_expressions_and_macros_are_accepted() {
    let s = TestServer::start().await;
    let cases = [
        // 5 fields, minute first: 09:00 every day, in UTC and in Berlin.
        (r#"{"queue":"q","cron":"0 9 * * *"}"#, "T09:00:00.000Z"),
        (
            r#"{"queue":"q","cron":"0 9 * * *","tz":"Europe/Berlin"}"#,
            ":00:00.000Z",
        ),
        // 6 fields, seconds first.
        (r#"{"queue":"q","cron":"30 0 9 * * *"}"#, "T09:00:30.000Z"),
        (r#"{"queue":"q","cron":"@hourly"}"#, ":00:00.000Z"),
        (r#"{"queue":"q","cron":"@daily"}"#, "T00:00:00.000Z"),
        (r#"{"queue":"q","cron":"@weekly"}"#, "T00:00:00.000Z"),
        (r#"{"queue":"q","cron":"@monthly"}"#, "-01T00:00:00.000Z"),
        (r#"{"queue":"q","cron":"@yearly"}"#, "-01-01T00:00:00.000Z"),
        (
            r#"{"queue":"q","cron":"@annually"}"#,
            "-01-01T00:00:00.000Z",
        ),
    ];
    for (body, ends) in cases {
        let a = put(&s, "c", body).await;
        assert_eq!(a.status, StatusCode::OK, "{body}: {}", a.text);
        let next = a.json["next_fire_at"].as_str().unwrap_or("");
        assert!(
            is_millis_utc(next) && next.ends_with(ends),
            "{body}: {next}"
        );
        let listed = s.get("/v1/schedules").await.json;
        assert_eq!(listed["schedules"][0]["next_fire_at"], json!(next));
    }
}

#[tokio::test]
async fn bad_schedules_are_refused_and_change_nothing() {
    let s = TestServer::start().await;
    let bad = [
        r#"{"queue":"q","every_ms":99}"#,
        r#"{"queue":"q","every_ms":0}"#,
        r#"{"queue":"q"}"#,
        r#"{"queue":"q","every_ms":1000,"cron":"* * * * * *"}"#,
        r#"{"queue":"q","every_ms":1000,"tz":"UTC"}"#,
        r#"{"queue":"q","cron":"* * * *"}"#,
        r#"{"queue":"q","cron":"@often"}"#,
        r#"{"queue":"q","cron":"0 9 * * 8"}"#,
        r#"{"queue":"q","cron":"0 0 9 * * *","tz":"Mars/Base"}"#,
        r#"{"queue":"q","every_ms":1000,"deadline_ms":0}"#,
        r#"{"queue":"q","every_ms":1000,"payload":1,"payload_base64":"AA=="}"#,
        r#"{"queue":"q","every_ms":1000,"payload_base64":"!"}"#,
        r#"{"queue":"bad queue","every_ms":1000}"#,
        r#"{"queue":"q","every_ms":1000,"name":"other"}"#,
        r#"{"queue":"q","every_ms":1000,"extra":true}"#,
        r#"{"queue":"q","every_ms":-5}"#,
        r#"[]"#,
    ];
    for body in bad {
        put(&s, "s", body).await.assert_error(400, "bad_request");
    }
    put(&s, "bad%20name", r#"{"queue":"q","every_ms":1000}"#)
        .await
        .assert_error(400, "bad_request");
    let a = put(&s, "s", r#"{"queue":"q","every_ms":1000,"name":"s"}"#).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["payload"], Value::Null, "no payload is JSON null");
    s.post("/v1/schedules/s/fire", r#"{"tick":"yesterday"}"#)
        .await
        .assert_error(400, "bad_request");
    s.post(
        "/v1/schedules/s/fire",
        r#"{"tick":"2020-01-01T00:00:00.000Z"}"#,
    )
    .await
    .assert_error(400, "bad_request");
    let list = s.get("/v1/schedules").await.json;
    assert_eq!(list["schedules"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn schedules_are_in_the_openapi_document() {
    let s = TestServer::start().await;
    let doc = s.get("/openapi.json").await.json;
    for path in [
        "/v1/schedules",
        "/v1/schedules/{name}",
        "/v1/schedules/{name}/fire",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }
    assert!(doc["paths"]["/v1/schedules/{name}"]["put"].is_object());
    assert!(doc["paths"]["/v1/schedules/{name}"]["delete"].is_object());
}
