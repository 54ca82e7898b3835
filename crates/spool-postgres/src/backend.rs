//! [`Backend`]: what every operation of the store works with — the
//! connection pool, the rendered statements, the settings, and this
//! process's waiters, claim floors and pending notifications.
//!
//! The handle ([`crate::store::PgStore`]) owns one behind an `Arc`; the
//! operations ([`crate::ops`]) are its methods, and the background tasks
//! `sweep` and `vacuum` hold a clone (the notifier only its queue of
//! requests and the pool). It sits below all of them, so none imports the
//! handle.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use deadpool_postgres::Pool;
use spool_core::StoreError;

use crate::config::PgConfig;
use crate::error;
use crate::floor::{Floors, Ready};
use crate::horizon::XidMarks;
use crate::limited::LimitedQueues;
use crate::notifier::Notifier;
use crate::rotate::CurrentGen;
use crate::sql::Sql;
use crate::wake::Wakeups;

/// What every operation needs: the pool, the statements, the settings and
/// this process's waiters.
pub(crate) struct Backend {
    pub(crate) pool: Pool,
    pub(crate) sql: Sql,
    pub(crate) config: PgConfig,
    /// The schema's LISTEN/NOTIFY channel.
    pub(crate) channel: String,
    pub(crate) wakeups: Arc<Wakeups>,
    /// Where this process's claims start ([`crate::floor`]).
    pub(crate) floors: Arc<Floors>,
    pub(crate) notifier: Arc<Notifier>,
    /// Tasks this process claimed since it last vacuumed ([`crate::vacuum`]).
    pub(crate) claimed_since_vacuum: AtomicU64,
    /// Queues whose claims go through the limited claim
    /// ([`crate::ops::claim_limits`]).
    pub(crate) limited: LimitedQueues,
    /// Whether claims that take a queue's lock release it before their
    /// commit is flushed ([`crate::early_release`]).
    pub(crate) release_early: bool,
    /// Where this process's single enqueues go ([`crate::rotate`]).
    pub(crate) current_gen: CurrentGen,
    /// The next XIDs this process's checks of the ring read: how it tells
    /// a held horizon ([`crate::horizon`]).
    pub(crate) xid_marks: XidMarks,
}

impl Backend {
    /// A pooled connection, or `unavailable` after `acquire_timeout`.
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Client, StoreError> {
        self.pool.get().await.map_err(error::pool)
    }

    /// Wakes claimers waiting on `queue` and lowers claim floors for what
    /// became `ready`: here at once, elsewhere through a NOTIFY the
    /// notifier sends soon, coalesced with others. Call it after the change
    /// it announces has committed.
    pub(crate) fn notify(&self, queue: &str, ready: Ready) {
        self.floors.lower(queue, ready);
        self.wakeups.wake(queue);
        self.notifier.request(queue, ready);
    }
}
