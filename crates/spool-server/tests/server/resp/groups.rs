//! Task groups over RESP: `GROUP` on enqueue, the task maps, `QUEUE SET
//! ... GROUPCONCURRENCY` and `GROUPS`.

use crate::resp::support::{Servers, V};

#[tokio::test]
async fn groups_round_trip() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let id = c
        .call(&[b"ENQUEUE", b"q", b"x", b"GROUP", "customer 42 ü".as_bytes()])
        .await
        .int()
        .to_string();
    let batch = c
        .call(&[
            b"ENQUEUEBATCH",
            b"q",
            b"TASK",
            b"y",
            b"group",
            b"acme",
            b"TASK",
            b"z",
        ])
        .await;
    let plain = batch.items()[1].int().to_string();
    let got = c.call(&[b"GET", id.as_bytes()]).await;
    assert_eq!(got.field("group").text(), "customer 42 ü");
    assert_eq!(
        c.call(&[b"GET", plain.as_bytes()]).await.field("group"),
        &V::Null
    );

    let groups = c.call(&[b"GROUPS", b"q"]).await;
    let names: Vec<String> = groups
        .items()
        .iter()
        .map(|g| g.field("group").text())
        .collect();
    assert_eq!(names, ["acme", "customer 42 ü"], "{groups:?}");
    assert_eq!(groups.items()[0].field("waiting").int(), 1);
    assert_eq!(groups.items()[0].field("leased").int(), 0);
    let one = c.call(&[b"GROUPS", b"q", b"LIMIT", b"1"]).await;
    assert_eq!(one.items().len(), 1);

    // The short claim map names a task's group only when it has one.
    let claimed = c.call(&[b"CLAIM", b"q", b"MAX", b"10"]).await;
    let mut seen: Vec<Option<String>> = claimed
        .items()
        .iter()
        .map(|t| match t {
            V::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| *k == V::Bulk(b"group".to_vec()))
                .map(|(_, v)| v.text()),
            V::Array(flat) => flat
                .chunks(2)
                .find(|p| p[0] == V::Bulk(b"group".to_vec()))
                .map(|p| p[1].text()),
            other => panic!("a task map expected, got {other:?}"),
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [None, Some("acme".into()), Some("customer 42 ü".into())]
    );
    let leased = c.call(&[b"GROUPS", b"q"]).await;
    assert_eq!(leased.items()[0].field("leased").int(), 1);
}

#[tokio::test]
async fn group_concurrency_is_set_shown_and_removed() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let set = c
        .call(&[b"QUEUE", b"SET", b"fair", b"GROUPCONCURRENCY", b"2"])
        .await;
    assert_eq!(set.field("group_concurrency").int(), 2);
    let got = c.call(&[b"QUEUE", b"GET", b"fair"]).await;
    assert_eq!(got.field("group_concurrency").int(), 2);
    let kept = c
        .call(&[b"QUEUE", b"SET", b"fair", b"MAXLEASED", b"9"])
        .await;
    assert_eq!(kept.field("group_concurrency").int(), 2);
    let off = c
        .call(&[b"QUEUE", b"SET", b"fair", b"groupconcurrency", b"off"])
        .await;
    assert_eq!(off.field("group_concurrency"), &V::Null);
    assert_eq!(off.field("max_leased").int(), 9);
}

#[tokio::test]
async fn bad_groups_and_limits_are_refused() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let long = "g".repeat(129);
    for args in [
        &[&b"ENQUEUE"[..], b"q", b"x", b"GROUP", b""][..],
        &[b"ENQUEUE", b"q", b"x", b"GROUP", b".."],
        &[b"ENQUEUE", b"q", b"x", b"GROUP", long.as_bytes()],
        &[b"ENQUEUE", b"q", b"x", b"GROUP", b"\xff"],
        &[b"ENQUEUE", b"q", b"x", b"GROUP"],
        &[b"GROUPS", b"q", b"LIMIT", b"0"],
        &[b"GROUPS", b"q", b"LIMIT", b"1001"],
        &[b"GROUPS", b"q", b"TOP", b"3"],
        &[b"GROUPS"],
        &[b"QUEUE", b"SET", b"q", b"GROUPCONCURRENCY", b"0"],
        &[b"QUEUE", b"SET", b"q", b"GROUPCONCURRENCY", b"none of them"],
    ] {
        let r = c.call(args).await;
        assert_eq!(r.code(), "BAD_REQUEST", "{args:?}: {r:?}");
    }
    let queues = c.call(&[b"QUEUES"]).await;
    assert_eq!(queues.items().len(), 0, "nothing was enqueued: {queues:?}");
}
