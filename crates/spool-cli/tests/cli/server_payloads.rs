//! Payload sizes through `spool serve`: empty, one byte, the default
//! 1 MiB limit, and 16 MiB on a queue whose `max_payload` was raised.
//!
//! Every payload must come back exactly, from GET and from a claim, as JSON
//! (same values and types) or as base64 (same bytes). The request body limit
//! is 16 MiB and `spool serve` has no flag to raise it, so the 16 MiB payload
//! is JSON that fills the body to the byte; as base64 it cannot fit.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::support::{TestResult, TestServer};

const MIB: usize = 1024 * 1024;

/// Enqueues `body` (raw JSON text) on `queue`; the status and the answer.
async fn enqueue(
    client: &reqwest::Client,
    base: &str,
    queue: &str,
    body: String,
) -> Result<(StatusCode, Value), reqwest::Error> {
    let resp = client
        .post(format!("{base}/v1/queues/{queue}/tasks"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await?;
    Ok((resp.status(), resp.json().await?))
}

/// Enqueues one task with `field: value` and checks that GET and a claim
/// give `value` back unchanged.
async fn round_trip(
    client: &reqwest::Client,
    base: &str,
    queue: &str,
    field: &str,
    value: &Value,
) -> TestResult {
    let (status, body) = enqueue(client, base, queue, json!({ field: value }).to_string()).await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["tasks"][0]["id"].as_u64().ok_or("no id")?;
    let got: Value = client
        .get(format!("{base}/v1/tasks/{id}"))
        .send()
        .await?
        .json()
        .await?;
    assert!(got[field] == *value, "GET {id}: {field} changed");
    let other = if field == "payload" {
        "payload_base64"
    } else {
        "payload"
    };
    assert!(
        got.get(other).is_none_or(Value::is_null),
        "GET {id} has {other}"
    );
    let claimed: Value = client
        .post(format!("{base}/v1/queues/{queue}/claim"))
        .json(&json!({"worker": "w"}))
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(claimed["tasks"][0]["id"], id);
    assert!(
        claimed["tasks"][0][field] == *value,
        "claim {id}: {field} changed"
    );
    Ok(())
}

/// A JSON string value whose compact text is exactly `bytes` long.
fn json_string_of(bytes: usize) -> Value {
    Value::String("x".repeat(bytes - 2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payloads_from_empty_to_the_limit_round_trip_exactly() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let server = TestServer::start(&tmp.path().join("data"))?;
    let client = reqwest::Client::new();
    let base = server.base.as_str();

    for bytes in [0, 1, MIB] {
        let data: Vec<u8> = (0..bytes).map(|i| (i * 31 % 256) as u8).collect();
        round_trip(
            &client,
            base,
            "bytes",
            "payload_base64",
            &json!(STANDARD.encode(&data)),
        )
        .await?;
    }
    // JSON has no empty value: one byte is the smallest.
    round_trip(&client, base, "json", "payload", &json!(7)).await?;
    let mixed = json!({"max": i64::MAX, "min": i64::MIN, "f": 1.5, "n": null, "a": [true, "é"]});
    round_trip(&client, base, "json", "payload", &mixed).await?;
    round_trip(&client, base, "json", "payload", &json_string_of(MIB)).await?;

    // One byte over the queue's default max_payload (1 MiB) is refused.
    for body in [
        json!({"payload": json_string_of(MIB + 1)}),
        json!({"payload_base64": STANDARD.encode(vec![0u8; MIB + 1])}),
    ] {
        let (status, answer) = enqueue(&client, base, "json", body.to_string()).await?;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
        assert_eq!(answer["error"]["code"], "payload_too_large");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_mib_payloads_fit_the_body_limit_exactly() -> TestResult {
    let tmp = tempfile::tempdir()?;
    let server = TestServer::start(&tmp.path().join("data"))?;
    let client = reqwest::Client::new();
    let base = server.base.as_str();
    let resp = client
        .put(format!("{base}/v1/queues/big"))
        .json(&json!({"max_payload": 16 * MIB}))
        .send()
        .await?;
    assert_eq!(resp.status(), StatusCode::OK);

    // `{"payload":` and `}` frame the payload: 12 bytes of the 16 MiB body.
    let framing = r#"{"payload":}"#.len();
    let payload = json_string_of(16 * MIB - framing);
    assert_eq!(json!({"payload": &payload}).to_string().len(), 16 * MIB);
    round_trip(&client, base, "big", "payload", &payload).await?;

    // One byte more is over the body limit; 16 MiB of bytes is 21⅓ MiB of
    // base64, which no body can carry.
    let over = json!({"payload": json_string_of(16 * MIB - framing + 1)});
    let bytes = json!({"payload_base64": STANDARD.encode(vec![0u8; 16 * MIB])});
    for body in [over, bytes] {
        match enqueue(&client, base, "big", body.to_string()).await {
            Ok((status, answer)) => {
                assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{answer}");
                assert_eq!(answer["error"]["code"], "payload_too_large");
            }
            // The server may answer 413 from the Content-Length alone and
            // close before reading the body; the client then fails writing
            // it and never sees the answer.
            Err(e) if e.is_request() => {}
            Err(e) => return Err(e.into()),
        }
    }
    // Refused means not enqueued: only the first task is in the queue.
    let list: Value = client
        .get(format!("{base}/v1/queues/big/tasks"))
        .send()
        .await?
        .json()
        .await?;
    assert_eq!(list["tasks"].as_array().map(Vec::len), Some(1));
    Ok(())
}
