//! What a system's tables hold at one moment: their heap (with TOAST),
//! their indexes and their dead tuples, summed over every table of its
//! schema. Partitions are tables of their own (`relkind = 'r'`), so a
//! partitioned table is counted through its partitions.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const QUERY: &str = "SELECT coalesce(sum(pg_table_size(c.oid)), 0)::int8,
            coalesce(sum(pg_indexes_size(c.oid)), 0)::int8,
            coalesce(sum(s.n_dead_tup), 0)::int8
     FROM pg_class c
     JOIN pg_namespace n ON n.oid = c.relnamespace
     LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
     WHERE n.nspname = $1 AND c.relkind = 'r'";

/// One reading of a schema's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Bytes of heap and TOAST (`pg_table_size`).
    pub table: i64,
    /// Bytes of indexes (`pg_indexes_size`).
    pub index: i64,
    /// Dead tuples, as the statistics collector last counted them.
    pub dead: i64,
}

impl Sizes {
    /// Table and indexes together (`pg_total_relation_size`).
    pub fn total(&self) -> i64 {
        self.table + self.index
    }

    /// Each figure the larger of the two readings'.
    pub fn max(self, other: Sizes) -> Sizes {
        Sizes {
            table: self.table.max(other.table),
            index: self.index.max(other.index),
            dead: self.dead.max(other.dead),
        }
    }

    /// `table + index MB`, for a table cell.
    pub fn cell(&self) -> String {
        format!(
            "{:.2} + {:.2} MB",
            self.table as f64 / 1e6,
            self.index as f64 / 1e6
        )
    }
}

/// Reads `schema`'s tables now.
pub async fn read(db: &tokio_postgres::Client, schema: &str) -> Sizes {
    let row = db.query_one(QUERY, &[&schema]).await.unwrap();
    Sizes {
        table: row.get(0),
        index: row.get(1),
        dead: row.get(2),
    }
}

/// Reads a schema's tables every `every` in the background and keeps the
/// largest of each figure, until [`Watch::stop`].
#[derive(Debug)]
pub struct Watch {
    stop: Arc<AtomicBool>,
    peak: Arc<Mutex<Sizes>>,
    task: tokio::task::JoinHandle<()>,
}

impl Watch {
    /// Starts reading `schema` every `every`.
    pub async fn start(schema: &str, every: Duration) -> Watch {
        let db = crate::db::connect().await;
        let (stop, peak) = (Arc::<AtomicBool>::default(), Arc::<Mutex<Sizes>>::default());
        let (s, p, schema) = (stop.clone(), peak.clone(), schema.to_string());
        let task = tokio::spawn(async move {
            while !s.load(Ordering::Relaxed) {
                let now = read(&db, &schema).await;
                {
                    let mut peak = p.lock().unwrap();
                    *peak = peak.max(now);
                }
                tokio::time::sleep(every).await;
            }
        });
        Watch { stop, peak, task }
    }

    /// Stops reading; the largest figures read.
    pub async fn stop(self) -> Sizes {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap();
        *self.peak.lock().unwrap()
    }
}

/// How long, read every second, until `schema`'s tables and indexes are
/// back within `within` bytes, or `None` after `limit`.
pub async fn back_within(schema: &str, within: i64, limit: Duration) -> Option<Duration> {
    let db = crate::db::connect().await;
    let started = Instant::now();
    loop {
        if read(&db, schema).await.total() <= within {
            return Some(started.elapsed());
        }
        if started.elapsed() > limit {
            return None;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
