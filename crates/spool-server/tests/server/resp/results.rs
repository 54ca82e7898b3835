//! Results over RESP (docs/resp.md): `ACK id token RESULT json` hands the
//! JSON to the tasks waiting for the acked one, whose replies carry it in
//! `parent_results` as `[id, json]` pairs; JSON that is not, or too big, is
//! `-BAD_REQUEST` and changes nothing.

use serde_json::{json, Value};

use crate::resp::support::{Client, Servers, V};

/// Whether a task reply (RESP2 flat array or RESP3 map) has this field.
fn has(task: &V, name: &str) -> bool {
    let key = V::Bulk(name.as_bytes().to_vec());
    match task {
        V::Map(pairs) => pairs.iter().any(|(k, _)| *k == key),
        V::Array(flat) => flat.chunks(2).any(|p| p[0] == key),
        _ => false,
    }
}

async fn get(c: &mut Client, id: &str) -> V {
    c.call(&[b"GET", id.as_bytes()]).await
}

async fn http_get(s: &Servers, id: &str) -> Value {
    reqwest::get(format!("{}/v1/tasks/{id}", s.http))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A parent and a child waiting for it in queue `q`, and the parent
/// claimed: (parent id, child id, token).
async fn parent_and_child(c: &mut Client) -> (String, String, String) {
    let parent = c.call(&[b"ENQUEUE", b"q", b"{}"]).await.int().to_string();
    let child = c
        .call(&[b"ENQUEUE", b"q", b"{}", b"AFTER", parent.as_bytes()])
        .await
        .int()
        .to_string();
    let claimed = c.call(&[b"CLAIM", b"q", b"FULL"]).await;
    let task = &claimed.items()[0];
    assert_eq!(task.field("id").int().to_string(), parent);
    (parent, child, task.field("token").text())
}

#[tokio::test]
async fn ack_result_reaches_the_waiting_tasks_reply() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let (parent, child, token) = parent_and_child(&mut c).await;
    assert!(!has(&get(&mut c, &child).await, "parent_results"));

    let r = c
        .call(&[
            b"ACK",
            parent.as_bytes(),
            token.as_bytes(),
            b"RESULT",
            br#"{"a":1}"#,
        ])
        .await;
    assert_eq!(r, V::Simple("OK".into()));

    let got = get(&mut c, &child).await;
    assert_eq!(got.field("state"), &V::Simple("ready".into()));
    let pair = V::Array(vec![
        V::Int(parent.parse().unwrap()),
        V::Bulk(br#"{"a":1}"#.to_vec()),
    ]);
    assert_eq!(got.field("parent_results"), &V::Array(vec![pair.clone()]));
    // RESP3 carries the same pairs, and so does a claim with FULL.
    assert!(matches!(c.call(&[b"HELLO", b"3"]).await, V::Map(_)));
    let got = get(&mut c, &child).await;
    assert!(matches!(got, V::Map(_)), "{got:?}");
    assert_eq!(got.field("parent_results"), &V::Array(vec![pair.clone()]));
    let claimed = c.call(&[b"CLAIM", b"q", b"FULL"]).await;
    assert_eq!(
        claimed.items()[0].field("parent_results"),
        &V::Array(vec![pair])
    );
    // And HTTP shows it as JSON.
    let t = http_get(&s, &child).await;
    assert_eq!(
        t["parent_results"],
        json!([{ "id": parent.parse::<u64>().unwrap(), "result": { "a": 1 } }])
    );
}

#[tokio::test]
async fn a_result_that_is_not_json_or_too_big_is_bad_request_and_changes_nothing() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let (parent, child, token) = parent_and_child(&mut c).await;
    let over = format!("\"{}\"", "x".repeat(4095));
    let bad: [&[&[u8]]; 4] = [
        &[b"RESULT", b"notjson"],
        &[b"RESULT", b"{\"a\":"],
        &[b"RESULT", over.as_bytes()],
        &[b"RESULT", b"1", b"RESCHEDULE", b"4102444800000"],
    ];
    for extra in bad {
        let mut args: Vec<&[u8]> = vec![b"ACK", parent.as_bytes(), token.as_bytes()];
        args.extend_from_slice(extra);
        let r = c.call(&args).await;
        assert!(
            matches!(&r, V::Error(e) if e.starts_with("BAD_REQUEST")),
            "{extra:?}: {r:?}"
        );
        // Nothing changed: the parent still leased, the child still waiting.
        let p = get(&mut c, &parent).await;
        assert_eq!(p.field("state"), &V::Simple("leased".into()));
        let ch = get(&mut c, &child).await;
        assert_eq!(ch.field("state"), &V::Simple("pending".into()));
        assert!(!has(&ch, "parent_results"), "{ch:?}");
    }
    // The connection goes on, and the lease still acks.
    let r = c.call(&[b"ACK", parent.as_bytes(), token.as_bytes()]).await;
    assert_eq!(r, V::Simple("OK".into()));
    let ch = get(&mut c, &child).await;
    assert_eq!(ch.field("state"), &V::Simple("ready".into()));
    assert!(!has(&ch, "parent_results"), "a plain ack leaves no result");
}

/// `RESULT null` is no result, as `"result": null` is over HTTP: the ack
/// completes the parent and the child holds nothing from it.
#[tokio::test]
async fn a_null_result_is_no_result() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let (parent, child, token) = parent_and_child(&mut c).await;
    let r = c
        .call(&[
            b"ACK",
            parent.as_bytes(),
            token.as_bytes(),
            b"RESULT",
            b" null ",
        ])
        .await;
    assert_eq!(r, V::Simple("OK".into()));
    let got = get(&mut c, &child).await;
    assert_eq!(got.field("state"), &V::Simple("ready".into()));
    assert!(!has(&got, "parent_results"), "{got:?}");
}
