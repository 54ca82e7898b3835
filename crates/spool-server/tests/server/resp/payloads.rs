//! One payload rule across both protocols: bytes that are valid JSON are
//! JSON (`payload` over HTTP), any other bytes are binary
//! (`payload_base64`); RESP always hands back the bytes.

use serde_json::{json, Value};

use crate::resp::support::{Servers, V};

async fn http_get(s: &Servers, id: i64) -> Value {
    reqwest::get(format!("{}/v1/tasks/{id}", s.http))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

#[tokio::test]
async fn enqueued_over_resp_read_over_http() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let json_id = c
        .call(&[
            b"ENQUEUE",
            b"q",
            br#"{"to":"a@b","n":12345678901234567890}"#,
        ])
        .await
        .int();
    let bin_id = c.call(&[b"ENQUEUE", b"q", b"\x00\xffhello"]).await.int();
    let text_id = c.call(&[b"ENQUEUE", b"q", b"hello"]).await.int();
    let t = http_get(&s, json_id).await;
    assert_eq!(
        t["payload"],
        json!({"to": "a@b", "n": 12345678901234567890u64})
    );
    assert!(t.get("payload_base64").is_none());
    assert_eq!(http_get(&s, bin_id).await["payload_base64"], "AP9oZWxsbw==");
    assert_eq!(http_get(&s, text_id).await["payload_base64"], "aGVsbG8=");
}

#[tokio::test]
async fn enqueued_over_http_read_over_resp() {
    let s = Servers::start().await;
    let http = reqwest::Client::new();
    for body in [
        json!({"payload": {"b": [1, 2]}}),
        json!({"payload_base64": "AP8="}),
    ] {
        let r = http
            .post(format!("{}/v1/queues/q/tasks", s.http))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
    }
    let mut c = s.client().await;
    let claimed = c.call(&[b"CLAIM", b"q", b"MAX", b"2"]).await;
    let payloads: Vec<&V> = claimed.items().iter().map(|t| t.field("payload")).collect();
    assert_eq!(
        payloads,
        [
            &V::Bulk(br#"{"b":[1,2]}"#.to_vec()),
            &V::Bulk(vec![0, 0xff])
        ]
    );
}
