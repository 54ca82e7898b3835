//! What is particular to the remote store: auth, TLS, error mapping, a
//! server that is down, long polls longer than the request timeout, exact
//! payloads and keys that need encoding.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use spool_client::{RemoteStore, RespStore};
use spool_core::{
    Ack, ClaimRequest, GroupStats, NewTask, Payload, PayloadFormat, QueueChange, QueueName, Store,
    StoreError, TaskGroup, TaskKey, TaskPatch, TaskRef,
};
use spool_server::{ServerConfig, TlsConfig};
use spool_testkit::server::Server;

async fn server(config: ServerConfig) -> Server {
    Server::builder().config(config).start().await
}

fn q(name: &str) -> QueueName {
    QueueName::new(name).unwrap()
}

#[tokio::test]
async fn the_token_is_sent_and_a_wrong_one_is_unavailable() {
    let s = server(ServerConfig {
        token: Some("t0ken".into()),
        ..ServerConfig::default()
    })
    .await;
    let good = RemoteStore::new(format!("http://{}", s.addr), Some("t0ken".into())).unwrap();
    good.enqueue(&q("a"), vec![NewTask::default()])
        .await
        .unwrap();
    assert_eq!(good.stats().await.unwrap().len(), 1);

    let bad = RemoteStore::new(format!("http://{}/", s.addr), Some("nope".into())).unwrap();
    match bad.stats().await {
        Err(StoreError::Unavailable(m)) => assert!(m.contains("unauthorized"), "{m}"),
        other => panic!("{other:?}"),
    }
    let none = RemoteStore::new(format!("http://{}", s.addr), None).unwrap();
    assert!(matches!(none.now().await, Err(StoreError::Unavailable(_))));
}

