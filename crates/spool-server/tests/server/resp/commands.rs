//! Each command's answer and the errors' stable codes.

use crate::resp::support::{Servers, V};

#[tokio::test]
async fn enqueue_claim_ack_round_trip() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    assert_eq!(c.call(&[b"PING"]).await, V::Simple("PONG".into()));
    let id = c
        .call(&[b"ENQUEUE", b"mail", b"\x00\xffbinary", b"KIND", b"send"])
        .await
        .int();
    let claimed = c
        .call(&[b"CLAIM", b"mail", b"MAX", b"10", b"WORKER", b"w1"])
        .await;
    let [task] = claimed.items() else {
        panic!("one task expected: {claimed:?}")
    };
    assert_eq!(task.field("id").int(), id);
    assert_eq!(task.field("payload"), &V::Bulk(b"\x00\xffbinary".to_vec()));
    assert_eq!(task.field("kind").text(), "send");
    assert_eq!(task.field("attempt").int(), 1);
    let token = task.field("token").text();
    let got = c.call(&[b"GET", id.to_string().as_bytes()]).await;
    assert_eq!(got.field("state"), &V::Simple("leased".into()));
    assert_eq!(got.field("lease_owner").text(), "w1");
    let extended = c
        .call(&[
            b"EXTEND",
            id.to_string().as_bytes(),
            token.as_bytes(),
            b"60000",
        ])
        .await;
    assert!(extended.int() > got.field("run_at").int());
    assert_eq!(
        c.call(&[b"ACK", id.to_string().as_bytes(), token.as_bytes()])
            .await,
        V::Simple("OK".into())
    );
    // Done means gone; a second ack finds nothing.
    let again = c
        .call(&[b"ACK", id.to_string().as_bytes(), token.as_bytes()])
        .await;
    assert_eq!(again.code(), "NOT_FOUND");
    assert_eq!(
        c.call(&[b"GET", id.to_string().as_bytes()]).await.code(),
        "NOT_FOUND"
    );
}

#[tokio::test]
async fn a_stale_or_malformed_token_is_lease_lost_and_changes_nothing() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let id = c.call(&[b"ENQUEUE", b"q", b"x"]).await.int().to_string();
    let task = c.call(&[b"CLAIM", b"q"]).await.items()[0].clone();
    let token = task.field("token").text();
    for wrong in [&b"0000000000000000"[..], b"not-a-token", b"\xff"] {
        for cmd in [&b"ACK"[..], b"RELEASE"] {
            let r = c.call(&[cmd, id.as_bytes(), wrong]).await;
            assert_eq!(r.code(), "LEASE_LOST", "{r:?}");
        }
        let r = c.call(&[b"FAIL", id.as_bytes(), wrong, b"boom"]).await;
        assert_eq!(r.code(), "LEASE_LOST");
    }
    let got = c.call(&[b"GET", id.as_bytes()]).await;
    assert_eq!(got.field("state"), &V::Simple("leased".into()));
    assert_eq!(
        c.call(&[b"RELEASE", id.as_bytes(), token.as_bytes()]).await,
        V::Simple("OK".into())
    );
    let r = c.call(&[b"ACK", b"999999", b"0000000000000000"]).await;
    assert_eq!(r.code(), "NOT_FOUND");
}

#[tokio::test]
async fn fail_retry_discard_and_reschedule() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let id = c
        .call(&[b"ENQUEUE", b"q", b"x", b"MAXATTEMPTS", b"3"])
        .await
        .int()
        .to_string();
    let token = c.call(&[b"CLAIM", b"q"]).await.items()[0]
        .field("token")
        .text();
    let r = c
        .call(&[
            b"FAIL",
            id.as_bytes(),
            token.as_bytes(),
            b"boom",
            b"RETRYAT",
            b"0",
        ])
        .await;
    assert_eq!(r, V::Simple("ready".into()));
    let token = c.call(&[b"CLAIM", b"q"]).await.items()[0]
        .field("token")
        .text();
    let r = c
        .call(&[b"FAIL", id.as_bytes(), token.as_bytes(), b"bad", b"DISCARD"])
        .await;
    assert_eq!(r, V::Simple("dead".into()));
    let got = c.call(&[b"GET", id.as_bytes()]).await;
    let errors = got.field("errors").items();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[1].field("message").text(), "bad");
    assert_eq!(
        c.call(&[b"CANCEL", id.as_bytes()]).await,
        V::Simple("OK".into())
    );

    let id = c.call(&[b"ENQUEUE", b"q", b"y"]).await.int().to_string();
    let token = c.call(&[b"CLAIM", b"q"]).await.items()[0]
        .field("token")
        .text();
    let later = b"4102444800000"; // 2100-01-01
    let r = c
        .call(&[
            b"ACK",
            id.as_bytes(),
            token.as_bytes(),
            b"RESCHEDULE",
            later,
        ])
        .await;
    assert_eq!(r, V::Simple("OK".into()));
    let got = c.call(&[b"GET", id.as_bytes()]).await;
    assert_eq!(got.field("state"), &V::Simple("scheduled".into()));
    assert_eq!(got.field("run_at").int(), 4_102_444_800_000);
}

