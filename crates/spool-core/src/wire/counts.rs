//! Task counts per state, as a queue and each of its kinds carry them
//! (docs/spec.md §7.1, `GET /v1/queues`).

use serde::{Deserialize, Serialize};

use crate::store::StateCounts;

/// Task counts per state.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CountsJson {
    /// Waiting for their run time.
    pub scheduled: u64,
    /// Claimable now.
    pub ready: u64,
    /// Being run under a lease.
    pub leased: u64,
    /// Out of attempts or discarded.
    pub dead: u64,
    /// Waiting for the tasks named in their `after` to end (docs/spec.md
    /// §3.2). Servers older than dependencies leave it out: none then.
    #[serde(default)]
    pub pending: u64,
}

impl From<StateCounts> for CountsJson {
    fn from(c: StateCounts) -> Self {
        CountsJson {
            scheduled: c.scheduled,
            ready: c.ready,
            leased: c.leased,
            dead: c.dead,
            pending: c.pending,
        }
    }
}

impl From<CountsJson> for StateCounts {
    fn from(c: CountsJson) -> Self {
        StateCounts {
            scheduled: c.scheduled,
            ready: c.ready,
            leased: c.leased,
            dead: c.dead,
            pending: c.pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_round_trip_and_pending_may_be_absent() -> Result<(), serde_json::Error> {
        let c = StateCounts {
            ready: 2,
            pending: 3,
            ..StateCounts::default()
        };
        let text = serde_json::to_string(&CountsJson::from(c))?;
        assert_eq!(
            text,
            r#"{"scheduled":0,"ready":2,"leased":0,"dead":0,"pending":3}"#
        );
        let back: CountsJson = serde_json::from_str(&text)?;
        assert_eq!(StateCounts::from(back), c);
        let old: CountsJson =
            serde_json::from_str(r#"{"scheduled":1,"ready":0,"leased":0,"dead":0}"#)?;
        assert_eq!(old.pending, 0);
        Ok(())
    }
}
