//! Dependencies between tasks on PostgreSQL (docs/spec.md §3.2; README.md,
//! "Dependencies"). The rules are `spool_core::deps`; this module keeps
//! the waiting tasks and applies the rules inside transactions.
//!
//! Invariants:
//! - A task waiting for others is stored `pending`, in no claim index; its
//!   row holds `after_ids`, `waiting_on` (ascending), `parents_failed` and
//!   `if_parent_fails`. `task_deps` holds one edge (parent, child) per
//!   parent in some pending child's `waiting_on`, and the parent's row
//!   carries `has_dependents`.
//! - An edge is added only while its parent's row is locked by the
//!   enqueue that adds it, and the same transaction sets the parent's
//!   `has_dependents`; the statements that end a task in one go (ack,
//!   fail, cancel, expiry) match only rows without it, so a parent with
//!   dependents always ends through [`endings`], which resolves them in
//!   the transaction that ends it.
//! - Every transaction here locks tasks in ascending id within a step,
//!   and a child's id is above its parents': a deadlock needs a cascade
//!   to cross another one, and one that PostgreSQL breaks (40P01) is run
//!   again, as is a statement that met a row the rotation moved (40001).
//!
//! Map: `tx` runs a transaction again on those failures; `resolve`
//! applies parents' endings to their dependents, down cancel chains;
//! `enqueue` writes a batch whose tasks name parents; `endings` are the
//! ack, fail, cancel and expiry of tasks that have dependents.

pub(crate) mod endings;
pub(crate) mod enqueue;
pub(crate) mod resolve;
pub(crate) mod tx;
