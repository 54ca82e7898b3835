//! Periodic schedules: put, listed, deleted, and a tick fired.

use std::time::Duration;

use spool_core::schedule::tick_key;
use spool_core::{
    EnqueueOutcome, Kind, QueueSettings, Schedule, ScheduleSpec, StoreError, TaskId, Timestamp,
};

use crate::core::Core;
use crate::ops::{NewEntry, Op};

/// How far ahead of the store's clock a tick may be fired: schedulers in
/// other processes estimate the store clock, and a little early is harmless
/// because the task's run_at is the tick itself.
const MAX_EARLY_FIRE: Duration = Duration::from_secs(1);

impl Core {
    pub(crate) fn put_schedule(&mut self, spec: ScheduleSpec) -> Result<Schedule, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        spec.validate()?;
        let q = self.state.queue_of(&spec.queue);
        if q.is_none() && self.settings.strict_queues {
            return Err(StoreError::QueueNotFound(spec.queue.clone()));
        }
        let max = q.map_or(QueueSettings::default().max_payload, |q| {
            self.state.queue(q).settings.max_payload
        });
        if spec.payload.len() as u64 > max {
            return Err(StoreError::PayloadTooLarge {
                size: spec.payload.len() as u64,
                max,
            });
        }
        let now = self.now();
        let name = spec.name.clone();
        self.commit(Op::PutSchedule { now, spec });
        self.state
            .schedules
            .get(&name)
            .cloned()
            .ok_or_else(|| StoreError::Internal("schedule vanished after put".into()))
    }

    pub(crate) fn list_schedules(&self) -> Result<Vec<Schedule>, StoreError> {
        self.refuse_if_poisoned()?;
        Ok(self.state.schedules.values().cloned().collect())
    }

    pub(crate) fn delete_schedule(&mut self, name: &Kind) -> Result<(), StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        if !self.state.schedules.contains_key(name) {
            return Err(StoreError::NotFound);
        }
        self.commit(Op::DeleteSchedule { name: name.clone() });
        Ok(())
    }

    /// Records `tick` and enqueues its task, unless it or a later tick was
    /// already fired (by any scheduler: they all come through here).
    pub(crate) fn fire_schedule(
        &mut self,
        name: &Kind,
        tick: Timestamp,
    ) -> Result<Option<EnqueueOutcome>, StoreError> {
        self.refuse_if_poisoned()?;
        self.refuse_if_full()?;
        let now = self.now();
        let schedule = self.state.schedules.get(name).ok_or(StoreError::NotFound)?;
        if schedule.last_fire_at.is_some_and(|last| last >= tick) {
            return Ok(None);
        }
        let spec = &schedule.spec;
        if tick > now.plus(MAX_EARLY_FIRE) {
            return Err(StoreError::bad_request("the tick is in the future"));
        }
        if tick <= schedule.created_at
            || spec
                .cadence
                .next_after(tick.minus(Duration::from_millis(1)))
                != Some(tick)
        {
            return Err(StoreError::bad_request("not a tick of this schedule"));
        }
        let q = self.state.queue_of(&spec.queue);
        if q.is_none() && self.settings.strict_queues {
            return Err(StoreError::QueueNotFound(spec.queue.clone()));
        }
        let max_attempts = q.map_or(QueueSettings::default().max_attempts, |q| {
            self.state.queue(q).settings.max_attempts
        });
        let kind = spec.kind.clone().unwrap_or_else(|| Kind::from(&spec.queue));
        self.state.admit(&spec.queue, [&kind])?;
        let key = tick_key(name, tick);
        let duplicate = q.and_then(|q| self.state.queue(q).keys.dedup(&key, now));
        let id = duplicate.unwrap_or(self.state.next_id);
        let task = duplicate.is_none().then(|| NewEntry {
            id,
            kind,
            payload: spec.payload.clone(),
            priority: 0,
            run_at: tick,
            key: Some(key),
            max_attempts,
            lease_ms: Some(u64::try_from(spec.deadline_at(tick).as_millis()).unwrap_or(u64::MAX)),
            traceparent: None,
            group: None,
            deps: None,
        });
        let queue = spec.queue.clone();
        self.commit(Op::Fire {
            now,
            name: name.clone(),
            tick,
            queue,
            task,
        });
        Ok(Some(EnqueueOutcome {
            id: TaskId(id),
            duplicate: duplicate.is_some(),
        }))
    }
}
