//! The leases a worker's runs hold, for the watcher ([`super::watch`]) to
//! keep an eye on.
//!
//! A run registers its lease when it starts and drops the registration
//! ([`Holding`]) when its handler's outcome is known, before reporting it:
//! from then on its task may be gone by its own ack, which is no loss.
//! Invariants: an entry is removed only by the registration that made it
//! (the same id under another token is another lease); an entry the
//! watcher found lost is cut once and then left out of every look.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use spool_core::{LeaseToken, TaskId};
use tokio::sync::Notify;

use crate::context::Context;

struct Entry {
    token: LeaseToken,
    run: Context,
    lost: bool,
}

/// Every lease the worker's runs hold, and a doorbell rung when one is
/// added.
#[derive(Default)]
pub(crate) struct Leases {
    // A std mutex: held for a map operation, never across an await.
    held: Mutex<HashMap<TaskId, Entry>>,
    /// Rung when a lease is added: the watcher must cover it.
    pub(super) added: Notify,
}

impl Leases {
    fn lock(&self) -> MutexGuard<'_, HashMap<TaskId, Entry>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers the lease `run` holds until the guard is dropped.
    pub(crate) fn hold(self: &Arc<Self>, run: &Context) -> Holding {
        let (id, token) = (run.id(), run.token());
        let entry = Entry {
            token,
            run: run.clone(),
            lost: false,
        };
        self.lock().insert(id, entry);
        self.added.notify_one();
        Holding {
            leases: self.clone(),
            id,
            token,
        }
    }

    /// The leases held and not yet found lost.
    pub(super) fn watched(&self) -> Vec<(TaskId, LeaseToken)> {
        self.lock()
            .iter()
            .filter(|(_, e)| !e.lost)
            .map(|(id, e)| (*id, e.token))
            .collect()
    }

    /// Cuts off the run holding `id` under `token`, if it still does.
    pub(super) fn lose(&self, id: TaskId, token: LeaseToken) {
        let run = {
            let mut held = self.lock();
            match held.get_mut(&id) {
                Some(e) if e.token == token && !e.lost => {
                    e.lost = true;
                    e.run.clone()
                }
                _ => return,
            }
        };
        tracing::info!(
            task = id.0,
            "the lease was lost (cancelled, or taken over): cutting the run off"
        );
        run.lose_lease();
    }

    pub(super) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// A run's registration: dropping it takes the lease out of the watch.
pub(crate) struct Holding {
    leases: Arc<Leases>,
    id: TaskId,
    token: LeaseToken,
}

impl Drop for Holding {
    fn drop(&mut self) {
        let mut held = self.leases.lock();
        if held.get(&self.id).is_some_and(|e| e.token == self.token) {
            held.remove(&self.id);
        }
    }
}
