//! One task as the engine holds it in memory.

use std::sync::Arc;

use spool_core::{ErrorRecord, Payload, TaskKey, TaskState, Timestamp};

/// Where a task's payload lives.
///
/// Today the bytes are in memory; the locator exists so that moving payloads
/// into the log segments (RAM then holds only an offset) changes this type
/// and nothing that uses it.
#[derive(Debug, Clone)]
pub(crate) struct PayloadRef(Payload);

impl PayloadRef {
    pub(crate) fn new(p: Payload) -> Self {
        PayloadRef(p)
    }

    pub(crate) fn load(&self) -> Payload {
        self.0.clone()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct LeaseSlot {
    pub owner: Arc<str>,
    pub token: u64,
    pub expires_at: Timestamp,
}

#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub id: u64,
    /// Index into the engine's queue table.
    pub queue: u32,
    /// Index into the engine's interned kinds.
    pub kind: u32,
    pub priority: i16,
    /// Scheduled vs ready is decided when the entry is attached, from run_at.
    pub state: TaskState,
    pub attempt: u32,
    pub max_attempts: u32,
    pub run_at: Timestamp,
    pub lease_ms: Option<u64>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub payload: PayloadRef,
    pub key: Option<TaskKey>,
    pub lease: Option<LeaseSlot>,
    pub errors: Vec<ErrorRecord>,
}