#[tokio::test]
async fn delays_priorities_pause_and_queues() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    c.call(&[b"ENQUEUE", b"q", b"later", b"DELAY", b"600000"])
        .await
        .int();
    c.call(&[b"ENQUEUE", b"q", b"low", b"PRIORITY", b"5"])
        .await
        .int();
    let high = c
        .call(&[b"ENQUEUE", b"q", b"high", b"PRIORITY", b"-5"])
        .await
        .int();
    assert_eq!(c.call(&[b"PAUSE", b"q"]).await, V::Simple("OK".into()));
    assert_eq!(c.call(&[b"CLAIM", b"q"]).await, V::Array(vec![]));
    let queues = c.call(&[b"QUEUES"]).await;
    let q = &queues.items()[0];
    assert_eq!(q.field("name").text(), "q");
    assert_eq!(q.field("paused"), &V::Int(1));
    assert_eq!((q.field("scheduled").int(), q.field("ready").int()), (1, 2));
    c.call(&[b"RESUME", b"q"]).await;
    let claimed = c.call(&[b"CLAIM", b"q", b"MAX", b"5"]).await;
    assert_eq!(claimed.items().len(), 2);
    assert_eq!(claimed.items()[0].field("id").int(), high);
}

#[tokio::test]
async fn a_long_poll_claim_wakes_on_an_enqueue_from_another_connection() {
    let s = Servers::start().await;
    let mut worker = s.client().await;
    let mut producer = s.client().await;
    worker
        .send(&crate::resp::support::encode(&[
            b"CLAIM", b"q", b"WAIT", b"10000",
        ]))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let start = std::time::Instant::now();
    let id = producer.call(&[b"ENQUEUE", b"q", b"now"]).await.int();
    let claimed = worker.read().await;
    assert_eq!(claimed.items()[0].field("id").int(), id);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[tokio::test]
async fn what_clients_send_on_connect_is_answered() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    assert_eq!(
        c.call(&[b"CLIENT", b"SETINFO", b"LIB-NAME", b"x"]).await,
        V::Simple("OK".into())
    );
    assert_eq!(
        c.call(&[b"CLIENT", b"SETNAME", b"billing"]).await,
        V::Simple("OK".into())
    );
    assert_eq!(c.call(&[b"SELECT", b"0"]).await, V::Simple("OK".into()));
    assert_eq!(c.call(&[b"COMMAND", b"DOCS"]).await, V::Array(vec![]));
    // A client's ready check (ioredis) reads `loading` from INFO.
    let info = c.call(&[b"INFO", b"persistence"]).await.text();
    assert!(info.split("\r\n").any(|l| l == "loading:0"), "{info}");
    assert_eq!(c.call(&[b"ECHO", b"hi"]).await, V::Bulk(b"hi".to_vec()));
    assert_eq!(c.call(&[b"SELECT", b"1"]).await.code(), "BAD_REQUEST");
    // The connection's name is the default worker.
    let id = c.call(&[b"ENQUEUE", b"q", b"x"]).await.int();
    c.call(&[b"CLAIM", b"q"]).await;
    let got = c.call(&[b"GET", id.to_string().as_bytes()]).await;
    assert_eq!(got.field("lease_owner").text(), "billing");
    let hello = c.call(&[b"HELLO", b"3"]).await;
    assert!(matches!(hello, V::Map(_)), "{hello:?}");
    assert_eq!(hello.field("proto"), &V::Int(3));
    assert_eq!(hello.field("server").text(), "spool");
    // RESP3: a map with the duplicate flag, nulls and booleans.
    let first = c.call(&[b"ENQUEUE", b"q", b"x", b"KEY", b"k"]).await;
    assert_eq!(first.field("duplicate"), &V::Bool(false));
    let dup = c.call(&[b"ENQUEUE", b"q", b"y", b"KEY", b"k"]).await;
    assert_eq!(dup.field("duplicate"), &V::Bool(true));
    assert_eq!(dup.field("id"), first.field("id"));
    let got = c.call(&[b"GET", id.to_string().as_bytes()]).await;
    assert_eq!(got.field("key"), &V::Null);
    assert_eq!(c.call(&[b"QUIT"]).await, V::Simple("OK".into()));
    assert!(c.closed().await);
}

#[tokio::test]
async fn bad_arguments_are_bad_request_and_the_connection_goes_on() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    for args in [
        &[&b"NOSUCH"[..]][..],
        &[b"ENQUEUE", b"q"],
        &[b"ENQUEUE", b"bad queue!", b"x"],
        &[b"ENQUEUE", b"q", b"x", b"DELAY", b"-1"],
        &[b"ENQUEUE", b"q", b"x", b"AT", b"99999999999999999"],
        &[b"CLAIM", b"q", b"MAX", b"1001"],
        &[b"CLAIM", b"q", b"LEASE", b"0"],
        &[b"GET", b"abc"],
        &[b"ACKMANY"],
        &[b"PING", b"a", b"b"],
    ] {
        let r = c.call(args).await;
        assert_eq!(r.code(), "BAD_REQUEST", "{args:?} -> {r:?}");
    }
    assert_eq!(c.call(&[b"QUEUES"]).await, V::Array(vec![]));
}

