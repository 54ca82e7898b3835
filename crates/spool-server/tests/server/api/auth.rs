//! Bearer-token rules: enforced everywhere but /healthz when configured.

use reqwest::StatusCode;
use spool_server::ServerConfig;

use crate::api::support::{Answer, TestServer};

async fn with_token() -> TestServer {
    TestServer::with_config(ServerConfig {
        token: Some("s3cret-token".into()),
        ..ServerConfig::default()
    })
    .await
}

async fn get(s: &TestServer, path: &str, auth: Option<&str>) -> Answer {
    let mut req = s.client.get(s.url(path));
    if let Some(auth) = auth {
        req = req.header("authorization", auth);
    }
    Answer::from(req.send().await.unwrap()).await
}

#[tokio::test]
async fn a_configured_token_is_required_on_every_path_but_healthz() {
    let s = with_token().await;
    for path in [
        "/v1/queues",
        "/v1/time",
        "/metrics",
        "/",
        "/openapi.json",
        "/v1/tasks/1",
        "/no/such/route",
    ] {
        for auth in [
            None,
            Some("Bearer wrong"),
            Some("Bearer s3cret-token-and-more"),
            Some("Bearer s3cret-toke"),
            Some("Basic czNjcmV0LXRva2Vu"),
            Some("s3cret-token"),
            Some("Bearer"),
        ] {
            let a = get(&s, path, auth).await;
            a.assert_error(401, "unauthorized");
            assert_eq!(a.headers["www-authenticate"], "Bearer", "{path}");
        }
    }
    let a = get(&s, "/healthz", None).await;
    assert_eq!(a.status, StatusCode::OK);

    for (path, want) in [
        ("/v1/queues", 200),
        ("/metrics", 200),
        ("/", 200),
        ("/openapi.json", 200),
        ("/v1/tasks/1", 404),
        ("/no/such/route", 404),
    ] {
        let a = get(&s, path, Some("Bearer s3cret-token")).await;
        assert_eq!(a.status.as_u16(), want, "{path}: {}", a.text);
        let a = get(&s, path, Some("bearer s3cret-token")).await;
        assert_eq!(
            a.status.as_u16(),
            want,
            "scheme is case-insensitive: {path}"
        );
    }
}

#[tokio::test]
async fn writes_without_the_token_change_nothing() {
    let s = with_token().await;
    let a = Answer::from(
        s.client
            .post(s.url("/v1/queues/q/tasks"))
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap(),
    )
    .await;
    a.assert_error(401, "unauthorized");
    let a = get(&s, "/v1/queues", Some("Bearer s3cret-token")).await;
    assert_eq!(a.json["queues"], serde_json::json!([]));
}

#[tokio::test]
async fn an_empty_token_is_a_configuration_error() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let engine = spool_testkit::server::Embedded::open();
    let config = ServerConfig {
        token: Some(String::new()),
        ..ServerConfig::default()
    };
    let r = spool_server::run(
        listener,
        spool_server::AppState::new(engine.store.clone()),
        config,
        async {},
    )
    .await;
    assert!(r.is_err());
}
