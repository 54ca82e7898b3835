//! HTTPS with rustls: HTTP/1.1 and HTTP/2 by ALPN, and refusing to start on
//! a bad certificate.

use std::path::PathBuf;

use reqwest::StatusCode;
use spool_server::{ServerConfig, TlsConfig};

use crate::api::support::TestServer;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn tls_config() -> ServerConfig {
    ServerConfig {
        tls: Some(TlsConfig {
            cert: fixture("cert.pem"),
            key: fixture("key.pem"),
        }),
        ..ServerConfig::default()
    }
}

fn trusting_client() -> reqwest::Client {
    let pem = std::fs::read(fixture("cert.pem")).unwrap();
    reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn https_serves_the_api_over_http2_and_http1() {
    let s = TestServer::with_config(tls_config()).await;
    assert!(s.base().starts_with("https://"));
    let client = trusting_client();
    let res = client
        .post(s.url("/v1/queues/secure/tasks"))
        .header("content-type", "application/json")
        .body(r#"{"payload":{"n":1}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::CREATED);
    assert_eq!(res.version(), reqwest::Version::HTTP_2, "ALPN picks h2");

    let http1 = reqwest::Client::builder()
        .add_root_certificate(
            reqwest::Certificate::from_pem(&std::fs::read(fixture("cert.pem")).unwrap()).unwrap(),
        )
        .http1_only()
        .build()
        .unwrap();
    let res = http1.get(s.url("/healthz")).send().await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.version(), reqwest::Version::HTTP_11);

    // Plain HTTP to the TLS port gets no answer.
    let plain = format!("http://{}/healthz", s.addr());
    assert!(reqwest::get(plain).await.is_err());
    // Nor does a client that does not trust the certificate.
    assert!(reqwest::get(s.url("/healthz")).await.is_err());
}

#[tokio::test]
async fn a_missing_or_bad_certificate_stops_the_server_from_starting() {
    for (cert, key) in [
        (fixture("nope.pem"), fixture("key.pem")),
        (fixture("cert.pem"), fixture("nope.pem")),
        (fixture("key.pem"), fixture("key.pem")),
        (fixture("cert.pem"), fixture("cert.pem")),
    ] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let engine = spool_testkit::server::Embedded::open();
        let config = ServerConfig {
            tls: Some(TlsConfig { cert, key }),
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
}
