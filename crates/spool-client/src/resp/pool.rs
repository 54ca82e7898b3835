//! The connections of a [`RespStore`](super::RespStore).
//!
//! Short commands share a few pipelined connections, picked in turn, so
//! concurrent callers batch into the same writes and the server's group
//! commits. A claim that long polls blocks the connection it is sent on
//! (as `BLPOP` does), so it takes a connection of its own from an idle
//! list and gives it back afterwards.
//!
//! Invariants: every connection has said `HELLO 3` (and `AUTH`, with a
//! token) before it carries a command; a broken connection is replaced on
//! next use; a long-poll connection whose answer was not read (the caller
//! gave up) is dropped, never reused out of step.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bytes::BytesMut;
use spool_core::StoreError;

use super::conn::{self, Conn};
use super::value::Value;

/// Most idle long-poll connections kept for reuse.
const MAX_IDLE: usize = 64;

#[derive(Debug)]
pub struct Pool {
    addr: String,
    token: Option<String>,
    timeout: Duration,
    shared: Vec<tokio::sync::Mutex<Option<Conn>>>,
    turn: AtomicUsize,
    idle: Mutex<Vec<Conn>>,
}

impl Pool {
    pub fn new(addr: String, token: Option<String>, timeout: Duration, shared: usize) -> Pool {
        Pool {
            addr,
            token,
            timeout,
            shared: (0..shared.max(1))
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
            turn: AtomicUsize::new(0),
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

    /// Sends `frame` on a shared connection.
    pub async fn call(&self, frame: BytesMut) -> Result<Value, StoreError> {
        let slot = &self.shared[self.turn.fetch_add(1, Ordering::Relaxed) % self.shared.len()];
        let c = {
            let mut held = slot.lock().await;
            match held.as_ref() {
                Some(c) if !c.is_broken() => c.clone(),
                _ => {
                    let c = self.open().await?;
                    *held = Some(c.clone());
                    c
                }
            }
        };
        self.timed(&c, frame, Duration::ZERO).await
    }

    /// Sends `frame`, which may block for up to `wait`, on a connection of
    /// its own.
    pub async fn call_blocking(
        &self,
        frame: BytesMut,
        wait: Duration,
    ) -> Result<Value, StoreError> {
        let reused = self.idle.lock().map(|mut idle| idle.pop()).unwrap_or(None);
        let c = match reused {
            Some(c) if !c.is_broken() => c,
            _ => self.open().await?,
        };
        let v = self.timed(&c, frame, wait).await?;
        if let Ok(mut idle) = self.idle.lock() {
            if idle.len() < MAX_IDLE {
                idle.push(c);
            }
        }
        Ok(v)
    }

    async fn timed(&self, c: &Conn, frame: BytesMut, wait: Duration) -> Result<Value, StoreError> {
        tokio::time::timeout(self.timeout + wait, c.call(frame))
            .await
            .map_err(|_| {
                StoreError::Unavailable(format!(
                    "no answer over RESP within {:?}",
                    self.timeout + wait
                ))
            })?
    }
}
