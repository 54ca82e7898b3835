//! Per-queue settings (docs/spec.md §4) and their limits.

use std::time::Duration;

use crate::error::StoreError;

/// The largest `max_payload` a queue may set: 64 MiB.
pub const MAX_PAYLOAD_LIMIT: u64 = 64 * 1024 * 1024;

/// A queue's settings. Changing them never loses tasks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct QueueSettings {
    /// Lease given to claims that do not ask for one.
    pub lease: Duration,
    /// Attempts before a task goes dead (for tasks that do not set their own).
    pub max_attempts: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// How long a completed or cancelled task's key still deduplicates.
    pub dedup_window: Duration,
    /// Largest payload accepted, in bytes.
    pub max_payload: u64,
    /// A paused queue hands out nothing; enqueues still work.
    pub paused: bool,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            lease: Duration::from_secs(30),
            max_attempts: 20,
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(3600),
            dedup_window: Duration::from_secs(15 * 60),
            max_payload: 1024 * 1024,
            paused: false,
        }
    }
}

impl QueueSettings {
    /// Checks the settings are coherent; a store refuses them otherwise.
    pub fn validate(&self) -> Result<(), StoreError> {
        let bad = |m: &str| Err(StoreError::BadRequest(m.to_string()));
        if self.lease.is_zero() {
            return bad("lease_ms must be at least 1");
        }
        if self.max_attempts == 0 {
            return bad("max_attempts must be at least 1");
        }
        if self.backoff_base > self.backoff_max {
            return bad("backoff_base_ms must not exceed backoff_max_ms");
        }
        if self.max_payload > MAX_PAYLOAD_LIMIT {
            return bad("max_payload must be at most 67108864 (64 MiB)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_the_spec_and_validate() {
        let s = QueueSettings::default();
        assert_eq!(s.lease, Duration::from_secs(30));
        assert_eq!(s.max_attempts, 20);
        assert_eq!(s.dedup_window, Duration::from_secs(900));
        assert!(s.validate().is_ok());
    }

    #[test]
    fn incoherent_settings_are_refused() {
        let s = QueueSettings {
            max_attempts: 0,
            ..QueueSettings::default()
        };
        assert!(s.validate().is_err());
        let s = QueueSettings {
            max_payload: MAX_PAYLOAD_LIMIT + 1,
            ..QueueSettings::default()
        };
        assert!(s.validate().is_err());
        let s = QueueSettings {
            backoff_base: Duration::from_secs(10),
            backoff_max: Duration::from_secs(1),
            ..QueueSettings::default()
        };
        assert!(s.validate().is_err());
    }
}
