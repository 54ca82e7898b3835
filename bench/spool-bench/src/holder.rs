//! What holds the horizon: an idle transaction that took an XID, or four
//! REPEATABLE READ readers scanning the system's tables.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What holds the horizon during the hold.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum Holder {
    /// `BEGIN; SELECT txid_current();`, then idle until released.
    Writer,
    /// Four REPEATABLE READ sessions scanning the tables, in transactions of
    /// `--reader-txn` seconds, one after another.
    Readers,
    /// Nothing.
    None,
}

const READERS: usize = 4;
const SCAN_EVERY: Duration = Duration::from_millis(200);

/// A hold in progress.
#[derive(Debug)]
pub struct Held {
    stop: Arc<AtomicBool>,
    writer: Option<tokio_postgres::Client>,
    readers: tokio::task::JoinSet<()>,
}

/// Takes the horizon as `holder` says; `scan` is the readers' query.
pub async fn start(holder: Holder, scan: String, reader_txn: u64) -> Held {
    let mut held = Held {
        stop: Arc::default(),
        writer: None,
        readers: tokio::task::JoinSet::new(),
    };
    match holder {
        Holder::None => {}
        Holder::Writer => {
            let c = crate::db::connect().await;
            c.batch_execute("BEGIN; SELECT txid_current();")
                .await
                .unwrap();
            held.writer = Some(c);
        }
        Holder::Readers => {
            let txn = Duration::from_secs(reader_txn.max(1));
            for r in 0..READERS {
                let (stop, scan) = (held.stop.clone(), scan.clone());
                // Staggered, so some reader's snapshot is always open.
                let offset = txn * r as u32 / READERS as u32;
                held.readers.spawn(async move {
                    let c = crate::db::connect().await;
                    let mut first = true;
                    while !stop.load(Ordering::Relaxed) {
                        c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                            .await
                            .unwrap();
                        let length = if first {
                            txn.saturating_sub(offset).max(SCAN_EVERY)
                        } else {
                            txn
                        };
                        first = false;
                        let began = Instant::now();
                        while began.elapsed() < length && !stop.load(Ordering::Relaxed) {
                            c.batch_execute(&scan).await.unwrap();
                            tokio::time::sleep(SCAN_EVERY).await;
                        }
                        c.batch_execute("COMMIT").await.unwrap();
                    }
                });
            }
        }
    }
    held
}

impl Held {
    /// Ends the hold: the writer commits, the readers end their transactions.
    pub async fn release(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(c) = self.writer.take() {
            c.batch_execute("COMMIT").await.unwrap();
        }
        while self.readers.join_next().await.is_some() {}
    }
}
