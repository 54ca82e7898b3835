//! Periodic schedules (docs/spec.md §5): what a schedule is and when it ticks.
//!
//! Ticks are anchored so every process computes the same ones: for `every`,
//! the multiples of the period since the Unix epoch; for `cron`, the
//! expression's times (crontab's 5 fields, 6 with seconds first, or a
//! macro; UTC unless a time zone is given; daylight-saving rules in
//! `crontab`). A tick's task carries the key `sched:<name>:<tick ms>`, so any
//! number of firing processes make one task per tick; stores also guard the
//! tick itself (`Store::fire_schedule`). After downtime the missed ticks
//! collapse into the latest one.

use std::time::Duration;

use crate::crontab::CronTimes;
use crate::error::StoreError;
use crate::names::{Kind, QueueName, TaskKey};
use crate::task::Payload;
use crate::time::{duration_millis, Timestamp};

/// The shortest `every` period.
pub const MIN_EVERY: Duration = Duration::from_millis(100);

/// How often a schedule ticks.
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum Cadence {
    /// Every period, at the multiples of the period since the Unix epoch.
    Every(Duration),
    /// A cron expression (5 fields, 6 with seconds first, or a macro such
    /// as `@daily`; see `crontab`) in `tz` (an IANA name) or UTC.
    Cron {
        /// The expression, in crontab's form.
        expr: String,
        /// An IANA time zone such as `Europe/Berlin`; UTC when `None`.
        tz: Option<String>,
    },
}

/// A parsed cadence, ready to compute ticks.
enum Ticker {
    Every(i64),
    Cron(Box<CronTimes>),
}

impl Cadence {
    fn ticker(&self) -> Result<Ticker, StoreError> {
        match self {
            Cadence::Every(d) => {
                if *d < MIN_EVERY {
                    return Err(StoreError::bad_request("every_ms must be at least 100"));
                }
                Ok(Ticker::Every(duration_millis(*d)))
            }
            Cadence::Cron { expr, tz } => Ok(Ticker::Cron(Box::new(CronTimes::parse(
                expr,
                tz.as_deref(),
            )?))),
        }
    }

    /// Checks the cadence can tick: a period of at least 100 ms, or a cron
    /// expression and time zone that parse and that has a future time.
    pub fn validate(&self) -> Result<(), StoreError> {
        let ticker = self.ticker()?;
        if let Ticker::Cron(..) = ticker {
            if next_tick(&ticker, Timestamp(0)).is_none() {
                return Err(StoreError::bad_request("the cron expression never fires"));
            }
        }
        Ok(())
    }

    /// The first tick strictly after `t`.
    pub fn next_after(&self, t: Timestamp) -> Option<Timestamp> {
        next_tick(&self.ticker().ok()?, t)
    }

    /// The latest tick in `(after, now]`: what is due now, with every missed
    /// tick before it collapsed into it.
    pub fn due(&self, after: Timestamp, now: Timestamp) -> Option<Timestamp> {
        let ticker = self.ticker().ok()?;
        match ticker {
            Ticker::Every(p) => {
                let tick = now.as_millis().div_euclid(p) * p;
                (tick > after.as_millis()).then_some(Timestamp(tick))
            }
            Ticker::Cron(..) => {
                // Walk forward from the later of `after` and a day before
                // now: a day of missed per-second ticks is 86,400 steps at
                // most, and older ones collapse anyway.
                let floor = after.max(now.minus(Duration::from_secs(86_400)));
                let mut due = None;
                let mut t = floor;
                while let Some(next) = next_tick(&ticker, t) {
                    if next > now {
                        break;
                    }
                    due = Some(next);
                    t = next;
                }
                due
            }
        }
    }

    /// The interval around `t`: the default deadline of a tick's run.
    pub fn period_at(&self, t: Timestamp) -> Option<Duration> {
        let first = self.next_after(t)?;
        let second = self.next_after(first)?;
        Some(second.since(first))
    }
}

fn next_tick(ticker: &Ticker, t: Timestamp) -> Option<Timestamp> {
    match ticker {
        Ticker::Every(p) => Some(Timestamp((t.as_millis().div_euclid(*p) + 1) * p)),
        Ticker::Cron(times) => times.next_after(t.as_millis()).map(Timestamp),
    }
}

/// What a client asks for (`PUT /v1/schedules/{name}`).
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct ScheduleSpec {
    /// Same charset as queue names.
    pub name: Kind,
    /// Where each tick's task goes; made with the defaults on the first tick
    /// unless queues are strict.
    pub queue: QueueName,
    /// Defaults to the queue's name.
    pub kind: Option<Kind>,
    /// Every tick's task carries it; held against the queue's `max_payload`
    /// when the schedule is put.
    pub payload: Payload,
    /// When it ticks.
    pub cadence: Cadence,
    /// The lease of each tick's task: a run still going then is cut off.
    /// Defaults to the period.
    pub deadline: Option<Duration>,
}

