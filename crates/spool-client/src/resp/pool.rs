//! The connections of a [`RespStore`](super::RespStore).
//!
//! Each call borrows a connection of its own from an idle list (opening
//! one when the list is empty) and gives it back once answered. The
//! server runs one connection's commands in order, each after the
//! previous one's group commit, so concurrent callers sharing a
//! connection would wait for each other's commits; on connections of
//! their own their commands share one group commit instead. A claim that
//! long polls holds its connection for its wait, as `BLPOP` does.
//!
//! Invariants: every connection has said `HELLO 3` (and `AUTH`, with a
//! token) before it carries a command; a broken connection is never
//! reused; a connection whose answer was not read (the caller gave up or
//! timed out) is dropped, never reused out of step.

use std::sync::Mutex;
use std::time::Duration;

use bytes::BytesMut;
use spool_core::StoreError;

use super::conn::{self, Conn};
use super::value::Value;

#[derive(Debug)]
pub(super) struct Pool {
    addr: String,
    token: Option<String>,
    timeout: Duration,
    /// Most idle connections kept for reuse.
    max_idle: usize,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    pub(super) fn new(
        addr: String,
        token: Option<String>,
        timeout: Duration,
        max_idle: usize,
    ) -> Pool {
        Pool {
            addr,
            token,
            timeout,
            max_idle,
            idle: Mutex::new(Vec::new()),
        }
    }

    async fn open(&self) -> Result<Conn, StoreError> {
        let c = tokio::time::timeout(self.timeout, Conn::open(&self.addr))
            .await
            .map_err(conn::unreachable)??;
        let mut hello = vec!["HELLO", "3"];
        if let Some(token) = &self.token {
            hello.extend(["AUTH", "default", token]);
        }
        let mut frame = BytesMut::new();
        conn::encode(&hello, &mut frame);
        match c.call(frame).await? {
            Value::Error(e) => Err(super::decode::error(&e, crate::http::Target::Task)),
            _ => Ok(c),
        }
    }

    /// Sends `frame`, which may block on the server for up to `wait`, on a
    /// connection of its own, and waits for the answer.
    pub(super) async fn call(&self, frame: BytesMut, wait: Duration) -> Result<Value, StoreError> {
        let reused = loop {
            let popped = self.idle.lock().map(|mut idle| idle.pop()).unwrap_or(None);
            match popped {
                Some(c) if c.is_broken() => continue,
                other => break other,
            }
        };
        let c = match reused {
            Some(c) => c,
            None => self.open().await?,
        };
        let limit = self.timeout + wait;
        let v = tokio::time::timeout(limit, c.call(frame))
            .await
            .map_err(|_| {
                StoreError::Unavailable(format!("no answer over RESP within {limit:?}"))
            })??;
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < self.max_idle {
                idle.push(c);
            }
        }
        Ok(v)
    }
}
