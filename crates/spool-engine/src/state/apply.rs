//! Applying ops to state: the one code path for live writes and recovery.
//!
//! An op naming a task that is not there changes nothing for that task: in
//! replay over a checkpoint it is a task the log deletes later anyway.
//!
//! Ops that carry payloads come with their locators (`payloads`, in the
//! order the op holds them): where the log put those bytes, worked out by
//! the caller from the batch's placement (live) or the record's position
//! (replay).

use spool_core::transition::{push_error, truncate_message};
use spool_core::{Kind, PayloadFormat, QueueName, QueueSettings, Schedule, TaskState, Timestamp};

use super::{flag, Entry, Extra, LeaseSlot, PayloadRef, State};
use crate::ops::{Failure, NewEntry, Next, Op};

impl State {
    pub(crate) fn apply(&mut self, op: &Op, payloads: &[PayloadRef]) {
        match op {
            Op::Enqueue { now, queue, tasks } => self.enqueue(*now, queue, tasks, payloads),
            Op::Claim { now, owner, tasks } => {
                for c in tasks {
                    self.change(c.id, *now, |e, x| {
                        e.state = TaskState::Leased;
                        e.attempt = c.attempt;
                        x.lease = Some(LeaseSlot {
                            owner: owner.clone(),
                            token: c.token,
                            expires_at: c.expires_at,
                        });
                    });
                }
            }
            Op::Settle { now, tasks, follow } => {
                for s in tasks {
                    self.change(s.id, *now, |e, x| {
                        e.attempt = s.attempt;
                        x.lease = None;
                        if let Some(f) = &s.error {
                            record_failure(x, f, *now);
                        }
                        match s.next {
                            Next::Waiting(at) => {
                                e.run_at = at;
                                e.state = TaskState::Scheduled;
                            }
                            Next::Dead => e.state = TaskState::Dead,
                        }
                    });
                }
                self.apply_follow(*now, follow, &[]);
            }
            Op::Extend {
                now,
                id,
                expires_at,
            } => {
                self.change(*id, *now, |_, x| {
                    if let Some(l) = &mut x.lease {
                        l.expires_at = *expires_at;
                    }
                });
            }
            Op::Update { now, id, patch } => {
                let mut old = None;
                let new = patch.payload.as_ref().zip(payloads.first());
                self.change(*id, *now, |e, _| {
                    if let Some((p, &at)) = new {
                        old = Some(e.payload);
                        e.payload = at;
                        set_format(e, p.format);
                    }
                    if let Some(at) = patch.run_at {
                        e.run_at = at;
                    }
                    if let Some(p) = patch.priority {
                        e.priority = p;
                    }
                });
                if let (Some(old), Some((_, &at))) = (old, new) {
                    self.unpin(old);
                    self.pin(at);
                }
            }
            Op::Move { moves } => {
                for (m, &to) in moves.iter().zip(payloads) {
                    let from = PayloadRef::new(m.from);
                    let Some(e) = self.tasks.get_mut(m.id) else {
                        continue;
                    };
                    // Only if it still points where the compactor read it:
                    // an update in between wrote a newer payload.
                    if e.payload != from {
                        continue;
                    }
                    e.payload = to;
                    self.unpin(from);
                    self.pin(to);
                }
            }
            Op::Delete {
                now,
                ids,
                follow,
                results,
            } => {
                for &id in ids {
                    self.remove(id, *now);
                }
                self.apply_follow(*now, follow, results);
            }
            Op::PutQueue { queue, settings } => {
                let q = self.ensure_queue(queue, || settings.clone());
                let old = &self.queue(q).settings;
                // A resume, or limits that changed, may let waiting claims in.
                let resumed = old.paused && !settings.paused;
                let limits =
                    (old.rate_limit, old.max_leased) != (settings.rate_limit, settings.max_leased);
                self.queue_mut(q).set_settings(settings.clone());
                if resumed || limits {
                    self.wake(q);
                }
            }
            Op::PutSchedule { now, spec } => {
                let (last_fire_at, created_at) = match self.schedules.get(&spec.name) {
                    Some(s) => (s.last_fire_at, s.created_at),
                    None => (None, *now),
                };
                self.schedules.insert(
                    spec.name.clone(),
                    Schedule {
                        spec: spec.clone(),
                        last_fire_at,
                        created_at,
                    },
                );
            }
            Op::DeleteSchedule { name } => {
                self.schedules.remove(name);
            }
            Op::Fire {
                now,
                name,
                tick,
                queue,
                task,
            } => {
                if let Some(s) = self.schedules.get_mut(name) {
                    s.last_fire_at = Some(s.last_fire_at.map_or(*tick, |t| t.max(*tick)));
                }
                if let Some(t) = task {
                    self.enqueue(*now, queue, std::slice::from_ref(t), payloads);
                }
            }
        }
    }

