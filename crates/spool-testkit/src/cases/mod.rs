//! The cases: one `pub async fn(Fixture)` per guarantee, each on a fresh,
//! empty store, written against the [`Store`](spool_core::Store) trait only.
//!
//! Modules follow the operations of docs/spec.md §3: a case lives with the operation
//! whose promise it checks. Cases never depend on exact ids (only that they
//! are unique and increasing) and judge time only by `store.now()`.

mod ack;
mod cancel;
mod claim;
mod contention;
mod dedup;
mod deps;
mod derived;
mod enqueue;
mod expiry;
mod extend;
mod fail;
mod get;
mod group_rates;
mod groups;
mod lease_wait;
mod limits;
mod list;
mod long_poll;
mod release;
mod results;
mod retry;
mod schedule;
mod settings;
mod stats;
mod trace;
mod update;

pub use ack::*;
pub use cancel::*;
pub use claim::*;
pub use contention::*;
pub use dedup::*;
pub use deps::*;
pub use derived::*;
pub use enqueue::*;
pub use expiry::*;
pub use extend::*;
pub use fail::*;
pub use get::*;
pub use group_rates::*;
pub use groups::*;
pub use lease_wait::*;
pub use limits::*;
pub use list::*;
pub use long_poll::*;
pub use release::*;
pub use results::*;
pub use retry::*;
pub use schedule::*;
pub use settings::*;
pub use stats::*;
pub use trace::*;
pub use update::*;
