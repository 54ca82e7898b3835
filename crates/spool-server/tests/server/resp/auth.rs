//! The token, as over HTTP: required before anything but PING, HELLO,
//! AUTH and QUIT.

use spool_server::{RespLimits, ServerConfig};

use crate::resp::support::{Servers, V};

async fn with_token() -> Servers {
    let config = ServerConfig {
        token: Some("s3cret".into()),
        ..ServerConfig::default()
    };
    Servers::with(config, RespLimits::default()).await
}

#[tokio::test]
async fn commands_need_auth_first_and_change_nothing_without_it() {
    let s = with_token().await;
    let mut c = s.client().await;
    assert_eq!(c.call(&[b"PING"]).await, V::Simple("PONG".into()));
    assert_eq!(
        c.call(&[b"ENQUEUE", b"q", b"x"]).await.code(),
        "UNAUTHORIZED"
    );
    assert_eq!(c.call(&[b"QUEUES"]).await.code(), "UNAUTHORIZED");
    assert_eq!(c.call(&[b"HELLO", b"3"]).await.code(), "UNAUTHORIZED");
    assert_eq!(c.call(&[b"AUTH", b"wrong"]).await.code(), "UNAUTHORIZED");
    assert_eq!(c.call(&[b"AUTH", b"s3cret"]).await, V::Simple("OK".into()));
    assert_eq!(c.call(&[b"QUEUES"]).await, V::Array(vec![]));
    assert_eq!(c.call(&[b"ENQUEUE", b"q", b"x"]).await, V::Int(1));
    let stats = s.store.stats().await.unwrap();
    assert_eq!(
        stats[0].counts.ready, 1,
        "only the authenticated enqueue ran"
    );
}

#[tokio::test]
async fn hello_with_auth_and_a_user_name() {
    let s = with_token().await;
    let mut c = s.client().await;
    let r = c
        .call(&[b"HELLO", b"3", b"AUTH", b"default", b"nope"])
        .await;
    assert_eq!(r.code(), "UNAUTHORIZED");
    let hello = c
        .call(&[b"HELLO", b"3", b"AUTH", b"default", b"s3cret"])
        .await;
    assert_eq!(hello.field("proto"), &V::Int(3));
    let mut c = s.client().await;
    assert_eq!(
        c.call(&[b"AUTH", b"anyone", b"s3cret"]).await,
        V::Simple("OK".into())
    );
}

#[tokio::test]
async fn without_a_token_auth_is_refused() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    assert_eq!(c.call(&[b"AUTH", b"x"]).await.code(), "BAD_REQUEST");
}
