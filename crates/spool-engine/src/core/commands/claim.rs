//! Claims, now or parked as long polls, and serving parked claims when
//! tasks become ready or their wait runs out.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;
use spool_core::transition::lease_for;
use spool_core::{ClaimRequest, QueueName};

use crate::core::waiters::{ClaimReply, Waiter};
use crate::core::Core;
use crate::ops::{Claimed, Op};
use crate::state::TaskView;

impl Core {
    /// Claims now, or parks the request as a long poll.
    pub(crate) fn claim(&mut self, req: ClaimRequest, reply: ClaimReply) {
        let admitted = self
            .refuse_if_poisoned()
            .and_then(|()| req.validate())
            .and_then(|()| self.refuse_if_full());
        if let Err(e) = admitted {
            self.respond(Err(e), reply);
            return;
        }
        let q = self.state.queue_of(&req.queue);
        let tasks = match q {
            Some(q) => self.claim_now(q, &req.worker, req.max, req.lease),
            None => Vec::new(),
        };
        if tasks.is_empty() && !req.wait.is_zero() {
            if let Some(q) = q {
                self.watch_refill(q);
            }
            let deadline = Instant::now() + req.wait;
            let waiter = Waiter {
                worker: req.worker,
                max: req.max,
                lease: req.lease,
                reply,
            };
            self.waiters.park(req.queue, waiter, deadline);
            return;
        }
        self.respond(Ok(tasks), reply);
    }

    /// Leases up to `max` tasks from the front of the queue's ready order.
    fn claim_now(
        &mut self,
        q: u32,
        worker: &str,
        max: u32,
        lease: Option<Duration>,
    ) -> Vec<TaskView> {
        let now = self.now();
        let queue = self.state.queue_mut(q);
        if queue.settings.paused {
            return Vec::new();
        }
        queue.unthrottle_groups(now);
        let default_lease = queue.settings.lease;
        let allowed = queue.allowance(now).min(max);
        if allowed == 0 {
            if queue.counts.ready > 0 {
                count_throttled(&queue.name);
            }
            return Vec::new();
        }
        let ids = self.state.claim_order(q, allowed as usize, now);
        let queue = self.state.queue(q);
        if ids.is_empty() && queue.counts.ready > 0 && queue.groups.next_refill().is_some() {
            // Ready tasks, none claimable, and groups out of tokens.
            count_throttled(&queue.name);
        }
        let mut rng = rand::thread_rng();
        let claimed: Vec<Claimed> = ids
            .iter()
            .filter_map(|&id| {
                let e = self.state.tasks.get(id)?;
                let own = self.state.tasks.extra(id).and_then(|x| x.lease_ms);
                Some(Claimed {
                    id,
                    attempt: e.attempt.saturating_add(1),
                    token: rng.gen(),
                    expires_at: now.plus(lease_for(own, lease, default_lease)),
                })
            })
            .collect();
        if claimed.is_empty() {
            return Vec::new();
        }
        let took = u32::try_from(claimed.len()).unwrap_or(u32::MAX);
        self.state.queue_mut(q).took(took, now);
        self.commit(Op::Claim {
            now,
            owner: Arc::from(worker),
            tasks: claimed,
        });
        ids.into_iter()
            .filter_map(|id| self.state.view(id))
            .collect()
    }

    /// Hands newly ready tasks to parked long polls, oldest waiter first.
    pub(in crate::core) fn serve_waiters(&mut self) {
        if !self.can_write() {
            return;
        }
        for q in std::mem::take(&mut self.state.woken) {
            self.state.queue_mut(q).woken = false;
            let name = self.state.queue(q).name.clone();
            while self.waiters.has_waiters(&name) {
                let now = self.last_now;
                let queue = self.state.queue_mut(q);
                if queue.settings.paused {
                    break;
                }
                queue.unthrottle_groups(now);
                if !self.state.claimable(q) {
                    // Woken again when a task becomes ready, a group's
                    // slot frees or its bucket refills.
                    self.watch_refill(q);
                    break;
                }
                let queue = self.state.queue_mut(q);
                if queue.allowance(now) == 0 {
                    // Woken again by a freed slot, or when tokens refill.
                    self.watch_refill(q);
                    break;
                }
                let Some(w) = self.waiters.pop(&name) else {
                    break;
                };
                let mut tasks = self.claim_now(q, &w.worker, w.max, w.lease);
                for t in &mut tasks {
                    let fresh = &mut self.fresh;
                    t.in_hand = fresh
                        .binary_search_by_key(&t.task.id.0, |(id, _)| *id)
                        .ok()
                        .map(|i| std::mem::take(&mut fresh[i].1));
                }
                self.respond(Ok(tasks), w.reply);
            }
        }
    }

    /// When the rate limit of queue `q` allows nothing now, has its
    /// waiters served again once a token has refilled.
    fn watch_refill(&mut self, q: u32) {
        let now = self.last_now;
        if let Some(wait) = self.state.queue_mut(q).refill_in(now) {
            self.refills.watch(now.plus(wait), q);
        }
    }

    pub(in crate::core) fn expire_waiters(&mut self) {
        for w in self.waiters.take_expired(Instant::now()) {
            self.respond(Ok(Vec::new()), w.reply);
        }
    }
}

/// Counts a claim on `queue` that its limits held back while tasks were
/// ready (docs/spec.md §7).
fn count_throttled(queue: &QueueName) {
    metrics::counter!("spool_claims_throttled_total", "queue" => queue.to_string()).increment(1);
}
