//! Sending requests and reading answers: one pooled keep-alive client, the
//! bearer token on every request, and the server's error codes mapped back
//! to [`StoreError`] variants.
//!
//! Transport failures (refused, reset, timed out) and 503/429 answers are
//! `Unavailable`: the caller may retry. An answer the client cannot read is
//! `Internal`: retrying will not help.

use std::time::Duration;

use bytes::Bytes;
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Deserialize;
use spool_core::{QueueName, StoreError};

/// Why a [`crate::RemoteStore`] could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The base URL does not parse, or its scheme is not http or https.
    #[error("invalid base URL {url:?}: {reason}")]
    BadUrl {
        /// The base URL as given, without a trailing `/`.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The token holds characters an HTTP header cannot carry.
    #[error("invalid token: {0}")]
    BadToken(String),
    /// A root certificate is not a PEM certificate.
    #[error("invalid root certificate: {0}")]
    BadCertificate(String),
    /// The HTTP client refused its configuration (its TLS setup, say).
    #[error("cannot build the HTTP client: {0}")]
    Http(String),
}

/// The error object of an error answer.
#[derive(Debug, Deserialize)]
pub(crate) struct ErrorDetail {
    pub code: String,
    pub message: String,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

/// What a `not_found` means for the call that got it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target<'a> {
    /// A task-level call: the task is gone.
    Task,
    /// A queue-level call: the queue does not exist.
    Queue(&'a QueueName),
}

/// The `StoreError` for an error code and message.
pub(crate) fn from_code(code: &str, message: String, target: Target<'_>) -> StoreError {
    match code {
        "not_found" => match target {
            Target::Queue(q) => StoreError::QueueNotFound(q.clone()),
            Target::Task => StoreError::NotFound,
        },
        "lease_lost" => StoreError::LeaseLost,
        "lease_held" => StoreError::LeaseHeld,
        "bad_request" => StoreError::BadRequest(message),
        "payload_too_large" => {
            let (size, max) = sizes(&message);
            StoreError::PayloadTooLarge { size, max }
        }
        "unavailable" | "overloaded" | "request_timeout" => StoreError::Unavailable(message),
        // Retrying with the same token will not help, but the runtime treats
        // `Unavailable` as "back off and log", which is what a wrong token
        // needs until an operator fixes it.
        "unauthorized" => StoreError::Unavailable(format!("unauthorized: {message}")),
        _ => StoreError::Internal(format!("{code}: {message}")),
    }
}

/// The two numbers of "payload of N bytes exceeds … max_payload of M
/// bytes"; zero where the message does not say (a body over the server's
/// limit).
fn sizes(message: &str) -> (u64, u64) {
    let mut numbers = message
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse::<u64>().ok());
    match (numbers.next(), numbers.next()) {
        (Some(size), Some(max)) if message.contains("max_payload") => (size, max),
        _ => (0, 0),
    }
}

/// The `StoreError` for an answer that is not a success.
fn from_answer(status: StatusCode, body: &[u8], target: Target<'_>) -> StoreError {
    if let Ok(ErrorBody { error }) = serde_json::from_slice::<ErrorBody>(body) {
        return from_code(&error.code, error.message, target);
    }
    // Not our JSON: a proxy or load balancer answered.
    let message = format!("HTTP {status} without an error body");
    match status {
        StatusCode::BAD_GATEWAY
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT
        | StatusCode::TOO_MANY_REQUESTS => StoreError::Unavailable(message),
        StatusCode::PAYLOAD_TOO_LARGE => StoreError::PayloadTooLarge { size: 0, max: 0 },
        _ => StoreError::Internal(message),
    }
}

fn transport(e: reqwest::Error) -> StoreError {
    StoreError::Unavailable(format!("cannot reach the server: {e}"))
}

/// The HTTP side of a remote store.
#[derive(Clone, Debug)]
pub(crate) struct Http {
    client: reqwest::Client,
    /// The base URL without a trailing slash.
    base: String,
    timeout: Duration,
}

impl Http {
    pub(crate) fn new(client: reqwest::Client, base: String, timeout: Duration) -> Self {
        Http {
            client,
            base,
            timeout,
        }
    }

    /// A request to `path` (already encoded, starting with `/`), bounded by
    /// the request timeout plus `extra` (a long poll's wait).
    pub(crate) fn request(&self, method: Method, path: &str, extra: Duration) -> RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base))
            .timeout(self.timeout.saturating_add(extra))
    }

    /// Sends and returns the body of a success; maps every failure.
    pub(crate) async fn send(
        &self,
        req: RequestBuilder,
        target: Target<'_>,
    ) -> Result<Bytes, StoreError> {
        let res = req.send().await.map_err(transport)?;
        let status = res.status();
        let body = res.bytes().await.map_err(transport)?;
        if status.is_success() {
            Ok(body)
        } else {
            Err(from_answer(status, &body, target))
        }
    }
}

/// Parses a success body, borrowing raw payloads from it.
pub(crate) fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, StoreError> {
    serde_json::from_slice(body)
        .map_err(|e| StoreError::Internal(format!("the server sent an unreadable answer: {e}")))
}

/// Percent-encodes one path segment: everything but the unreserved
/// characters. (`.` and `..` cannot be sent at all; see `ref_path`.)
pub(crate) fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        let keep = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'~' | b':' | b'.');
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded() {
        assert_eq!(segment("emails.v2:hi"), "emails.v2:hi");
        assert_eq!(segment("a/b c"), "a%2Fb%20c");
        assert_eq!(segment("ü"), "%C3%BC");
    }

    #[test]
    fn codes_map_back() {
        let q = QueueName::new("q").map_err(|e| e.to_string());
        let Ok(q) = q else { return };
        assert_eq!(
            from_code("not_found", String::new(), Target::Queue(&q)),
            StoreError::QueueNotFound(q.clone())
        );
        assert_eq!(
            from_code("not_found", String::new(), Target::Task),
            StoreError::NotFound
        );
        assert_eq!(
            from_code("lease_lost", String::new(), Target::Task),
            StoreError::LeaseLost
        );
        assert_eq!(
            from_code(
                "payload_too_large",
                "payload of 2000 bytes exceeds the queue's max_payload of 1024 bytes".into(),
                Target::Task
            ),
            StoreError::PayloadTooLarge {
                size: 2000,
                max: 1024
            }
        );
        assert!(matches!(
            from_answer(StatusCode::BAD_GATEWAY, b"<html>", Target::Task),
            StoreError::Unavailable(_)
        ));
    }
}