#[tokio::test]
async fn traceparent_is_taken_at_enqueue_and_answered_by_claim_and_get() {
    let tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";
    let s = Servers::start().await;
    let mut c = s.client().await;
    let traced = c
        .call(&[b"ENQUEUE", b"tq", b"a", b"TRACEPARENT", tp.as_bytes()])
        .await
        .int();
    let plain = c.call(&[b"ENQUEUE", b"tq", b"b"]).await.int();
    let batch = c
        .call(&[
            b"ENQUEUEBATCH",
            b"tq",
            b"TASK",
            b"c",
            b"traceparent",
            other.as_bytes(),
            b"TASK",
            b"d",
        ])
        .await;
    let batched = batch.items()[0].int();

    let claimed = c.call(&[b"CLAIM", b"tq", b"MAX", b"10"]).await;
    let traceparent = |task: &V| match task {
        V::Array(flat) => flat
            .chunks(2)
            .find(|p| p[0] == V::Bulk(b"traceparent".to_vec()))
            .map(|p| p[1].text()),
        other => panic!("a task is a map: {other:?}"),
    };
    let by_id = |id: i64| {
        claimed
            .items()
            .iter()
            .find(|t| t.field("id").int() == id)
            .unwrap()
    };
    assert_eq!(claimed.items().len(), 4);
    assert_eq!(traceparent(by_id(traced)).as_deref(), Some(tp));
    assert_eq!(traceparent(by_id(batched)).as_deref(), Some(other));
    assert_eq!(traceparent(by_id(plain)), None, "only a task that has one");

    let got = c.call(&[b"GET", traced.to_string().as_bytes()]).await;
    assert_eq!(got.field("traceparent").text(), tp);
    let got = c.call(&[b"GET", plain.to_string().as_bytes()]).await;
    assert_eq!(got.field("traceparent"), &V::Null);
}

#[tokio::test]
async fn a_malformed_traceparent_is_bad_request() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    for bad in [
        &b"garbage"[..],
        b"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        b"\xff",
    ] {
        let a = c
            .call(&[b"ENQUEUE", b"tq", b"a", b"TRACEPARENT", bad])
            .await;
        assert_eq!(a.code(), "BAD_REQUEST", "{a:?}");
        let a = c
            .call(&[
                b"ENQUEUEBATCH",
                b"tq",
                b"TASK",
                b"a",
                b"TASK",
                b"b",
                b"TRACEPARENT",
                bad,
            ])
            .await;
        assert_eq!(a.code(), "BAD_REQUEST", "{a:?}");
    }
    let a = c.call(&[b"ENQUEUE", b"tq", b"a", b"TRACEPARENT"]).await;
    assert_eq!(a.code(), "BAD_REQUEST", "{a:?}");
    assert!(c.call(&[b"CLAIM", b"tq"]).await.items().is_empty());
}

#[tokio::test]
async fn leasewait_answers_lost_leases_and_wakes_on_a_cancel() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let mut leases = Vec::new();
    for _ in 0..2 {
        c.call(&[b"ENQUEUE", b"lw", b"{}"]).await;
        let claimed = c.call(&[b"CLAIM", b"lw"]).await;
        let [task] = claimed.items() else {
            panic!("one task expected: {claimed:?}")
        };
        leases.push((
            task.field("id").int().to_string(),
            task.field("token").text(),
        ));
    }
    let (a, b) = (&leases[0], &leases[1]);
    let held = c
        .call(&[b"LEASEWAIT", b"0", a.0.as_bytes(), a.1.as_bytes()])
        .await;
    assert_eq!(held, V::Array(Vec::new()));
    let bad = c
        .call(&[
            b"LEASEWAIT",
            b"5000",
            a.0.as_bytes(),
            a.1.as_bytes(),
            b.0.as_bytes(),
            b"nope",
        ])
        .await;
    assert_eq!(bad.items(), &[V::Int(b.0.parse().unwrap())]);

    let mut waiter = s.client().await;
    let (a_id, a_token) = (a.0.clone(), a.1.clone());
    let waiting = tokio::spawn(async move {
        let v = waiter
            .call(&[b"LEASEWAIT", b"10000", a_id.as_bytes(), a_token.as_bytes()])
            .await;
        (v, std::time::Instant::now())
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(
        c.call(&[b"CANCEL", a.0.as_bytes()]).await,
        V::Simple("OK".into())
    );
    let cancelled = std::time::Instant::now();
    let (lost, at) = waiting.await.unwrap();
    assert_eq!(lost.items(), &[V::Int(a.0.parse().unwrap())]);
    let late = at.saturating_duration_since(cancelled);
    assert!(late < std::time::Duration::from_millis(100), "{late:?}");
    let too_long = c.call(&[b"LEASEWAIT", b"30001", b"1", b"t"]).await;
    assert_eq!(too_long.code(), "BAD_REQUEST");
}
