//! A batch checked and laid out as one array per column, as the enqueue
//! statements take it.

use std::time::{Duration, SystemTime};

use spool_core::task::RunAt;
use spool_core::{NewTask, PayloadFormat, StoreError, TaskGroup, TaskKey};

use super::slots::Slot;
use crate::values::{millis, time};

/// What a batch is checked against and filled in from: the queue's
/// settings, or `None` where the statement applies them itself.
pub(super) struct Limits {
    pub(super) max_attempts: Option<i32>,
    pub(super) max_payload: Option<i64>,
}

impl Limits {
    /// The statement applies the queue's settings itself.
    pub(super) const IN_STATEMENT: Limits = Limits {
        max_attempts: None,
        max_payload: None,
    };
}

/// The new rows as one array per column.
pub(super) struct Rows<'a> {
    pub(super) kind: Vec<&'a str>,
    pub(super) priority: Vec<i16>,
    pub(super) run_at: Vec<Option<SystemTime>>,
    pub(super) delay_ms: Vec<i64>,
    pub(super) key: Vec<Option<&'a str>>,
    pub(super) max_attempts: Vec<Option<i32>>,
    pub(super) lease_ms: Vec<Option<i64>>,
    pub(super) payload_json: Vec<bool>,
    pub(super) payload: Vec<&'a [u8]>,
    pub(super) traceparent: Vec<Option<&'a str>>,
    pub(super) group: Vec<Option<&'a str>>,
}

impl<'a> Rows<'a> {
    /// Checks every task (duplicates included, as they would be refused
    /// on their own) against `limits` and lays out the new ones.
    pub(super) fn build(
        tasks: &'a [NewTask],
        slots: &[Slot<'a>],
        limits: &Limits,
        default_kind: &'a str,
    ) -> Result<Rows<'a>, StoreError> {
        let n = tasks.len();
        let mut rows = Rows {
            kind: Vec::with_capacity(n),
            priority: Vec::with_capacity(n),
            run_at: Vec::with_capacity(n),
            delay_ms: Vec::with_capacity(n),
            key: Vec::with_capacity(n),
            max_attempts: Vec::with_capacity(n),
            lease_ms: Vec::with_capacity(n),
            payload_json: Vec::with_capacity(n),
            payload: Vec::with_capacity(n),
            traceparent: Vec::with_capacity(n),
            group: Vec::with_capacity(n),
        };
        for (t, slot) in tasks.iter().zip(slots) {
            if let Some(max) = limits.max_payload {
                let size = t.payload.len() as u64;
                let max = u64::try_from(max).unwrap_or(0);
                if size > max {
                    return Err(StoreError::PayloadTooLarge { size, max });
                }
            }
            // Zeros were refused by `validate_batch`; these only convert.
            let max_attempts = match t.max_attempts {
                Some(m) => Some(
                    i32::try_from(m)
                        .map_err(|_| StoreError::bad_request("max_attempts is too large"))?,
                ),
                None => limits.max_attempts,
            };
            let lease_ms = match t.lease_ms {
                Some(ms) => Some(millis("lease_ms", Duration::from_millis(ms))?),
                None => None,
            };
            let (run_at, delay_ms) = match t.run_at {
                RunAt::Now => (None, 0),
                RunAt::At(at) => (Some(time(at)?), 0),
                RunAt::After(d) => (None, millis("delay", d)?),
            };
            if let Slot::SameKeyAs(_) = slot {
                continue;
            }
            rows.kind.push(match &t.kind {
                Some(k) => k.as_str(),
                // A task's kind defaults to its queue's name.
                None => default_kind,
            });
            rows.priority.push(t.priority);
            rows.run_at.push(run_at);
            rows.delay_ms.push(delay_ms);
            rows.key.push(t.key.as_ref().map(TaskKey::as_str));
            rows.max_attempts.push(max_attempts);
            rows.lease_ms.push(lease_ms);
            rows.payload_json
                .push(t.payload.format == PayloadFormat::Json);
            rows.payload.push(&t.payload.bytes);
            rows.traceparent.push(t.traceparent.as_deref());
            rows.group.push(t.group.as_ref().map(TaskGroup::as_str));
        }
        Ok(rows)
    }
}
