//! A server under test and helpers to talk to it.

use std::sync::Arc;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use spool_core::Store;
use spool_server::ServerConfig;
use spool_testkit::server::Server;

/// A running server and an HTTP client for it; stops when dropped.
pub(crate) struct TestServer {
    pub client: reqwest::Client,
    server: Server,
}

impl TestServer {
    pub(crate) async fn start() -> Self {
        Self::with_config(ServerConfig::default()).await
    }

    pub(crate) async fn with_config(config: ServerConfig) -> Self {
        Self::around(Server::builder().config(config).start().await)
    }

    /// Serves `store`, keeping `keep` (what the store lives in) until the
    /// server is dropped.
    pub(crate) async fn serve(
        store: Arc<dyn Store>,
        config: ServerConfig,
        keep: impl std::any::Any + Send + Sync,
    ) -> Self {
        let server = Server::builder().config(config).store(store, keep);
        Self::around(server.start().await)
    }

    fn around(server: Server) -> Self {
        TestServer {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .build()
                .unwrap(),
            server,
        }
    }

    /// `http://ADDR` (`https://` with TLS), no trailing slash.
    pub(crate) fn base(&self) -> &str {
        &self.server.base
    }

    pub(crate) fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    pub(crate) fn addr(&self) -> String {
        self.server.addr.to_string()
    }

    /// Sends `body` as JSON text (not re-encoded, so tests control every byte).
    pub(crate) async fn send(&self, method: Method, path: &str, body: Option<&str>) -> Answer {
        let mut req = self.client.request(method, self.url(path));
        if let Some(body) = body {
            req = req
                .header("content-type", "application/json")
                .body(body.to_string());
        }
        Answer::from(req.send().await.unwrap()).await
    }

    pub(crate) async fn get(&self, path: &str) -> Answer {
        self.send(Method::GET, path, None).await
    }

    pub(crate) async fn post(&self, path: &str, body: &str) -> Answer {
        self.send(Method::POST, path, Some(body)).await
    }

    /// Enqueues one task and returns its id.
    pub(crate) async fn enqueue(&self, queue: &str, body: &str) -> u64 {
        let a = self.post(&format!("/v1/queues/{queue}/tasks"), body).await;
        assert_eq!(a.status, StatusCode::CREATED, "{}", a.text);
        a.json["tasks"][0]["id"].as_u64().unwrap()
    }

    /// Claims one task and returns (id, token).
    pub(crate) async fn claim_one(&self, queue: &str) -> (u64, String) {
        let a = self
            .post(&format!("/v1/queues/{queue}/claim"), r#"{"worker":"w1"}"#)
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text);
        let t = &a.json["tasks"][0];
        (
            t["id"].as_u64().unwrap(),
            t["lease"]["token"].as_str().unwrap().to_string(),
        )
    }

    /// Every queue's counts, for before/after comparisons (without the
    /// oldest ready age, which grows by itself).
    pub(crate) async fn counts(&self) -> Value {
        let mut a = self.get("/v1/queues").await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.text);
        if let Some(queues) = a.json["queues"].as_array_mut() {
            for q in queues {
                if let Some(q) = q.as_object_mut() {
                    q.remove("oldest_ready_age_ms");
                }
            }
        }
        a.json
    }
}

/// A response, read whole.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
    /// The body parsed as JSON (`Null` when it is not JSON).
    pub json: Value,
}

impl Answer {
    pub(crate) async fn from(res: reqwest::Response) -> Self {
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Answer {
            status,
            headers,
            text,
            json,
        }
    }

    /// Asserts the API's error shape with this status and code.
    pub(crate) fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.text);
        assert_eq!(self.json["error"]["code"], code, "body: {}", self.text);
        let message = self.json["error"]["message"].as_str().unwrap_or("");
        assert!(!message.is_empty(), "empty message: {}", self.text);
        let ct = self
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        assert!(ct.starts_with("application/json"), "content-type {ct}");
    }
}

/// True for `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn is_millis_utc(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'.',
            23 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Sends `head` (request line and headers, without the final blank line)
/// and `body` over a fresh TCP connection, so tests can send what no HTTP
/// client library would (dot segments, bad methods, lying lengths).
pub(crate) async fn raw(addr: &str, head: &str, body: &[u8]) -> Answer {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("{head}\r\nHost: {addr}\r\nConnection: close\r\n\r\n").into_bytes();
    req.extend_from_slice(body);
    // The server may answer and close before reading everything: a failed
    // write is expected then, and the answer is still there to read.
    let _ = stream.write_all(&req).await;
    let mut buf = Vec::new();
    let _ = stream.read_to_end(&mut buf).await;
    parse_raw(&buf)
}

fn parse_raw(buf: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(buf).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let mut headers = reqwest::header::HeaderMap::new();
    for line in lines {
        if let Some((k, v)) = line.split_once(':') {
            if let (Ok(k), Ok(v)) = (
                reqwest::header::HeaderName::from_bytes(k.trim().as_bytes()),
                reqwest::header::HeaderValue::from_str(v.trim()),
            ) {
                headers.append(k, v);
            }
        }
    }
    let json = serde_json::from_str(body).unwrap_or(Value::Null);
    Answer {
        status: StatusCode::from_u16(status).unwrap(),
        headers,
        text: body.to_string(),
        json,
    }
}
