//! Keep-alive connections after an answer given before the request body
//! was read: the connection stays usable, or the answer says
//! `Connection: close`. A client reusing connections must never find one
//! dropped without notice, whether the body arrives with the head or a
//! moment later, over HTTP/1.1 or HTTP/2. Idle connections of either
//! protocol are closed, and connections over the cap wait.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Sleep;

use spool_server::ServerConfig;

use crate::api::support::TestServer;

const BODY: &str = r#"{"payload":1}"#;

/// Requests the server answers (4xx) before reading their body.
const REJECTED: [&str; 2] = ["/v1/queues/a*b/tasks", "/v1/tasks/abc/ack"];

/// One HTTP/1.1 answer read off a raw connection: status, head, body.
async fn read_answer(stream: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed before an answer");
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |v| v.trim().parse().unwrap());
    while buf.len() < head_end + length {
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await.unwrap();
        assert!(n > 0, "the connection closed inside an answer");
        buf.extend_from_slice(&chunk[..n]);
    }
    let status = head[9..12].parse().unwrap();
    (status, head)
}

async fn rejected_then_reused_over_http1(pause: Duration) {
    let s = TestServer::start().await;
    let addr = s.addr();
    for path in REJECTED {
        let mut stream = TcpStream::connect(&addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n",
            BODY.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        tokio::time::sleep(pause).await;
        stream.write_all(BODY.as_bytes()).await.unwrap();
        let (status, head) = read_answer(&mut stream).await;
        assert!((400..500).contains(&status), "{path}: {head}");
        if head.contains("connection: close") {
            continue;
        }
        let next = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
        stream
            .write_all(next.as_bytes())
            .await
            .unwrap_or_else(|e| panic!("{path}, pause {pause:?}: the connection was dropped: {e}"));
        let (status, head) = read_answer(&mut stream).await;
        assert_eq!(status, 200, "{path}, pause {pause:?}: {head}");
    }
}

#[tokio::test]
async fn http1_connection_survives_a_rejection_when_the_body_comes_with_the_head() {
    rejected_then_reused_over_http1(Duration::ZERO).await;
}

#[tokio::test]
async fn http1_connection_survives_a_rejection_when_the_body_comes_later() {
    rejected_then_reused_over_http1(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn http1_rejection_of_a_large_unread_body_says_connection_close() {
    let s = TestServer::start().await;
    let addr = s.addr();
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /v1/queues/a*b/tasks HTTP/1.1\r\nHost: {addr}\r\n\
         Content-Type: application/json\r\nContent-Length: 8000000\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let (status, head) = read_answer(&mut stream).await;
    assert_eq!(status, 400, "{head}");
    assert!(head.contains("connection: close"), "{head}");
}

/// A body that sends its bytes after a pause.
struct Late {
    pause: Pin<Box<Sleep>>,
    data: Option<Bytes>,
}

impl Body for Late {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.pause.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        Poll::Ready(self.data.take().map(|d| Ok(Frame::data(d))))
    }
}

async fn rejected_then_reused_over_http2(pause: Duration) {
    let s = TestServer::start().await;
    let stream = TcpStream::connect(s.addr()).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    let driver = tokio::spawn(conn);
    for path in REJECTED {
        let req = hyper::Request::post(s.url(path))
            .header("content-type", "application/json")
            .header("content-length", BODY.len())
            .body(Late {
                pause: Box::pin(tokio::time::sleep(pause)),
                data: Some(Bytes::from_static(BODY.as_bytes())),
            })
            .unwrap();
        let res = sender.send_request(req).await.unwrap();
        assert!(res.status().is_client_error(), "{path}: {}", res.status());
        // Let a reset or a GOAWAY arrive before the next request.
        tokio::time::sleep(pause + Duration::from_millis(20)).await;
        let req = hyper::Request::get(s.url("/healthz"))
            .body(Late {
                pause: Box::pin(tokio::time::sleep(Duration::ZERO)),
                data: None,
            })
            .unwrap();
        let res = sender
            .send_request(req)
            .await
            .unwrap_or_else(|e| panic!("{path}, pause {pause:?}: the connection was dropped: {e}"));
        assert_eq!(res.status(), 200);
    }
    driver.abort();
}

#[tokio::test]
async fn http2_connection_survives_a_rejection_when_the_body_comes_with_the_head() {
    rejected_then_reused_over_http2(Duration::ZERO).await;
}

#[tokio::test]
async fn http2_connection_survives_a_rejection_when_the_body_comes_later() {
    rejected_then_reused_over_http2(Duration::from_millis(50)).await;
}

#[tokio::test]
async fn an_idle_http2_connection_is_closed() {
    let s = TestServer::with_config(ServerConfig {
        header_read_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    })
    .await;
    let stream = TcpStream::connect(s.addr()).await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .unwrap();
    let driver = tokio::spawn(conn);
    let req = hyper::Request::get(s.url("/healthz"))
        .body(Late {
            pause: Box::pin(tokio::time::sleep(Duration::ZERO)),
            data: None,
        })
        .unwrap();
    assert_eq!(sender.send_request(req).await.unwrap().status(), 200);
    // The server says goodbye once the connection has been idle a while.
    tokio::time::timeout(Duration::from_secs(5), driver)
        .await
        .expect("the idle HTTP/2 connection is still open")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn connections_over_the_cap_wait_to_be_accepted() {
    let s = TestServer::with_config(ServerConfig {
        max_connections: 2,
        ..ServerConfig::default()
    })
    .await;
    let addr = s.addr();
    let health = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = TcpStream::connect(&addr).await.unwrap();
        c.write_all(health.as_bytes()).await.unwrap();
        assert_eq!(read_answer(&mut c).await.0, 200);
        held.push(c);
    }
    let mut third = TcpStream::connect(&addr).await.unwrap();
    third.write_all(health.as_bytes()).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(300), read_answer(&mut third)).await;
    assert!(waited.is_err(), "a third connection was served");
    drop(held.pop());
    let answered = tokio::time::timeout(Duration::from_secs(5), read_answer(&mut third))
        .await
        .expect("served once a slot was free");
    assert_eq!(answered.0, 200);
}
