//! A TCP relay that holds back everything it forwards for a while, in both
//! directions: the benchmarks run through it to see the PostgreSQL store
//! with its database on another host, where each round trip costs what a
//! network costs, not what loopback does.
//!
//! ```text
//! cargo run --release -p spool-bench --bin latency -- --listen 127.0.0.1:6432 --to 127.0.0.1:5432 --delay-us 250
//! DATABASE_URL=postgres://postgres@127.0.0.1:6432/test target/release/flow --store postgres cost ...
//! ```
//!
//! Each chunk read from one side is written to the other `--delay-us`
//! after it was read, in order, whatever else is in flight: a link with
//! that one-way latency and no bandwidth limit. Sleeps overshoot by tens
//! of microseconds, more on a busy machine: measure the round trip it
//! gives (for example `pgbench -n -f select1.sql -T 5` through the relay)
//! and report that.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use clap::Parser;

#[derive(Parser)]
struct Args {
    /// Where clients connect.
    #[arg(long, default_value = "127.0.0.1:6432")]
    listen: SocketAddr,
    /// Where the relay forwards them.
    #[arg(long, default_value = "127.0.0.1:5432")]
    to: SocketAddr,
    /// The one-way delay, in microseconds.
    #[arg(long, default_value_t = 250)]
    delay_us: u64,
}

/// Chunks read but not yet written, per direction: past this the reader
/// waits, as a full socket buffer would make it.
const IN_FLIGHT: usize = 1024;

fn main() {
    let args = Args::parse();
    let delay = Duration::from_micros(args.delay_us);
    let listener = TcpListener::bind(args.listen).unwrap();
    eprintln!(
        "latency: {} -> {}, {} µs each way",
        args.listen, args.to, args.delay_us
    );
    for client in listener.incoming() {
        let Ok(client) = client else { continue };
        let Ok(server) = TcpStream::connect(args.to) else {
            continue;
        };
        for (from, to) in [(&client, &server), (&server, &client)] {
            let (from, to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
            thread::spawn(move || relay(from, to, delay));
        }
    }
}

/// Forwards `from` to `to`, each chunk `delay` after it was read; stops
/// when either side closes. Threads and blocking calls rather than an
/// async runtime: a thread's sleep is precise to tens of microseconds,
/// an async timer's to a millisecond.
fn relay(mut from: TcpStream, mut to: TcpStream, delay: Duration) {
    let _ = from.set_nodelay(true);
    let _ = to.set_nodelay(true);
    let (tx, rx) = mpsc::sync_channel::<(Instant, Vec<u8>)>(IN_FLIGHT);
    let writer = thread::spawn(move || {
        for (due, chunk) in rx {
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                thread::sleep(wait);
            }
            if to.write_all(&chunk).is_err() {
                break;
            }
        }
        let _ = to.shutdown(Shutdown::Write);
    });
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if tx
                    .send((Instant::now() + delay, buf[..n].to_vec()))
                    .is_err()
                {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.join();
}
