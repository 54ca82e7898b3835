//! Enqueue, get, update, cancel and list: happy paths and their status codes.

use reqwest::header::HeaderValue;
use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::api::support::{is_millis_utc, TestServer};

#[tokio::test]
async fn enqueue_one_answers_201_and_the_task_reads_back_with_every_field() {
    let s = TestServer::start().await;
    let a = s
        .post("/v1/queues/emails/tasks", r#"{"payload":{"to":"a@b.c"}}"#)
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    assert_eq!(a.json["tasks"][0]["duplicate"], false);
    let id = a.json["tasks"][0]["id"].as_u64().unwrap();

    let t = s.get(&format!("/v1/tasks/{id}")).await;
    assert_eq!(t.status, StatusCode::OK);
    let t = t.json;
    assert_eq!(t["id"], id);
    assert_eq!(t["queue"], "emails");
    assert_eq!(t["kind"], "emails", "kind defaults to the queue name");
    assert_eq!(t["payload"]["to"], "a@b.c");
    assert!(t.get("payload_base64").is_none());
    assert_eq!(t["priority"], 0);
    assert_eq!(t["state"], "ready");
    assert_eq!(t["attempt"], 0);
    assert_eq!(t["max_attempts"], 20);
    assert_eq!(t["lease"], serde_json::Value::Null);
    assert_eq!(t["lease_ms"], serde_json::Value::Null);
    assert_eq!(t["key"], serde_json::Value::Null);
    assert_eq!(t["errors"], serde_json::json!([]));
    for field in ["run_at", "created_at", "updated_at"] {
        assert!(
            is_millis_utc(t[field].as_str().unwrap()),
            "{field}: {}",
            t[field]
        );
    }
}

#[tokio::test]
async fn given_fields_are_kept() {
    let s = TestServer::start().await;
    let id = s
        .enqueue(
            "q",
            r#"{"kind":"send","payload":1,"priority":-5,"key":"k1","max_attempts":3,"lease_ms":1500,
                "run_at":"2099-01-02T03:04:05.678+01:00"}"#,
        )
        .await;
    let t = s.get(&format!("/v1/tasks/{id}")).await.json;
    assert_eq!(t["kind"], "send");
    assert_eq!(t["priority"], -5);
    assert_eq!(t["key"], "k1");
    assert_eq!(t["max_attempts"], 3);
    assert_eq!(t["lease_ms"], 1500);
    assert_eq!(t["state"], "scheduled");
    assert_eq!(
        t["run_at"], "2099-01-02T02:04:05.678Z",
        "offsets become UTC"
    );

    let id = s.enqueue("q", r#"{"delay_ms":60000}"#).await;
    let t = s.get(&format!("/v1/tasks/{id}")).await.json;
    assert_eq!(t["state"], "scheduled");
    assert_eq!(
        t["payload"],
        serde_json::Value::Null,
        "no payload is JSON null"
    );
}

#[tokio::test]
async fn batch_results_follow_request_order_and_duplicates_answer_200() {
    let s = TestServer::start().await;
    let a = s
        .post(
            "/v1/queues/q/tasks",
            r#"{"tasks":[{"key":"a"},{"payload":2},{"key":"b"}]}"#,
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    let ids: Vec<u64> = a.json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    assert!(ids[0] < ids[1] && ids[1] < ids[2]);

    let again = s
        .post(
            "/v1/queues/q/tasks",
            r#"{"tasks":[{"key":"b"},{"key":"a"}]}"#,
        )
        .await;
    assert_eq!(
        again.status,
        StatusCode::OK,
        "all duplicates: {}",
        again.text
    );
    assert_eq!(again.json["tasks"][0]["id"], ids[2]);
    assert_eq!(again.json["tasks"][0]["duplicate"], true);
    assert_eq!(again.json["tasks"][1]["id"], ids[0]);

    let mixed = s
        .post(
            "/v1/queues/q/tasks",
            r#"{"tasks":[{"key":"a"},{"key":"c"}]}"#,
        )
        .await;
    assert_eq!(mixed.status, StatusCode::CREATED);
    assert_eq!(mixed.json["tasks"][0]["duplicate"], true);
    assert_eq!(mixed.json["tasks"][1]["duplicate"], false);

    let single_dup = s.post("/v1/queues/q/tasks", r#"{"key":"c"}"#).await;
    assert_eq!(single_dup.status, StatusCode::OK);
    assert_eq!(single_dup.json["tasks"][0]["duplicate"], true);
}

#[derive(Deserialize)]
struct RawTask<'a> {
    #[serde(borrow)]
    payload: &'a RawValue,
}

#[tokio::test]
async fn json_payloads_round_trip_byte_for_byte() {
    let s = TestServer::start().await;
    let payloads = [
        r#"{"max":9223372036854775807,"min":-9223372036854775808,"u":18446744073709551615}"#,
        r#"[123456789012345678901234567890,1e400,1.50,-0.0,0.1]"#,
        r#"{"s":"\u00e9\ud83d\ude00\n\"","nested":{"a":[true,false,null,{}]}}"#,
        r#""just a string""#,
        "-9223372036854775808",
        "null",
    ];
    for p in payloads {
        let id = s.enqueue("q", &format!(r#"{{"payload":{p}}}"#)).await;
        let a = s.get(&format!("/v1/tasks/{id}")).await;
        let t: RawTask<'_> = serde_json::from_str(&a.text).unwrap();
        assert_eq!(t.payload.get(), p);
    }
}

#[tokio::test]
async fn binary_payloads_round_trip_as_base64() {
    let s = TestServer::start().await;
    for b64 in ["", "AA==", "/+8A3q2+7w==", "aGVsbG8gd29ybGQ="] {
        let id = s
            .enqueue("q", &format!(r#"{{"payload_base64":"{b64}"}}"#))
            .await;
        let t = s.get(&format!("/v1/tasks/{id}")).await.json;
        assert_eq!(t["payload_base64"], b64);
        assert!(t.get("payload").is_none());
    }
}

#[tokio::test]
async fn get_update_and_cancel_by_id() {
    let s = TestServer::start().await;
    let id = s.enqueue("q", r#"{"payload":{"v":1}}"#).await;
    let path = format!("/v1/tasks/{id}");

    let a = s
        .send(
            Method::PATCH,
            &path,
            Some(r#"{"payload":{"v":2},"priority":7,"run_at":"2099-01-01T00:00:00Z"}"#),
        )
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["payload"]["v"], 2);
    assert_eq!(a.json["priority"], 7);
    assert_eq!(a.json["state"], "scheduled");
    assert_eq!(a.json["run_at"], "2099-01-01T00:00:00.000Z");

    let a = s
        .send(Method::PATCH, &path, Some(r#"{"payload_base64":"AQI="}"#))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["payload_base64"], "AQI=");

    let a = s.send(Method::DELETE, &path, None).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    assert!(a.text.is_empty());
    s.get(&path).await.assert_error(404, "not_found");
    s.send(Method::DELETE, &path, None)
        .await
        .assert_error(404, "not_found");
    s.send(Method::PATCH, &path, Some("{}"))
        .await
        .assert_error(404, "not_found");
    s.get("/v1/tasks/999999")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn get_update_and_cancel_by_key() {
    let s = TestServer::start().await;
    let key = "order/42 ü";
    let id = s
        .enqueue("q", &format!(r#"{{"key":"{key}","payload":1}}"#))
        .await;
    let path = "/v1/queues/q/keys/order%2F42%20%C3%BC";

    let a = s.get(path).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["id"], id);
    assert_eq!(a.json["key"], key);

    let a = s.send(Method::PATCH, path, Some(r#"{"priority":3}"#)).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.text);
    assert_eq!(a.json["priority"], 3);

    let a = s.send(Method::DELETE, path, None).await;
    assert_eq!(a.status, StatusCode::NO_CONTENT);
    s.get(path).await.assert_error(404, "not_found");
    s.get("/v1/queues/q/keys/never")
        .await
        .assert_error(404, "not_found");
    s.get("/v1/queues/nosuchqueue/keys/k")
        .await
        .assert_error(404, "not_found");
}

#[tokio::test]
async fn list_filters_orders_and_pages() {
    let s = TestServer::start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(s.enqueue("q", &format!(r#"{{"payload":{i}}}"#)).await);
    }
    s.enqueue("q", r#"{"delay_ms":600000}"#).await;
    // The last task fails twice (retried at once); the others are released.
    let fail_now = |token: &str| {
        format!(r#"{{"token":"{token}","message":"boom","retry_at":"2000-01-01T00:00:00Z"}}"#)
    };
    let a = s
        .post("/v1/queues/q/claim", r#"{"worker":"w","max":5}"#)
        .await;
    for t in a.json["tasks"].as_array().unwrap() {
        let id = t["id"].as_u64().unwrap();
        let token = t["lease"]["token"].as_str().unwrap();
        let r = if id == ids[4] {
            s.post(&format!("/v1/tasks/{id}/fail"), &fail_now(token))
                .await
        } else {
            s.post(
                &format!("/v1/tasks/{id}/release"),
                &format!(r#"{{"token":"{token}"}}"#),
            )
            .await
        };
        assert!(r.status.is_success(), "{}", r.text);
    }
    // Its run_at is now in 2000, so it comes first.
    let (id, token) = s.claim_one("q").await;
    assert_eq!(id, ids[4]);
    let r = s
        .post(&format!("/v1/tasks/{id}/fail"), &fail_now(&token))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);

    let all = s.get("/v1/queues/q/tasks").await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.text);
    assert_eq!(all.json["tasks"].as_array().unwrap().len(), 6);
    assert_eq!(all.json["next_cursor"], serde_json::Value::Null);

    let scheduled = s.get("/v1/queues/q/tasks?state=scheduled").await;
    assert_eq!(scheduled.json["tasks"].as_array().unwrap().len(), 1);

    let by_attempts = s
        .get("/v1/queues/q/tasks?state=ready&order=attempts_desc")
        .await;
    let attempts: Vec<u64> = by_attempts.json["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, vec![2, 0, 0, 0, 0]);
    assert_eq!(by_attempts.json["tasks"][0]["id"], ids[4]);

    // Pages of two cover every task once.
    let mut seen = Vec::new();
    let mut path = "/v1/queues/q/tasks?limit=2".to_string();
    loop {
        let page = s.get(&path).await;
        assert_eq!(page.status, StatusCode::OK, "{}", page.text);
        let tasks = page.json["tasks"].as_array().unwrap();
        assert!(tasks.len() <= 2);
        seen.extend(tasks.iter().map(|t| t["id"].as_u64().unwrap()));
        match page.json["next_cursor"].as_str() {
            Some(c) => {
                let c: String = c.bytes().map(|b| format!("%{b:02X}")).collect();
                path = format!("/v1/queues/q/tasks?limit=2&cursor={c}");
            }
            None => break,
        }
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 6);
}

const TRACED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const OTHER_TRACE: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/// POSTs an enqueue body with a `traceparent` header.
async fn enqueue_with_header(
    s: &TestServer,
    body: &str,
    header: HeaderValue,
) -> crate::api::support::Answer {
    let res = s
        .client
        .post(s.url("/v1/queues/traced/tasks"))
        .header("content-type", "application/json")
        .header("traceparent", header)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    crate::api::support::Answer::from(res).await
}

#[tokio::test]
async fn traceparent_comes_from_the_field_or_for_one_task_the_header() {
    let s = TestServer::start().await;
    let from_field = s
        .enqueue("traced", &format!(r#"{{"traceparent":"{TRACED}"}}"#))
        .await;
    let untraced = s.enqueue("traced", "{}").await;
    let a = enqueue_with_header(&s, "{}", HeaderValue::from_static(OTHER_TRACE)).await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    let from_header = a.json["tasks"][0]["id"].as_u64().unwrap();
    let body = format!(r#"{{"traceparent":"{TRACED}"}}"#);
    let a = enqueue_with_header(&s, &body, HeaderValue::from_static(OTHER_TRACE)).await;
    let field_wins = a.json["tasks"][0]["id"].as_u64().unwrap();
    let a = enqueue_with_header(
        &s,
        r#"{"tasks":[{}]}"#,
        HeaderValue::from_static(OTHER_TRACE),
    )
    .await;
    assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
    let batched = a.json["tasks"][0]["id"].as_u64().unwrap();

    let expected = [
        (from_field, Some(TRACED)),
        (untraced, None),
        (from_header, Some(OTHER_TRACE)),
        (field_wins, Some(TRACED)),
        (batched, None),
    ];
    for (id, tp) in expected {
        let t = s.get(&format!("/v1/tasks/{id}")).await.json;
        assert_eq!(t["traceparent"].as_str(), tp, "task {id}");
    }
    let a = s
        .post("/v1/queues/traced/claim", r#"{"worker":"w","max":10}"#)
        .await;
    let claimed = a.json["tasks"].as_array().unwrap();
    assert_eq!(claimed.len(), expected.len());
    for t in claimed {
        let (_, tp) = expected.iter().find(|(id, _)| t["id"] == *id).unwrap();
        assert_eq!(t["traceparent"].as_str(), *tp, "claimed {}", t["id"]);
    }
}

#[tokio::test]
async fn a_malformed_traceparent_is_400_whether_field_or_header() {
    let s = TestServer::start().await;
    let bad = "00-00000000000000000000000000000000-00f067aa0ba902b7-01";
    let a = s
        .post(
            "/v1/queues/traced/tasks",
            &format!(r#"{{"traceparent":"{bad}"}}"#),
        )
        .await;
    a.assert_error(400, "bad_request");
    assert!(a.text.contains("traceparent"), "{}", a.text);
    let batch = format!(
        r#"{{"tasks":[{{}},{{"traceparent":"{}"}}]}}"#,
        "x".repeat(55)
    );
    let a = s.post("/v1/queues/traced/tasks", &batch).await;
    a.assert_error(400, "bad_request");
    assert!(a.text.contains("tasks[1]: traceparent"), "{}", a.text);
    for header in [
        bad,
        "garbage",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
    ] {
        enqueue_with_header(&s, "{}", HeaderValue::from_static(header))
            .await
            .assert_error(400, "bad_request");
    }
    let not_text = HeaderValue::from_bytes(b"00-\xff").unwrap();
    enqueue_with_header(&s, "{}", not_text)
        .await
        .assert_error(400, "bad_request");
    let a = enqueue_with_header(&s, r#"{"tasks":[{}]}"#, HeaderValue::from_static("garbage")).await;
    assert_eq!(a.status, StatusCode::CREATED, "a batch ignores the header");
    let queues = s.get("/v1/queues").await.json;
    assert_eq!(queues["queues"][0]["counts"]["ready"], 1, "{queues}");
}
