//! Applying ops to state: the one code path for live writes and recovery.
//!
//! An op naming a task that is not there changes nothing for that task: in
//! replay over a checkpoint it is a task the log deletes later anyway.

use spool_core::transition::push_error;
use spool_core::{Kind, QueueName, QueueSettings, Schedule, TaskState, Timestamp};

use super::{Entry, LeaseSlot, PayloadRef, State};
use crate::ops::{NewEntry, Next, Op};

impl State {
    pub(crate) fn apply(&mut self, op: &Op) {
        match op {
            Op::Enqueue { now, queue, tasks } => self.enqueue(*now, queue, tasks),
            Op::Claim { now, owner, tasks } => {
                for c in tasks {
                    self.change(c.id, *now, |e| {
                        e.state = TaskState::Leased;
                        e.attempt = c.attempt;
                        e.lease = Some(LeaseSlot {
                            owner: owner.clone(),
                            token: c.token,
                            expires_at: c.expires_at,
                        });
                    });
                }
            }
            Op::Settle { now, tasks } => {
                for s in tasks {
                    self.change(s.id, *now, |e| {
                        e.attempt = s.attempt;
                        e.lease = None;
                        if let Some((attempt, message)) = &s.error {
                            push_error(&mut e.errors, *attempt, *now, message);
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
            }
            Op::Extend {
                now,
                id,
                expires_at,
            } => {
                self.change(*id, *now, |e| {
                    if let Some(l) = &mut e.lease {
                        l.expires_at = *expires_at;
                    }
                });
            }
            Op::Update { now, id, patch } => {
                self.change(*id, *now, |e| {
                    if let Some(p) = &patch.payload {
                        e.payload = PayloadRef::new(p.clone());
                    }
                    if let Some(at) = patch.run_at {
                        e.run_at = at;
                    }
                    if let Some(p) = patch.priority {
                        e.priority = p;
                    }
                });
            }
            Op::Delete { now, ids } => {
                for &id in ids {
                    let Some(slot) = self.tasks.slot_of(id) else {
                        continue;
                    };
                    self.detach(slot);
                    if let Some(e) = self.tasks.remove(slot) {
                        if let Some(key) = &e.key {
                            let queue = self.queue_mut(e.queue);
                            let until = now.plus(queue.settings.dedup_window);
                            queue.keys.retire(key, id, until);
                        }
                    }
                }
            }
            Op::PutQueue { queue, settings } => {
                let q = self.ensure_queue(queue, || settings.clone());
                let resumed = self.queue(q).settings.paused && !settings.paused;
                self.queue_mut(q).settings = settings.clone();
                if resumed {
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
                    self.enqueue(*now, queue, std::slice::from_ref(t));
                }
            }
        }
    }

    fn enqueue(&mut self, now: Timestamp, queue: &QueueName, tasks: &[NewEntry]) {
        let q = self.ensure_queue(queue, QueueSettings::default);
        self.tasks.reserve(tasks.len());
        // Tasks of one batch nearly always share a kind: hash it once.
        let mut last_kind: Option<(&Kind, u32)> = None;
        for t in tasks {
            if let Some(slot) = self.tasks.slot_of(t.id) {
                self.detach(slot);
                self.tasks.remove(slot);
            }
            let kind = match last_kind {
                Some((k, i)) if *k == t.kind => i,
                _ => {
                    let i = self.intern_kind(&t.kind);
                    last_kind = Some((&t.kind, i));
                    i
                }
            };
            if let Some(key) = &t.key {
                self.queue_mut(q).keys.bind(key.clone(), t.id);
            }
            let slot = self.tasks.insert(Entry {
                id: t.id,
                queue: q,
                kind,
                priority: t.priority,
                state: TaskState::Ready,
                attempt: 0,
                max_attempts: t.max_attempts,
                run_at: t.run_at,
                lease_ms: t.lease_ms,
                created_at: now,
                updated_at: now,
                payload: PayloadRef::new(t.payload.clone()),
                key: t.key.clone(),
                lease: None,
                errors: Vec::new(),
            });
            self.attach(slot, now);
            self.next_id = self.next_id.max(t.id + 1);
        }
    }

    /// Detaches the task, lets `f` change it, stamps it and re-attaches it.
    fn change(&mut self, id: u64, now: Timestamp, f: impl FnOnce(&mut Entry)) {
        let Some(slot) = self.tasks.slot_of(id) else {
            return;
        };
        self.detach(slot);
        if let Some(e) = self.tasks.get_mut(slot) {
            f(e);
            e.updated_at = now;
        }
        self.attach(slot, now);
    }

    pub(crate) fn wake(&mut self, q: u32) {
        let queue = self.queue_mut(q);
        if !queue.woken {
            queue.woken = true;
            self.woken.push(q);
        }
    }
}
