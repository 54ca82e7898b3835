//! Requests a web page makes a browser send: a cross-site POST (a form or
//! `fetch` from another origin) and DNS rebinding (the page's own host
//! name resolving to the server) are refused; clients that are not
//! browsers, and the server's own origin, are not affected.

use reqwest::{Method, StatusCode};
use spool_server::ServerConfig;

use crate::api::support::TestServer;

async fn paused(s: &TestServer) -> bool {
    s.get("/v1/queues/q").await.json["paused"] == true
}

#[tokio::test]
async fn a_cross_site_post_cannot_pause_a_queue() {
    let s = TestServer::start().await;
    s.send(Method::PUT, "/v1/queues/q", Some("{}")).await;
    // What a plain HTML form on another site sends: no body, no JSON.
    let a = s
        .client
        .post(s.url("/v1/queues/q/pause"))
        .header("origin", "http://attacker.example")
        .header("content-type", "application/x-www-form-urlencoded")
        .send()
        .await
        .unwrap();
    let a = crate::api::support::Answer::from(a).await;
    a.assert_error(403, "forbidden");
    assert!(!paused(&s).await, "a cross-site form paused the queue");
    // The server's own origin, and clients that send none, may.
    let own = s
        .client
        .post(s.url("/v1/queues/q/pause"))
        .header("origin", s.base().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(own.status(), StatusCode::NO_CONTENT);
    let plain = s.post("/v1/queues/q/resume", "").await;
    assert_eq!(plain.status, StatusCode::NO_CONTENT, "{}", plain.text);
    assert!(!paused(&s).await);
}

#[tokio::test]
async fn a_rebound_host_name_is_refused_without_a_token() {
    let s = TestServer::start().await;
    let port = s.addr().rsplit_once(':').unwrap().1.to_string();
    let get = |host: String| {
        s.client
            .get(s.url("/v1/queues"))
            .header("host", host)
            .send()
    };
    let rebound =
        crate::api::support::Answer::from(get(format!("attacker.example:{port}")).await.unwrap())
            .await;
    rebound.assert_error(403, "forbidden");
    for host in [s.addr(), format!("localhost:{port}")] {
        assert_eq!(get(host.clone()).await.unwrap().status(), 200, "{host}");
    }
    // Probes may use any name.
    let probe = s
        .client
        .get(s.url("/healthz"))
        .header("host", "spool.internal")
        .send()
        .await
        .unwrap();
    assert_eq!(probe.status(), 200);
}

#[tokio::test]
async fn a_host_name_is_served_with_a_token() {
    let s = TestServer::with_config(ServerConfig {
        token: Some("sekrit".into()),
        ..ServerConfig::default()
    })
    .await;
    let a = s
        .client
        .get(s.url("/v1/queues"))
        .header("host", "spool.example")
        .bearer_auth("sekrit")
        .send()
        .await
        .unwrap();
    assert_eq!(a.status(), 200);
}
