//! The Store operations as the core thread runs them.
//!
//! Each one validates against memory first and changes nothing on error;
//! then it builds one absolute [`Op`](crate::ops::Op), commits it (log +
//! memory) and shapes the answer. Validation that needs no state lives in
//! spool-core.
//!
//! One file per kind of operation: `enqueue`, `claim` (with the long polls
//! parked on the core), `lease` (what a lease holder does, and expiry),
//! `tasks` (reads and edits of any task), `queues`, `schedules`; `commit`
//! holds what they share to check a lease and write a task's settlement or
//! ending.

mod claim;
mod commit;
mod enqueue;
mod lease;
mod queues;
mod schedules;
mod tasks;
