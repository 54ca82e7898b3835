//! Pipelines: answers in order, each the answer the command would have had
//! alone, while runs of enqueues and acks share store calls.

use spool_core::{QueueName, QueueSettings};
use spool_server::{RespLimits, ServerConfig};

use crate::resp::support::{encode, Servers, V};

#[tokio::test]
async fn a_thousand_pipelined_enqueues_answer_in_order() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let mut bytes = Vec::new();
    for i in 0..1000 {
        bytes.extend(encode(&[
            b"ENQUEUE",
            b"q",
            format!("{{\"n\":{i}}}").as_bytes(),
        ]));
    }
    c.send(&bytes).await;
    let mut ids = Vec::new();
    for _ in 0..1000 {
        ids.push(c.read().await.int());
    }
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids in command order");
    let claimed = c.call(&[b"CLAIM", b"q", b"MAX", b"1000"]).await;
    let payloads: Vec<String> = claimed
        .items()
        .iter()
        .map(|t| t.field("payload").text())
        .collect();
    let expected: Vec<String> = (0..1000).map(|i| format!("{{\"n\":{i}}}")).collect();
    assert_eq!(payloads, expected);
}

#[tokio::test]
async fn a_pipeline_sees_its_own_writes_in_order() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let mut bytes = encode(&[b"ENQUEUE", b"q", b"a", b"KEY", b"k"]);
    bytes.extend(encode(&[b"ENQUEUE", b"q", b"b", b"KEY", b"k"]));
    bytes.extend(encode(&[b"CLAIM", b"q", b"MAX", b"10"]));
    bytes.extend(encode(&[b"ENQUEUE", b"other", b"c"]));
    c.send(&bytes).await;
    let (first, dup) = (c.read().await.int(), c.read().await.int());
    assert_eq!(first, dup, "the key's second use answers the first id");
    let claimed = c.read().await;
    assert_eq!(claimed.items().len(), 1);
    assert_eq!(claimed.items()[0].field("payload").text(), "a");
    assert!(c.read().await.int() > first);
}

#[tokio::test]
async fn one_oversized_payload_in_a_run_fails_alone() {
    let s = Servers::start().await;
    let q = QueueName::new("q").unwrap();
    let settings = QueueSettings {
        max_payload: 8,
        ..QueueSettings::default()
    };
    s.store.put_queue(&q, settings.into()).await.unwrap();
    let mut c = s.client().await;
    let mut bytes = encode(&[b"ENQUEUE", b"q", b"small"]);
    bytes.extend(encode(&[b"ENQUEUE", b"q", b"far too large"]));
    bytes.extend(encode(&[b"ENQUEUE", b"q", b"small2"]));
    c.send(&bytes).await;
    let answers = [c.read().await, c.read().await, c.read().await];
    assert!(matches!(answers[0], V::Int(_)), "{answers:?}");
    assert_eq!(answers[1].code(), "PAYLOAD_TOO_LARGE");
    assert!(matches!(answers[2], V::Int(_)), "{answers:?}");
    assert_eq!(s.store.stats().await.unwrap()[0].counts.ready, 2);
}

#[tokio::test]
async fn pipelined_acks_and_ackmany_answer_per_item() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    for _ in 0..6 {
        c.call(&[b"ENQUEUE", b"q", b"x"]).await;
    }
    let claimed = c.call(&[b"CLAIM", b"q", b"MAX", b"6"]).await;
    let pairs: Vec<(String, String)> = claimed
        .items()
        .iter()
        .map(|t| (t.field("id").int().to_string(), t.field("token").text()))
        .collect();
    let mut bytes = Vec::new();
    for (i, (id, token)) in pairs[..3].iter().enumerate() {
        let token = if i == 1 {
            "0000000000000000"
        } else {
            token.as_str()
        };
        bytes.extend(encode(&[b"ACK", id.as_bytes(), token.as_bytes()]));
    }
    c.send(&bytes).await;
    let answers = [c.read().await, c.read().await, c.read().await];
    assert_eq!(answers[0], V::Simple("OK".into()));
    assert_eq!(answers[1].code(), "LEASE_LOST");
    assert_eq!(answers[2], V::Simple("OK".into()));

    let (a, b) = (&pairs[3], &pairs[4]);
    let many = c
        .call(&[
            b"ACKMANY",
            a.0.as_bytes(),
            a.1.as_bytes(),
            b.0.as_bytes(),
            b"junk",
            b"424242",
            b"0000000000000000",
        ])
        .await;
    let items = many.items();
    assert_eq!(items[0], V::Simple("OK".into()));
    assert_eq!(items[1].code(), "LEASE_LOST");
    assert_eq!(items[2].code(), "NOT_FOUND");
    let left = s.store.stats().await.unwrap()[0].counts.leased;
    assert_eq!(
        left, 3,
        "the wrong tokens' tasks and the one never acked stay leased"
    );
}

#[tokio::test]
async fn auth_in_the_middle_of_a_pipeline_applies_from_there_on() {
    let config = ServerConfig {
        token: Some("t0ken".into()),
        ..ServerConfig::default()
    };
    let s = Servers::with(config, RespLimits::default()).await;
    let mut c = s.client().await;
    let mut bytes = encode(&[b"ENQUEUE", b"q", b"x"]);
    bytes.extend(encode(&[b"AUTH", b"t0ken"]));
    bytes.extend(encode(&[b"ENQUEUE", b"q", b"y"]));
    c.send(&bytes).await;
    assert_eq!(c.read().await.code(), "UNAUTHORIZED");
    assert_eq!(c.read().await, V::Simple("OK".into()));
    assert_eq!(c.read().await, V::Int(1));
}

#[tokio::test]
async fn rounds_smaller_than_the_pipeline_still_answer_everything() {
    let limits = RespLimits {
        max_pipeline: 4,
        ..RespLimits::default()
    };
    let s = Servers::with(ServerConfig::default(), limits).await;
    let mut c = s.client().await;
    c.send(&encode(&[b"PING"]).repeat(100)).await;
    for _ in 0..100 {
        assert_eq!(c.read().await, V::Simple("PONG".into()));
    }
}
