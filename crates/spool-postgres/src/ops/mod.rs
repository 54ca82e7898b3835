//! The Store operations, grouped as docs/spec.md §3 groups them. Each file adds
//! methods to [`crate::backend::Backend`].

pub(crate) mod claim;
pub(crate) mod claim_ahead;
pub(crate) mod claim_limits;
pub(crate) mod claim_lock;
pub(crate) mod claim_pace;
pub(crate) mod edit;
pub(crate) mod enqueue;
pub(crate) mod groups;
pub(crate) mod lease;
pub(crate) mod lost;
pub(crate) mod queues;
pub(crate) mod read;
pub(crate) mod schedules;