    fn enqueue(
        &mut self,
        now: Timestamp,
        queue: &QueueName,
        tasks: &[NewEntry],
        payloads: &[PayloadRef],
    ) {
        let q = self.ensure_queue(queue, QueueSettings::default);
        // Tasks of one batch nearly always share a kind: hash it once.
        let mut last_kind: Option<(&Kind, u32)> = None;
        for (t, &payload) in tasks.iter().zip(payloads) {
            if self.tasks.contains(t.id) {
                self.remove(t.id, now);
            }
            let kind = match last_kind {
                Some((k, i)) if *k == t.kind => i,
                _ => {
                    let i = self.intern_kind(&t.kind);
                    last_kind = Some((&t.kind, i));
                    i
                }
            };
            let mut entry = Entry {
                run_at: t.run_at,
                created_at: now,
                payload,
                attempt: 0,
                max_attempts: t.max_attempts,
                // `admit` kept both within 16 bits before the op was logged.
                queue: q as u16,
                kind: kind as u16,
                priority: t.priority,
                state: TaskState::Ready,
                flags: 0,
            };
            set_format(&mut entry, t.payload.format);
            // Waiting, or cancelled at once: out of every claim index.
            let cancelled = t.deps.as_ref().is_some_and(|d| d.cancelled);
            if cancelled
                || t.deps
                    .as_ref()
                    .is_some_and(|d| !d.deps.waiting_on.is_empty())
            {
                entry.state = TaskState::Pending;
            }
            let plain = t.key.is_none()
                && t.lease_ms.is_none()
                && t.traceparent.is_none()
                && t.deps.is_none();
            let extra = (!plain).then(|| Extra {
                key: t.key.clone(),
                lease_ms: t.lease_ms,
                traceparent: t.traceparent.as_deref().map(Box::from),
                deps: t.deps.as_ref().map(|d| Box::new(d.deps.clone())),
                ..Extra::new(now)
            });
            self.insert(t.id, entry, extra, t.group.as_ref(), now);
            if cancelled {
                self.remove(t.id, now);
            }
        }
    }

    /// Detaches the task, lets `f` change it and its extra fields, stamps
    /// it and re-attaches it.
    fn change(&mut self, id: u64, now: Timestamp, f: impl FnOnce(&mut Entry, &mut Extra)) {
        if !self.tasks.contains(id) {
            return;
        }
        self.detach(id);
        let mut extra = match self.tasks.extra_mut(id) {
            Some(x) => std::mem::replace(x, Extra::new(now)),
            None => return,
        };
        if let Some(e) = self.tasks.get_mut(id) {
            f(e, &mut extra);
        }
        extra.updated_at = now;
        if let Some(x) = self.tasks.extra_mut(id) {
            *x = extra;
        }
        self.attach(id, now);
    }

    pub(crate) fn wake(&mut self, q: u32) {
        let queue = self.queue_mut(q);
        if !queue.woken {
            queue.woken = true;
            self.woken.push(q);
        }
    }
}

/// Adds a failure to the task's errors unless the task has it already: the
/// op may be replayed over a checkpoint copied after it was applied.
fn record_failure(x: &mut Extra, f: &Failure, now: Timestamp) {
    match f.number {
        Some(n) if n <= x.failures => return,
        Some(n) => x.failures = n,
        // Written before failures were numbered: a failure equal to the
        // last one recorded is taken for a replay of it, as Spool did then.
        None => {
            let replayed = x.errors.last().is_some_and(|last| {
                last.attempt == f.attempt
                    && last.at == now
                    && last.message == truncate_message(&f.message)
            });
            if replayed {
                return;
            }
            x.failures += 1;
        }
    }
    push_error(&mut x.errors, f.attempt, now, &f.message);
}

fn set_format(e: &mut Entry, format: PayloadFormat) {
    match format {
        PayloadFormat::Json => e.flags |= flag::JSON,
        PayloadFormat::Binary => e.flags &= !flag::JSON,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;
    use crate::ops::{Claimed, Settlement};

    const T: Timestamp = Timestamp(1_000);
    const ID: u64 = 1;

    fn enqueued() -> State {
        State::with_one_task(ID, T, None, None)
    }

    fn claim(token: u64) -> Op {
        Op::Claim {
            now: T,
            owner: Arc::from("w"),
            tasks: vec![Claimed {
                id: ID,
                attempt: 1,
                token,
                expires_at: Timestamp(T.0 + 100),
            }],
        }
    }

    /// A failure of attempt 1, at T, "boom": after a retry, the next one
    /// looks just the same.
    fn fail(number: Option<u64>) -> Op {
        Op::Settle {
            now: T,
            tasks: vec![Settlement {
                id: ID,
                attempt: 1,
                next: Next::Dead,
                error: Some(Failure {
                    attempt: 1,
                    number,
                    message: "boom".into(),
                }),
            }],
            follow: Vec::new(),
        }
    }

    fn retry() -> Op {
        Op::Settle {
            now: T,
            tasks: vec![Settlement {
                id: ID,
                attempt: 0,
                next: Next::Waiting(T),
                error: None,
            }],
            follow: Vec::new(),
        }
    }

    fn recorded(state: &State) -> (usize, u64) {
        let x = state.tasks.extra(ID).unwrap();
        (x.errors.len(), x.failures)
    }

    #[test]
    fn equal_failures_are_recorded_and_a_replay_of_them_is_not() {
        let ops = [claim(1), fail(Some(1)), retry(), claim(2), fail(Some(2))];
        let mut state = enqueued();
        for op in &ops {
            state.apply(op, &[]);
        }
        assert_eq!(recorded(&state), (2, 2));
        // Replaying them all, as recovery does over a checkpoint copied
        // after they were applied, records nothing more.
        for op in &ops {
            state.apply(op, &[]);
        }
        assert_eq!(recorded(&state), (2, 2));
        state.apply(&retry(), &[]);
        state.apply(&claim(3), &[]);
        state.apply(&fail(Some(3)), &[]);
        assert_eq!(recorded(&state), (3, 3));
    }

    #[test]
    fn unnumbered_failures_from_older_logs_still_load() {
        let mut state = enqueued();
        for op in [claim(1), fail(None), fail(None), claim(2)] {
            state.apply(&op, &[]);
        }
        // As Spool read them when it wrote them: an equal failure right
        // after another is the same one.
        assert_eq!(recorded(&state), (1, 1));
        state.apply(&fail(Some(2)), &[]);
        assert_eq!(recorded(&state), (2, 2));
    }
}
