//! A RESP listener (and the HTTP one, on the same state) over a fresh
//! engine, and a plain TCP client that reads answers as RESP values.

use std::sync::Arc;
use std::time::Duration;

use spool_core::Store;
use spool_server::{RespLimits, ServerConfig};
use spool_testkit::server::Server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Both listeners over one store; they stop when this is dropped.
pub(crate) struct Servers {
    pub resp: String,
    pub http: String,
    pub store: Arc<dyn Store>,
    _server: Server,
}

impl Servers {
    pub(crate) async fn start() -> Self {
        Self::with(ServerConfig::default(), RespLimits::default()).await
    }

    pub(crate) async fn with(config: ServerConfig, limits: RespLimits) -> Self {
        let server = Server::builder().config(config).resp(limits).start().await;
        Servers {
            resp: server.resp.expect("a RESP listener").to_string(),
            http: server.base.clone(),
            store: server.store.clone(),
            _server: server,
        }
    }

    pub(crate) async fn client(&self) -> Client {
        Client::connect(&self.resp).await
    }
}

/// A RESP value as the client reads it (RESP2 and RESP3).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum V {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Bool(bool),
    Array(Vec<V>),
    Map(Vec<(V, V)>),
}

impl V {
    pub(crate) fn int(&self) -> i64 {
        match self {
            V::Int(n) => *n,
            other => panic!("expected an integer, got {other:?}"),
        }
    }

    pub(crate) fn items(&self) -> &[V] {
        match self {
            V::Array(v) => v,
            other => panic!("expected an array, got {other:?}"),
        }
    }

    /// A field of a map, RESP3 `%` or RESP2 flat array.
    pub(crate) fn field(&self, name: &str) -> &V {
        let key = V::Bulk(name.as_bytes().to_vec());
        match self {
            V::Map(pairs) => pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v),
            V::Array(flat) => flat.chunks(2).find(|p| p[0] == key).map(|p| &p[1]),
            _ => None,
        }
        .unwrap_or_else(|| panic!("no field {name} in {self:?}"))
    }

    pub(crate) fn text(&self) -> String {
        match self {
            V::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            V::Simple(s) | V::Error(s) => s.clone(),
            other => panic!("expected text, got {other:?}"),
        }
    }

    /// The first word of an error: its stable code.
    pub(crate) fn code(&self) -> &str {
        match self {
            V::Error(e) => e.split(' ').next().unwrap(),
            other => panic!("expected an error, got {other:?}"),
        }
    }
}

/// A connection that sends raw bytes and reads whole answers.
pub(crate) struct Client {
    pub io: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub(crate) async fn connect(addr: &str) -> Self {
        Client {
            io: TcpStream::connect(addr).await.unwrap(),
            buf: Vec::new(),
        }
    }

    /// Sends one command as an array of bulk strings and reads its answer.
    pub(crate) async fn call(&mut self, args: &[&[u8]]) -> V {
        self.send(&encode(args)).await;
        self.read().await
    }

    pub(crate) async fn send(&mut self, bytes: &[u8]) {
        self.io.write_all(bytes).await.unwrap();
    }

    /// The next answer; panics if the server closes first or is silent 10 s.
    pub(crate) async fn read(&mut self) -> V {
        loop {
            if let Some((v, n)) = parse(&self.buf) {
                self.buf.drain(..n);
                return v;
            }
            let mut chunk = [0u8; 65536];
            let n = tokio::time::timeout(Duration::from_secs(10), self.io.read(&mut chunk))
                .await
                .expect("no answer within 10 s")
                .unwrap();
            assert!(
                n > 0,
                "the server closed the connection; buffered: {:?}",
                String::from_utf8_lossy(&self.buf)
            );
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// True when the server has closed the connection (after any answers).
    pub(crate) async fn closed(&mut self) -> bool {
        let mut chunk = [0u8; 1024];
        matches!(
            tokio::time::timeout(Duration::from_secs(10), self.io.read(&mut chunk)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}

pub(crate) fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn parse(buf: &[u8]) -> Option<(V, usize)> {
    let nl = buf.windows(2).position(|w| w == b"\r\n")?;
    let line = std::str::from_utf8(&buf[1..nl]).unwrap();
    let next = nl + 2;
    let many = |count: usize, mut at: usize| -> Option<(Vec<V>, usize)> {
        let mut items = Vec::new();
        for _ in 0..count {
            let (v, n) = parse(&buf[at..])?;
            items.push(v);
            at += n;
        }
        Some((items, at))
    };
    Some(match buf[0] {
        b'+' => (V::Simple(line.into()), next),
        b'-' => (V::Error(line.into()), next),
        b':' => (V::Int(line.parse().unwrap()), next),
        b'_' => (V::Null, next),
        b'#' => (V::Bool(line == "t"), next),
        b'$' if line == "-1" => (V::Null, next),
        b'$' => {
            let len: usize = line.parse().unwrap();
            if buf.len() < next + len + 2 {
                return None;
            }
            (V::Bulk(buf[next..next + len].to_vec()), next + len + 2)
        }
        b'*' => {
            let (items, end) = many(line.parse().unwrap(), next)?;
            (V::Array(items), end)
        }
        b'%' => {
            let (items, end) = many(2 * line.parse::<usize>().unwrap(), next)?;
            let pairs = items
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            (V::Map(pairs), end)
        }
        other => panic!("unexpected reply type {:?}", other as char),
    })
}
