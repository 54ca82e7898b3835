//! Limits and bad input: an error, the connection closed, nothing changed.

use std::time::Duration;

use tokio::io::AsyncWriteExt;

use spool_server::resp::frame::FrameLimits;
use spool_server::{RespLimits, ServerConfig};

use crate::resp::support::{encode, Client, Servers, V};

async fn small() -> Servers {
    let config = ServerConfig {
        max_body: 1024,
        ..ServerConfig::default()
    };
    let limits = RespLimits {
        frame: FrameLimits {
            max_args: 8,
            ..FrameLimits::default()
        },
        max_connections: 3,
        idle_timeout: Duration::from_millis(300),
        partial_timeout: Duration::from_millis(300),
        ..RespLimits::default()
    };
    Servers::with(config, limits).await
}

async fn nothing_enqueued(s: &Servers) {
    assert!(s
        .store
        .stats()
        .await
        .unwrap()
        .iter()
        .all(|q| q.counts.total() == 0));
}

#[tokio::test]
async fn a_bulk_over_the_limit_is_refused_before_it_is_read() {
    let s = small().await;
    let mut c = s.client().await;
    c.send(b"*3\r\n$7\r\nENQUEUE\r\n$1\r\nq\r\n$2000\r\n").await;
    let r = c.read().await;
    assert_eq!(r.code(), "BAD_REQUEST");
    assert!(r.text().contains("2000"), "{r:?}");
    assert!(c.closed().await);
    nothing_enqueued(&s).await;
}

#[tokio::test]
async fn arguments_over_the_body_limit_together_are_refused_before_they_are_read() {
    let s = small().await;
    let mut c = s.client().await;
    // Each payload is within the 1,024-byte limit; the second takes the
    // command past it, and is refused on its declared length alone.
    let mut bytes = b"*4\r\n$11\r\nENQUEUEMANY\r\n$1\r\nq\r\n$600\r\n".to_vec();
    bytes.extend([b'x'; 600]);
    bytes.extend(b"\r\n$600\r\n");
    c.send(&bytes).await;
    let r = c.read().await;
    assert_eq!(r.code(), "BAD_REQUEST");
    assert!(r.text().contains("1024 bytes"), "{r:?}");
    assert!(c.closed().await);
    nothing_enqueued(&s).await;
}

#[tokio::test]
async fn too_many_arguments_are_refused() {
    let s = small().await;
    let mut c = s.client().await;
    c.send(b"*9\r\n").await;
    assert_eq!(c.read().await.code(), "BAD_REQUEST");
    assert!(c.closed().await);
}

#[tokio::test]
async fn a_malformed_frame_after_good_commands_runs_only_the_good_ones() {
    let s = small().await;
    let mut c = s.client().await;
    let mut bytes = encode(&[b"ENQUEUE", b"q", b"good"]);
    bytes.extend(b"*2\r\n$7\r\nENQUEUE\r\n:1\r\n");
    bytes.extend(encode(&[b"ENQUEUE", b"q", b"never"]));
    c.send(&bytes).await;
    assert_eq!(c.read().await, V::Int(1));
    assert_eq!(c.read().await.code(), "BAD_REQUEST");
    assert!(c.closed().await);
    assert_eq!(s.store.stats().await.unwrap()[0].counts.ready, 1);
}

#[tokio::test]
async fn a_command_left_half_sent_times_out_with_an_error() {
    let s = small().await;
    let mut c = s.client().await;
    c.send(b"*3\r\n$7\r\nENQUEUE\r\n$1\r\nq\r\n$5\r\nhel").await;
    let r = c.read().await;
    assert_eq!(r.code(), "BAD_REQUEST");
    assert!(r.text().contains("timed out"), "{r:?}");
    assert!(c.closed().await);
    nothing_enqueued(&s).await;
}

#[tokio::test]
async fn a_command_trickled_in_times_out_from_its_first_byte() {
    let s = small().await;
    let mut c = s.client().await;
    c.send(b"*3\r\n$7\r\nENQUEUE\r\n$1\r\nq\r\n$40\r\n").await;
    let started = std::time::Instant::now();
    // One byte every 100 ms: each read is well within the 300-ms limit,
    // the command as a whole is not.
    let r = loop {
        if let Ok(answer) = tokio::time::timeout(Duration::from_millis(100), c.read()).await {
            break answer;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "no answer while the command trickled in"
        );
        // The server may have closed meanwhile: its answer is read next.
        let _ = c.io.write_all(b"x").await;
    };
    assert_eq!(r.code(), "BAD_REQUEST");
    assert!(r.text().contains("timed out"), "{r:?}");
    nothing_enqueued(&s).await;
}

#[tokio::test]
async fn an_idle_connection_is_closed() {
    let s = small().await;
    let mut c = s.client().await;
    assert_eq!(c.call(&[b"PING"]).await, V::Simple("PONG".into()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(c.closed().await);
}

#[tokio::test]
async fn a_client_that_does_not_read_its_answers_is_held_back() {
    let s = Servers::start().await;
    let mut c = s.client().await;
    let chunk = encode(&[b"PING"]).repeat(4096);
    let mut sent = 0usize;
    // The server answers into a socket nobody reads; once that is full it
    // stops reading, and so the client's writes stop too: what it holds
    // is the sockets' buffers and one round, not the whole stream.
    loop {
        match tokio::time::timeout(Duration::from_millis(500), c.io.write_all(&chunk)).await {
            Ok(written) => {
                written.unwrap();
                sent += chunk.len();
            }
            Err(_) => break,
        }
        assert!(
            sent < 256 << 20,
            "the server took {sent} bytes from a client that reads nothing"
        );
    }
    assert!(sent > 0);
    // Read, the answers come, and the connection serves on.
    assert_eq!(c.read().await, V::Simple("PONG".into()));
}

#[tokio::test]
async fn connections_over_the_limit_are_told_and_closed() {
    let s = small().await;
    let mut open = Vec::new();
    for _ in 0..3 {
        let mut c = s.client().await;
        assert_eq!(c.call(&[b"PING"]).await, V::Simple("PONG".into()));
        open.push(c);
    }
    let mut extra = Client::connect(&s.resp).await;
    assert_eq!(extra.read().await.code(), "OVERLOADED");
    assert!(extra.closed().await);
    drop(open.pop());
    // The slot is free again once the server sees the close.
    let mut ok = false;
    for _ in 0..50 {
        let mut c = Client::connect(&s.resp).await;
        c.send(&encode(&[b"PING"])).await;
        if c.read().await == V::Simple("PONG".into()) {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "a freed slot is reused");
}
