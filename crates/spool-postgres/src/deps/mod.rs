//! Dependencies between tasks on PostgreSQL (docs/spec.md §3.2; README.md,
//! "Dependencies"). The rules are `spool_core::deps`; this module keeps
//! the waiting tasks and applies the rules inside transactions.
//!
//! Invariants:
//! - A task waiting for others is stored `pending`, in no claim index; its
//!   row holds `after_ids`, `waiting_count`, `parents_failed` and
//!   `if_parent_fails`. `task_deps` holds one edge (parent, child) per
//!   parent a pending child still waits for, and `waiting_count` is the
//!   number of its edges: both change only together, in the transaction
//!   that ends the parent, under the child's row lock; the parent's row
//!   carries `has_dependents`. Edges are added only with their child, by
//!   the enqueue that creates it, so a child's count only falls.
//! - `task_results` holds one row (child, parent, result) per parent that
//!   completed with a result while the child waited for it, written by the
//!   transaction that ended the parent, under the child's row lock, with
//!   the child's `has_dependents` set. No write for one ending grows with
//!   the child's other parents.
//! - An edge is added only while its parent's row is locked by the
//!   enqueue that adds it, and the same transaction sets the parent's
//!   `has_dependents`; the statements that end a task in one go (ack,
//!   fail, cancel, expiry) match only rows without it, so a parent with
//!   dependents, and a task holding results, always ends through
//!   [`endings`], which resolves its dependents and deletes its results
//!   in the transaction that ends it: a completed or cancelled task leaves
//!   no row in `task_results`. A one-statement cancel that meets a child
//!   an ending holds waits for its lock, then re-checks `has_dependents`
//!   on the row as the ending left it, so a result that arrives meanwhile
//!   sends the cancel down that path too.
//! - Every transaction here locks tasks in ascending id within a step,
//!   and a child's id is above its parents': a deadlock needs a cascade
//!   to cross another one, and one that PostgreSQL breaks (40P01) is run
//!   again, as is a statement that met a row the rotation moved (40001).
//!
//! Map: `tx` runs a transaction again on those failures; `resolve`
//! applies parents' endings to their dependents, down cancel chains;
//! `write` records a task's counts and a received result on its row;
//! `enqueue` writes a batch whose tasks name parents; `endings` are the
//! ack, fail, cancel and expiry of tasks that have dependents or hold
//! results; `read` reads what a task holds beside its row.

pub(crate) mod endings;
pub(crate) mod enqueue;
pub(crate) mod read;
pub(crate) mod resolve;
pub(crate) mod tx;
pub(crate) mod write;
