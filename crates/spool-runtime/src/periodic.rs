//! A typed periodic schedule: a job enqueued once per tick (docs/spec.md §5).

use std::time::Duration;

use spool_core::{Cadence, Kind, ScheduleSpec};

use crate::error::EnqueueError;
use crate::job::{self, Job};

/// A schedule that enqueues `job` on every tick, into `J::QUEUE` as kind
/// `J::KIND`. Set it with [`crate::Client::put_schedule`].
///
/// Each tick's run has a deadline (its task's lease): by default the
/// period. A run still going then is cut off and the next tick fires anyway.
#[derive(Clone, Debug)]
pub struct PeriodicJob<J> {
    name: String,
    cadence: Cadence,
    deadline: Option<Duration>,
    job: J,
}

impl<J: Job> PeriodicJob<J> {
    /// Every `period` (at least 100 ms), on the multiples of the period
    /// since the Unix epoch, so every process computes the same ticks.
    pub fn every(name: impl Into<String>, period: Duration, job: J) -> Self {
        PeriodicJob {
            name: name.into(),
            cadence: Cadence::Every(period),
            deadline: None,
            job,
        }
    }

    /// At the times of a cron expression (5 fields, 6 with seconds first,
    /// or a macro such as `@daily`), in UTC unless [`PeriodicJob::tz`].
    pub fn cron(name: impl Into<String>, expr: impl Into<String>, job: J) -> Self {
        PeriodicJob {
            name: name.into(),
            cadence: Cadence::Cron {
                expr: expr.into(),
                tz: None,
            },
            deadline: None,
            job,
        }
    }

    /// The time zone of a cron expression (an IANA name).
    pub fn tz(mut self, zone: impl Into<String>) -> Self {
        if let Cadence::Cron { tz, .. } = &mut self.cadence {
            *tz = Some(zone.into());
        }
        self
    }

    /// How long each tick's run may take.
    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    pub(crate) fn into_spec(self) -> Result<ScheduleSpec, EnqueueError> {
        let (queue, kind) = job::names::<J>()?;
        let spec = ScheduleSpec {
            name: Kind::new(self.name)?,
            queue,
            kind: Some(kind),
            payload: job::encode(&self.job)?,
            cadence: self.cadence,
            deadline: self.deadline,
        };
        spec.validate()?;
        Ok(spec)
    }
}
