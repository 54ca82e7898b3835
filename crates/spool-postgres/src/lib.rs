//! Spool's PostgreSQL store: many processes on many machines share one
//! database; enqueue can join the caller's own transaction.
//!
//! [`PgStore::connect`] opens a pool, creates or migrates the schema
//! ([`PgConfig::schema`], `spool` by default) and starts its background
//! tasks: a LISTEN connection that wakes waiting claimers, a sweeper that
//! writes expired leases down and promotes due tasks, a notifier that sends
//! coalesced NOTIFYs, and a vacuum of the task table after every so many
//! claims. [`PgStore`] implements [`spool_core::Store`] with the semantics
//! of docs/spec.md §3 and passes the conformance suite, schedules (docs/spec.md §5)
//! included; [`PgStore::enqueue_in`] enqueues inside a transaction of the
//! caller's.
//!
//! The database clock is the only clock: every time is `now()` of the
//! statement that writes it, truncated to the millisecond, and
//! `Store::now` asks the database.
//!
//! Map, following the data path: `config` → `store` (the handle, connect,
//! background tasks) → `ops` (the operations, one file per group, methods
//! of `backend`, what every operation works with; `ops::claim_lock` is the global-lock claim strategy) → `db` (running a
//! statement) with the SQL in `sql/*.sql` rendered by `sql`;
//! `row` reads task rows and derives what they show; `values` converts
//! column values; `wake` is the LISTEN side of wake-ups and `notifier` the
//! coalesced NOTIFY side; `floor` where in claim order a claim starts (so
//! a held xmin horizon does not make claims walk what was claimed since);
//! `sweep` the upkeep; `rotate` empties the oldest partition of the task
//! table's ring (its size does not depend on VACUUM), and by size only
//! while `horizon` sees the xmin horizon held; `vacuum` keeps the
//! claim index's front clear; `tls`
//! encrypts connections when `sslmode=require`; `migrate`
//! the versioned schema in `migrations/`. README.md explains the schema and
//! the claim statement.
//!
//! What it is not: a cache, or a queue that trusts the client's clock.

mod backend;
mod config;
mod db;
mod deps;
mod early_release;
mod error;
#[cfg(test)]
mod expire_race;
mod floor;
mod horizon;
mod limited;
mod migrate;
mod notifier;
mod ops;
#[cfg(test)]
mod plans;
mod rotate;
#[cfg(test)]
mod rotate_readers;
mod row;
mod sql;
mod store;
mod sweep;
#[cfg(test)]
mod test_db;
mod tls;
mod vacuum;
mod values;
mod wake;

pub use config::{ClaimStrategy, PgConfig};
pub use error::PgError;
pub use store::PgStore;
