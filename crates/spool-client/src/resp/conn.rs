//! One pipelined RESP connection.
//!
//! Callers hand a command to the writer task, which coalesces whatever is
//! queued into one write; the reader task matches answers to callers in
//! order. Reading and writing run apart, so a large command never
//! deadlocks against the server's own back-pressure. The pool lends a
//! connection to one call at a time (see `pool`), but nothing here
//! depends on that.
//!
//! Invariants: an answer goes to the caller whose command was written at
//! the same position (the waiter is queued before its bytes are written);
//! once the socket fails, every waiting and later caller gets
//! `Unavailable` and [`Conn::is_broken`] says so, so the pool replaces it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use spool_core::StoreError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};

use super::value::{self, Value};

type Waiter = oneshot::Sender<Result<Value, StoreError>>;

/// A command on its way to the writer.
struct Outgoing {
    frame: BytesMut,
    reply: Waiter,
}

/// A connection; clones share it.
#[derive(Clone, Debug)]
pub(super) struct Conn {
    commands: mpsc::UnboundedSender<Outgoing>,
    broken: Arc<AtomicBool>,
}

/// Appends a command (an array of bulk strings) to `out`.
pub(super) fn encode<A: AsRef<[u8]>>(args: &[A], out: &mut BytesMut) {
    out.put_u8(b'*');
    out.put_slice(args.len().to_string().as_bytes());
    out.put_slice(b"\r\n");
    for a in args {
        let a = a.as_ref();
        out.put_u8(b'$');
        out.put_slice(a.len().to_string().as_bytes());
        out.put_slice(b"\r\n");
        out.put_slice(a);
        out.put_slice(b"\r\n");
    }
}

pub(super) fn unreachable(e: impl std::fmt::Display) -> StoreError {
    StoreError::Unavailable(format!("cannot reach the server over RESP: {e}"))
}

fn lost() -> StoreError {
    StoreError::Unavailable("the RESP connection to the server was lost".into())
}

impl Conn {
    /// Connects to `addr` and starts the connection's reader and writer.
    pub(super) async fn open(addr: &str) -> Result<Conn, StoreError> {
        let stream = TcpStream::connect(addr).await.map_err(unreachable)?;
        stream.set_nodelay(true).map_err(unreachable)?;
        let (read, write) = stream.into_split();
        let (commands, queued) = mpsc::unbounded_channel();
        let (waiters, waiting) = mpsc::unbounded_channel();
        let broken = Arc::new(AtomicBool::new(false));
        tokio::spawn(write_loop(write, queued, waiters, broken.clone()));
        tokio::spawn(read_loop(read, waiting, broken.clone()));
        Ok(Conn { commands, broken })
    }

    pub(super) fn is_broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed) || self.commands.is_closed()
    }

    /// Sends one encoded command and waits for its answer. A RESP error
    /// answer is a `Value::Error`, not an `Err`: only the transport fails.
    pub(super) async fn call(&self, frame: BytesMut) -> Result<Value, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Outgoing { frame, reply })
            .map_err(|_| lost())?;
        answer.await.map_err(|_| lost())?
    }
}

async fn write_loop(
    mut io: OwnedWriteHalf,
    mut queued: mpsc::UnboundedReceiver<Outgoing>,
    waiters: mpsc::UnboundedSender<Waiter>,
    broken: Arc<AtomicBool>,
) {
    let mut out = BytesMut::new();
    while let Some(first) = queued.recv().await {
        let mut next = Some(first);
        // Everything already queued goes out in one write.
        while let Some(cmd) = next {
            out.extend_from_slice(&cmd.frame);
            if let Err(unsent) = waiters.send(cmd.reply) {
                let _ = unsent.0.send(Err(lost()));
            }
            next = queued.try_recv().ok();
        }
        if let Err(e) = io.write_all(&out).await {
            tracing::debug!(error = %e, "RESP write failed");
            broken.store(true, Ordering::Relaxed);
            return;
        }
        out.clear();
    }
}

async fn read_loop(
    mut io: OwnedReadHalf,
    mut waiting: mpsc::UnboundedReceiver<Waiter>,
    broken: Arc<AtomicBool>,
) {
    let mut buf = BytesMut::with_capacity(16 * 1024);
    'read: loop {
        loop {
            match value::decode(&buf) {
                Ok(Some((v, used))) => {
                    let _ = buf.split_to(used);
                    let Some(waiter) = waiting.recv().await else {
                        break 'read;
                    };
                    let _ = waiter.send(Ok(v));
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "RESP answer undecodable; dropping the connection");
                    break 'read;
                }
            }
        }
        buf.reserve(16 * 1024);
        match io.read_buf(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
    broken.store(true, Ordering::Relaxed);
    waiting.close();
    while let Some(waiter) = waiting.recv().await {
        let _ = waiter.send(Err(lost()));
    }
}
