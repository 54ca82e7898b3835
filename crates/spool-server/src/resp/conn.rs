//! One RESP connection: read, decode, run, answer, until the client leaves.
//!
//! Back-pressure: while a round of commands runs, nothing more is read, and
//! a round holds at most `max_pipeline` commands; what the buffer holds is
//! at most one frame (bounded by [`FrameLimits`]) plus one read. A client
//! that pipelines faster than the store answers fills its own socket
//! buffers, not the server's memory.
//!
//! Timeouts: a connection with nothing buffered is closed after
//! `idle_timeout` of silence; one holding part of a command, with an error,
//! once `partial_timeout` has passed since that command's first byte
//! arrived, however it trickles in meanwhile. A malformed frame is answered with a
//! `BAD_REQUEST` error, after the complete commands before it, and the
//! connection is closed: nothing of the malformed frame ran.

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use super::exec::{self, Session};
use super::frame::{self, FrameLimits};
use super::reply::{Proto, Reply};
use super::RespLimits;
use crate::state::AppState;

/// How much is read at a time (more when a frame is larger).
const READ_CHUNK: usize = 16 * 1024;

/// Serves one connection until the client closes it, sends `QUIT`, breaks
/// the protocol, times out or `closing` fires while it is idle.
pub(super) async fn serve<S>(
    mut io: S,
    st: AppState,
    limits: RespLimits,
    mut session: Session,
    mut closing: tokio::sync::watch::Receiver<bool>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    // A command carries at most what one HTTP request may.
    let frames = FrameLimits {
        max_bulk: st.config().max_body,
        max_frame: st.config().max_body,
        ..limits.frame
    };
    let mut buf = BytesMut::with_capacity(READ_CHUNK);
    let mut out = BytesMut::with_capacity(READ_CHUNK);
    // When the first byte of the command the buffer holds part of arrived.
    let mut partial_since: Option<Instant> = None;
    loop {
        let mut round = Vec::new();
        let mut broken = None;
        while round.len() < limits.max_pipeline {
            match frame::parse(&buf, &frames) {
                Ok(Some(f)) => {
                    partial_since = None;
                    let args = frame::take(&mut buf, &f);
                    if !args.is_empty() {
                        round.push(args);
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    broken = Some(e);
                    break;
                }
            }
        }
        if !round.is_empty() {
            exec::round(&st, &mut session, round, &mut out).await;
            io.write_all(&out).await?;
            out.clear();
            if session.quit {
                return io.shutdown().await;
            }
            continue;
        }
        if let Some(e) = broken {
            return refuse(&mut io, session.proto, &format!("protocol error: {e}")).await;
        }
        let partial = !buf.is_empty();
        let deadline = if partial {
            *partial_since.get_or_insert_with(Instant::now) + limits.partial_timeout
        } else {
            Instant::now() + limits.idle_timeout
        };
        buf.reserve(READ_CHUNK);
        let read = tokio::select! {
            r = tokio::time::timeout_at(deadline, io.read_buf(&mut buf)) => r,
            _ = closing.changed(), if !partial => return io.shutdown().await,
        };
        match read {
            Ok(Ok(0)) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) if partial => {
                return refuse(&mut io, session.proto, "timed out inside a command").await
            }
            Err(_) => return io.shutdown().await,
        }
    }
}

/// Answers a last error and closes.
async fn refuse<S: AsyncWrite + Unpin>(io: &mut S, proto: Proto, why: &str) -> std::io::Result<()> {
    let mut out = BytesMut::new();
    Reply::bad_request(why).encode(proto, &mut out);
    io.write_all(&out).await?;
    io.shutdown().await
}
