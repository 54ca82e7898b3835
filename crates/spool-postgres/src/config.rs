//! How a [`crate::PgStore`] connects: the schema it owns, the pool, and the
//! rhythm of its background work.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::PgError;

/// Settings for [`crate::PgStore::connect`]. Start from `PgConfig::default()`.
#[derive(Clone, Debug)]
pub struct PgConfig {
    /// The schema Spool owns (created and migrated on connect): 1–48
    /// characters of `[a-z0-9_]`, not starting with a digit.
    pub schema: String,
    /// Refuse enqueues to queues that were not created with `put_queue`.
    pub strict_queues: bool,
    /// Most pooled connections. Long-poll waits hold none while they sleep.
    pub pool_size: usize,
    /// How long an operation waits for a pooled connection before it
    /// answers `unavailable`.
    pub acquire_timeout: Duration,
    /// How long opening a connection may take.
    pub connect_timeout: Duration,
    /// How often the sweeper writes expired leases down, promotes due
    /// scheduled tasks and wakes their waiters. Views derive both at once
    /// anyway; this bounds how late a waiting claimer hears of them.
    pub sweep_interval: Duration,
    /// How often a waiting claim looks again with no wake-up at all: the
    /// fallback when the LISTEN connection is down.
    pub poll_interval: Duration,
    /// How claims take tasks when several claimers want the same queue.
    pub claim: ClaimStrategy,
    /// Vacuum the task table after this process has claimed this many
    /// tasks since it last did (`crate::vacuum` says why); 0 leaves it to
    /// autovacuum.
    pub vacuum_after_claims: u64,
    /// How long a generation of the task table's ring stays current before
    /// the oldest is emptied and truncated (`crate::rotate`). The table
    /// holds about three generations' worth of written rows, dead versions
    /// included, whether or not a transaction holds the xmin horizon; each
    /// rotation makes every connection plan its statements again.
    pub rotate_interval: Duration,
    /// How large (bytes, with its indexes) the current generation may grow
    /// before the ring turns without waiting for `rotate_interval`, while
    /// something has held the xmin horizon for half a second or more, and
    /// never sooner than half a second after the last turn. While VACUUM
    /// can do its work, time turns the ring; while a transaction or a
    /// snapshot holds the horizon nothing written can be freed, and this
    /// bounds the table at about three times it (plus tasks still queued
    /// and parked ones). A snapshot held by another role's session is seen
    /// only if the store's role may read all statistics
    /// (`pg_read_all_stats`); writing transactions and replication slots
    /// are seen always (`crate::horizon`). `u64::MAX` turns by time alone.
    pub rotate_size: u64,
    /// How old a count of tasks `stats` may answer with. Every node keeps
    /// its count in the database, and any node asking within this time
    /// gets it instead of scanning the task table again. Zero (the
    /// default) counts on every call, so stats show every change at once;
    /// with millions of tasks and several nodes whose admin pages, metric
    /// scrapes and monitors each ask every few seconds, a few seconds here
    /// turns their scans into one per interval.
    pub stats_max_age: Duration,
    /// With `sslmode=require` in the connection string: a PEM file of the
    /// certificate authorities the server's certificate must chain to, its
    /// host name checked too (libpq's `verify-full`). Without it the
    /// connection is encrypted but the server not authenticated (libpq's
    /// `require`).
    pub tls_root_cert: Option<PathBuf>,
}

/// How claimers share a queue (docs/spec.md §10). Both hand every task out once
/// and in the same order; they differ in who does the work when many
/// claimers ask at the same time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClaimStrategy {
    /// Every claimer runs the claim statement at once and passes over rows
    /// the others hold (`FOR UPDATE SKIP LOCKED`). The default.
    #[default]
    SkipLocked,
    /// One claimer at a time, on any node, acquires from a queue, under a
    /// per-queue `pg_try_advisory_xact_lock`; the others back off for a few
    /// milliseconds and try again (for at most `acquire_timeout`, then
    /// `unavailable`). Pays off with large batches: the holder never scans
    /// past rows another claimer is leasing.
    GlobalLock,
}

impl Default for PgConfig {
    fn default() -> Self {
        PgConfig {
            schema: "spool".to_string(),
            strict_queues: false,
            pool_size: 16,
            acquire_timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(5),
            sweep_interval: Duration::from_millis(50),
            poll_interval: Duration::from_secs(1),
            claim: ClaimStrategy::SkipLocked,
            vacuum_after_claims: 50_000,
            rotate_interval: Duration::from_secs(5),
            rotate_size: 512 << 10,
            stats_max_age: Duration::ZERO,
            tls_root_cert: None,
        }
    }
}

/// Longest schema name: leaves room for the notification channel's suffix
/// within PostgreSQL's 63-byte identifiers.
const MAX_SCHEMA: usize = 48;

/// A validated schema name, and the names derived from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Schema(String);

impl Schema {
    pub(crate) fn new(name: &str) -> Result<Schema, PgError> {
        let valid_start = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
        let valid_rest = name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if name.len() > MAX_SCHEMA || !valid_start || !valid_rest {
            return Err(PgError::Config(format!(
                "schema must be 1 to {MAX_SCHEMA} characters of a-z, 0-9 and _, \
                 not starting with a digit; got {name:?}"
            )));
        }
        Ok(Schema(name.to_string()))
    }

    pub(crate) fn name(&self) -> &str {
        &self.0
    }

    /// The schema as a quoted SQL identifier. The charset leaves nothing to
    /// escape.
    pub(crate) fn ident(&self) -> String {
        format!("\"{}\"", self.0)
    }

    /// The LISTEN/NOTIFY channel on which enqueues announce ready work; the
    /// payload is the queue's name.
    pub(crate) fn channel(&self) -> String {
        format!("{}.ready", self.0)
    }
}

impl PgConfig {
    pub(crate) fn validate(&self) -> Result<Schema, PgError> {
        if self.pool_size == 0 {
            return Err(PgError::Config("pool_size must be at least 1".into()));
        }
        for (what, d) in [
            ("sweep_interval", self.sweep_interval),
            ("poll_interval", self.poll_interval),
            ("rotate_interval", self.rotate_interval),
        ] {
            if d.is_zero() {
                return Err(PgError::Config(format!("{what} must not be zero")));
            }
        }
        Schema::new(&self.schema)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_plain_identifiers() {
        assert!(Schema::new("spool").is_ok());
        assert!(Schema::new("_x9").is_ok());
        for bad in ["", "9a", "Spool", "a-b", "a\"b", &"x".repeat(49)] {
            assert!(Schema::new(bad).is_err(), "{bad:?}");
        }
        let s = Schema::new("jobs").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.ident(), "\"jobs\"");
        assert_eq!(s.channel(), "jobs.ready");
    }
}