#[tokio::test]
async fn errors_map_back_to_store_errors() {
    let s = server(ServerConfig::default()).await;
    let r = RemoteStore::new(format!("http://{}", s.addr), None).unwrap();
    assert_eq!(
        r.get_queue(&q("missing")).await,
        Err(StoreError::QueueNotFound(q("missing")))
    );
    assert_eq!(
        r.get(TaskRef::Id(spool_core::TaskId(12345))).await,
        Err(StoreError::NotFound)
    );
    let settings = spool_core::QueueSettings {
        max_payload: 8,
        ..Default::default()
    };
    r.put_queue(&q("tiny"), settings.into()).await.unwrap();
    let big = NewTask::new(Payload::binary(vec![0u8; 20]));
    assert_eq!(
        r.enqueue(&q("tiny"), vec![big]).await,
        Err(StoreError::PayloadTooLarge { size: 20, max: 8 })
    );
    let out = r.enqueue(&q("w"), vec![NewTask::default()]).await.unwrap();
    let claimed = r.claim(ClaimRequest::new(q("w"), "me")).await.unwrap();
    let token = claimed[0].lease.as_ref().unwrap().token;
    assert_eq!(
        r.update(TaskRef::Id(out[0].id), TaskPatch::default()).await,
        Err(StoreError::LeaseHeld)
    );
    assert_eq!(
        r.ack(out[0].id, spool_core::LeaseToken(token.0 ^ 1), Ack::Done)
            .await,
        Err(StoreError::LeaseLost)
    );
    // The server leaves tokens out of extend answers; the client knows it.
    let extended = r
        .extend(out[0].id, token, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(extended.lease.unwrap().token, token);
    r.ack(out[0].id, token, Ack::Done).await.unwrap();
}

#[tokio::test]
async fn a_server_that_is_not_there_is_unavailable_quickly() {
    // A port that was just free: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let r = RemoteStore::new(format!("http://{addr}"), None).unwrap();
    let start = Instant::now();
    assert!(matches!(r.now().await, Err(StoreError::Unavailable(_))));
    assert!(start.elapsed() < Duration::from_secs(6));
    assert!(RemoteStore::new("ftp://x", None).is_err());
    assert!(RemoteStore::new("not a url", None).is_err());
}

#[tokio::test]
async fn a_long_poll_outlasts_the_request_timeout() {
    let s = server(ServerConfig::default()).await;
    let r = RemoteStore::builder(format!("http://{}", s.addr))
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let start = Instant::now();
    let got = r
        .claim(ClaimRequest::new(q("idle"), "w").wait(Duration::from_millis(1500)))
        .await
        .unwrap();
    assert!(got.is_empty());
    assert!(start.elapsed() >= Duration::from_millis(1400));
}

#[tokio::test]
async fn payloads_and_keys_round_trip_exactly() {
    let s = server(ServerConfig::default()).await;
    let r = RemoteStore::new(format!("http://{}", s.addr), None).unwrap();
    let text = r#"{"n":-9223372036854775808,"m":18446744073709551615,"big":123456789012345678901234567890,"f":1.50}"#;
    let key = TaskKey::new("a/b ü ..").unwrap();
    let out = r
        .enqueue(
            &q("exact"),
            vec![
                NewTask::new(Payload::json(text)).key(key.clone()),
                NewTask::new(Payload::binary(vec![0, 255, 1])),
            ],
        )
        .await
        .unwrap();
    let t = r.get(TaskRef::Key(q("exact"), key.clone())).await.unwrap();
    assert_eq!(t.id, out[0].id);
    assert_eq!(t.payload.format, PayloadFormat::Json);
    assert_eq!(&t.payload.bytes[..], text.as_bytes());
    let t = r.get(TaskRef::Id(out[1].id)).await.unwrap();
    assert_eq!(t.payload, Payload::binary(vec![0, 255, 1]));

    // `.` and `..` would be resolved away as URL segments: no key is either.
    assert!(TaskKey::new("..").is_err());
    let three = TaskKey::new("...").unwrap();
    r.enqueue(&q("exact"), vec![NewTask::default().key(three.clone())])
        .await
        .unwrap();
    r.cancel(TaskRef::Key(q("exact"), three)).await.unwrap();

    let invalid = NewTask::new(Payload::json("{not json"));
    assert!(matches!(
        r.enqueue(&q("exact"), vec![invalid]).await,
        Err(StoreError::BadRequest(_))
    ));
}

#[tokio::test]
async fn https_with_a_trusted_certificate() {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../spool-server/tests/fixtures");
    let s = server(ServerConfig {
        tls: Some(TlsConfig {
            cert: fixtures.join("cert.pem"),
            key: fixtures.join("key.pem"),
        }),
        ..ServerConfig::default()
    })
    .await;
    let pem = std::fs::read(fixtures.join("cert.pem")).unwrap();
    let r = RemoteStore::builder(format!("https://localhost:{}", s.addr.port()))
        .root_certificate_pem(pem)
        .build()
        .unwrap();
    assert!(r.now().await.is_ok());
    let untrusting =
        RemoteStore::new(format!("https://localhost:{}", s.addr.port()), None).unwrap();
    assert!(matches!(
        untrusting.now().await,
        Err(StoreError::Unavailable(_))
    ));
}

/// Both clients of one server: HTTP and RESP.
async fn both_clients(s: &Server) -> [Box<dyn Store>; 2] {
    let resp = s.resp.expect("a RESP listener").to_string();
    [
        Box::new(RemoteStore::new(format!("http://{}", s.addr), None).unwrap()),
        Box::new(RespStore::new(resp, None)),
    ]
}

#[tokio::test]
async fn groups_and_group_concurrency_round_trip_through_both_clients() {
    let s = Server::builder()
        .resp(spool_server::RespLimits::default())
        .start()
        .await;
    for (i, store) in both_clients(&s).await.iter().enumerate() {
        let queue = q(&format!("fair{i}"));
        let group = TaskGroup::new("customer 42 ü").unwrap();
        let out = store
            .enqueue(
                &queue,
                vec![
                    NewTask::default().group(group.clone()),
                    NewTask::default().group(group.clone()),
                    NewTask::default(),
                ],
            )
            .await
            .unwrap();
        let got = store.get(TaskRef::Id(out[0].id)).await.unwrap();
        assert_eq!(got.group.as_ref(), Some(&group), "client {i}");
        let plain = store.get(TaskRef::Id(out[2].id)).await.unwrap();
        assert_eq!(plain.group, None, "client {i}");

        let change = QueueChange {
            group_concurrency: Some(Some(1)),
            ..QueueChange::default()
        };
        let settings = store.put_queue(&queue, change).await.unwrap();
        assert_eq!(settings.group_concurrency, Some(1), "client {i}");
        let read = store.get_queue(&queue).await.unwrap();
        assert_eq!(read.group_concurrency, Some(1), "client {i}");

        let claimed = store
            .claim(ClaimRequest::new(queue.clone(), "w").max(10))
            .await
            .unwrap();
        assert_eq!(claimed.len(), 2, "one of the group, and the plain task");
        let groups = store.groups(&queue, 10).await.unwrap();
        assert_eq!(
            groups,
            vec![GroupStats {
                group: group.clone(),
                waiting: 1,
                leased: 1,
                rate_tokens: None,
            }],
            "client {i}"
        );
        assert!(matches!(
            store.groups(&queue, 0).await,
            Err(StoreError::BadRequest(_))
        ));

        let removed = QueueChange {
            group_concurrency: Some(None),
            ..QueueChange::default()
        };
        let settings = store.put_queue(&queue, removed).await.unwrap();
        assert_eq!(settings.group_concurrency, None, "client {i}");
    }
}