impl ScheduleSpec {
    /// What a store refuses with `bad_request` before storing anything: a
    /// cadence that cannot tick, or a zero deadline.
    pub fn validate(&self) -> Result<(), StoreError> {
        self.cadence.validate()?;
        if self.deadline.is_some_and(|d| d.is_zero()) {
            return Err(StoreError::bad_request("deadline_ms must be at least 1"));
        }
        Ok(())
    }

    /// The deadline of the run of `tick`.
    pub fn deadline_at(&self, tick: Timestamp) -> Duration {
        self.deadline
            .or_else(|| self.cadence.period_at(tick))
            .unwrap_or(Duration::from_secs(60))
    }
}

/// A stored schedule and its firing state.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Schedule {
    /// What was last put under this name.
    pub spec: ScheduleSpec,
    /// The latest tick fired by any process.
    pub last_fire_at: Option<Timestamp>,
    /// When the name was first put, by the store's clock; replacing keeps it,
    /// and no tick at or before it fires.
    pub created_at: Timestamp,
}

impl Schedule {
    /// The next tick to fire.
    pub fn next_fire_at(&self) -> Option<Timestamp> {
        self.spec
            .cadence
            .next_after(self.last_fire_at.unwrap_or(self.created_at))
    }

    /// The tick due at `now`, if one is: never one at or before creation,
    /// nor one already fired.
    pub fn due(&self, now: Timestamp) -> Option<Timestamp> {
        let after = self
            .last_fire_at
            .unwrap_or(self.created_at)
            .max(self.created_at);
        self.spec.cadence.due(after, now)
    }
}

/// The idempotency key of a tick's task.
pub fn tick_key(name: &Kind, tick: Timestamp) -> TaskKey {
    // Within TaskKey's 256 bytes: "sched:" + 128 + ":" + 20 digits.
    TaskKey::new(format!("sched:{name}:{}", tick.as_millis()))
        .unwrap_or_else(|_| unreachable!("a schedule name and a tick always fit a key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every(ms: u64) -> Cadence {
        Cadence::Every(Duration::from_millis(ms))
    }

    #[test]
    fn every_ticks_on_multiples_of_the_period() {
        let c = every(1000);
        assert_eq!(c.next_after(Timestamp(1500)), Some(Timestamp(2000)));
        assert_eq!(c.next_after(Timestamp(2000)), Some(Timestamp(3000)));
        assert_eq!(c.due(Timestamp(0), Timestamp(5300)), Some(Timestamp(5000)));
        assert_eq!(c.due(Timestamp(5000), Timestamp(5999)), None);
        assert!(every(99).validate().is_err());
        assert!(every(100).validate().is_ok());
    }

    #[test]
    fn missed_ticks_collapse_into_the_latest() {
        let s = Schedule {
            spec: ScheduleSpec {
                name: Kind::new("h").unwrap_or_else(|_| unreachable!()),
                queue: QueueName::new("q").unwrap_or_else(|_| unreachable!()),
                kind: None,
                payload: Payload::default(),
                cadence: every(1000),
                deadline: None,
            },
            last_fire_at: Some(Timestamp(3000)),
            created_at: Timestamp(100),
        };
        assert_eq!(s.due(Timestamp(60_400)), Some(Timestamp(60_000)));
        assert_eq!(s.next_fire_at(), Some(Timestamp(4000)));
        assert_eq!(s.spec.deadline_at(Timestamp(0)), Duration::from_secs(1));
    }

    #[test]
    fn cron_has_seconds_and_time_zones() {
        let c = Cadence::Cron {
            expr: "*/15 * * * * *".into(),
            tz: None,
        };
        assert!(c.validate().is_ok());
        assert_eq!(c.next_after(Timestamp(1_000)), Some(Timestamp(15_000)));
        assert_eq!(
            c.due(Timestamp(0), Timestamp(46_000)),
            Some(Timestamp(45_000))
        );
        assert_eq!(c.period_at(Timestamp(0)), Some(Duration::from_secs(15)));
        // 09:00 in Berlin is 08:00 UTC in winter.
        let berlin = Cadence::Cron {
            expr: "0 0 9 * * *".into(),
            tz: Some("Europe/Berlin".into()),
        };
        let jan_1 = Timestamp(1_767_225_600_000); // 2026-01-01T00:00:00Z
        assert_eq!(
            berlin.next_after(jan_1),
            Some(Timestamp(1_767_225_600_000 + 8 * 3_600_000))
        );
        assert!(Cadence::Cron {
            expr: "* * * *".into(),
            tz: None
        }
        .validate()
        .is_err());
        assert!(Cadence::Cron {
            expr: "0 0 9 * * *".into(),
            tz: Some("Mars/Base".into())
        }
        .validate()
        .is_err());
    }

    #[test]
    fn tick_keys_are_stable() {
        let name = Kind::new("health").unwrap_or_else(|_| unreachable!());
        assert_eq!(
            tick_key(&name, Timestamp(1234)).as_str(),
            "sched:health:1234"
        );
    }
}
