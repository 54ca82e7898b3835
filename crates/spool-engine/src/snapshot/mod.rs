//! The snapshot format: what a checkpoint writes and recovery loads.
//!
//! A snapshot is a sequence of chunks; a chunk is a sequence of tagged
//! items. Queues and kinds are referred to by index; both tables only grow,
//! so each chunk first defines the entries added since the previous chunk
//! ([`SnapshotEncoder`] remembers how far it got). Items are absolute, so
//! loading them in order rebuilds the state the copy saw, and the log
//! replayed from the snapshot's start lsn brings it up to date.
//!
//! `encode` writes the items, `load` applies them; the tags below are
//! what both agree on.

mod encode;
mod load;
#[cfg(test)]
mod tests;

pub(crate) use encode::SnapshotEncoder;
pub(crate) use load::load_chunk;

pub(super) const HEADER: u8 = 1;
pub(super) const KIND: u8 = 2;
pub(super) const QUEUE: u8 = 3;
/// A task with its payload inline: written by Spool before payloads stayed
/// in the log. Such a checkpoint cannot be loaded (see `load_chunk`).
pub(super) const TASK_INLINE: u8 = 4;
pub(super) const TOMBSTONE: u8 = 5;
pub(super) const SCHEDULE: u8 = 6;
/// A task with its payload's log position.
pub(super) const TASK: u8 = 7;
/// How many payloads were written in a segment that live tasks still use.
pub(super) const SEGMENT: u8 = 8;

/// What follows a task item's fixed fields: nothing; its extra fields as
/// Spool wrote them before it counted failures; its extra fields and the
/// count of its failures; those and then its traceparent (written only for
/// a task that has one, so other tasks read as before trace context);
/// those and then a byte of [`TAIL_TRACEPARENT`] and [`TAIL_GROUP`] bits
/// saying which of the two follow (written only for a task with a group,
/// so other tasks read as before groups), [`TAIL_DEPS`] for a task's
/// dependencies after them, and [`TAIL_RESULTS`] for its parents' results
/// after those.
pub(super) const NO_EXTRA: u8 = 0;
pub(super) const EXTRA_UNNUMBERED: u8 = 1;
pub(super) const EXTRA: u8 = 2;
pub(super) const EXTRA_TRACED: u8 = 3;
pub(super) const EXTRA_TAILED: u8 = 4;
pub(super) const TAIL_TRACEPARENT: u8 = 1;
pub(super) const TAIL_GROUP: u8 = 2;
pub(super) const TAIL_DEPS: u8 = 4;
pub(super) const TAIL_RESULTS: u8 = 8;
