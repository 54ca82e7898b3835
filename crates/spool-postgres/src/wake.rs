//! Waking waiting claimers: a per-queue signal in this process, fed by a
//! dedicated LISTEN connection.
//!
//! Every change that makes a task ready (enqueue, release, a retry, a due
//! task promoted, a lease written down as expired, a resume) leads to
//! `NOTIFY "<schema>.ready", '<queue>'`: sent after commit by
//! [`crate::notifier`], inside the sweeper's promotion statement, or inside
//! the caller's transaction for a transactional enqueue (so a rollback
//! wakes no one). The process that made the change also wakes its own
//! claimers at once. The listener turns each notification into a wake-up
//! of that queue's doorbell, a [`Notify`].
//!
//! A wake-up rouses one waiting claimer, not all of them: with every waiter
//! roused, each enqueue at a steady rate set off one claim statement per
//! waiting consumer, and all but one came back empty (16 consumers made
//! PostgreSQL run 16 claims per task). The claimer passes the wake-up on
//! when it took a full batch (there may be more), and tokio hands a
//! wake-up it received but did not use to the next waiter. While the
//! listener is down, waiters fall back to polling; when it comes back,
//! every waiter is woken, since notifications sent meanwhile are lost.
//!
//! The same channel tells schedulers that a schedule was put or deleted:
//! its payload is then [`SCHEDULES`], which no queue name can be; and it
//! tells lease waiters that a task was cancelled: [`CANCELS`]. Those two
//! rouse every waiter of theirs (a watch), since each waits for its own
//! leases.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio_postgres::AsyncMessage;

use crate::floor::{Floors, Ready};
use crate::tls::MakeTls;

/// The payload announcing a schedule change ('@' is not in queue names).
pub(crate) const SCHEDULES: &str = "@schedules";
/// The payload announcing that a task was cancelled.
pub(crate) const CANCELS: &str = "@cancels";

/// One doorbell per queue that someone is claiming from, and the
/// schedulers' signal.
#[derive(Debug, Default)]
pub(crate) struct Wakeups {
    // A std mutex: held for a map operation, never across an await. The map
    // holds one `Arc` of each doorbell; claimers hold the others.
    queues: Mutex<HashMap<String, Arc<Notify>>>,
    schedules: watch::Sender<()>,
    cancels: watch::Sender<()>,
}

impl Wakeups {
    /// The doorbell of `queue`. Enable a `notified()` future of it before
    /// looking for work, so a wake-up during the look is not lost.
    pub(crate) fn bell(&self, queue: &str) -> Arc<Notify> {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        queues.entry(queue.to_string()).or_default().clone()
    }

    /// A receiver that sees every schedule change announced.
    pub(crate) fn schedule_changes(&self) -> watch::Receiver<()> {
        self.schedules.subscribe()
    }

    /// A receiver that sees every cancel announced.
    pub(crate) fn cancels(&self) -> watch::Receiver<()> {
        self.cancels.subscribe()
    }

    /// Wakes one claimer waiting on `queue` in this process (or, for
    /// [`SCHEDULES`], the schedulers; for [`CANCELS`], the lease waiters).
    pub(crate) fn wake(&self, queue: &str) {
        if queue == SCHEDULES {
            self.schedules.send_replace(());
            return;
        }
        if queue == CANCELS {
            self.cancels.send_replace(());
            return;
        }
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(bell) = queues.get(queue) {
            if Arc::strong_count(bell) == 1 {
                // Nobody is claiming: forget the queue, so the map holds
                // only queues with claimers.
                queues.remove(queue);
            } else {
                bell.notify_one();
            }
        }
    }

    /// Wakes every waiter of every queue, the schedulers and the lease
    /// waiters.
    pub(crate) fn wake_all(&self) {
        self.schedules.send_replace(());
        self.cancels.send_replace(());
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        queues.retain(|_, bell| Arc::strong_count(bell) > 1);
        for bell in queues.values() {
            bell.notify_waiters();
        }
    }
}

/// Shortest and longest pause between reconnection attempts.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// Keeps a LISTEN connection open for as long as the store lives,
/// reconnecting with exponential backoff.
pub(crate) async fn listen(
    config: tokio_postgres::Config,
    tls: MakeTls,
    channel: String,
    wakeups: Arc<Wakeups>,
    floors: Arc<Floors>,
) {
    let mut pause = RECONNECT_MIN;
    loop {
        match listen_once(&config, tls.clone(), &channel, &wakeups, &floors).await {
            Ok(()) => tracing::warn!("the LISTEN connection closed; reconnecting"),
            Err(e) => tracing::warn!(error = %e, "the LISTEN connection failed; reconnecting"),
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(RECONNECT_MAX);
    }
}

/// One LISTEN session, until its connection ends.
async fn listen_once(
    config: &tokio_postgres::Config,
    tls: MakeTls,
    channel: &str,
    wakeups: &Wakeups,
    floors: &Floors,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(tls).await?;
    // The connection must be polled for the LISTEN to complete; the same
    // loop then delivers notifications until the connection ends.
    let drive = async {
        while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(n) = message? {
                let (queue, ready) = Ready::parse(n.payload());
                floors.lower(queue, ready);
                wakeups.wake(queue);
            }
        }
        Ok(())
    };
    tokio::pin!(drive);
    let statement = format!("LISTEN \"{channel}\"");
    let listen = client.batch_execute(&statement);
    tokio::select! {
        done = &mut drive => return done,
        listening = listen => listening?,
    }
    tracing::debug!(channel, "listening for ready work");
    // Notifications sent while no connection listened are lost.
    floors.reset(None);
    wakeups.wake_all();
    drive.await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wake_up_rouses_one_claimer_of_that_queue_only() {
        let w = Wakeups::default();
        let (a, b) = (w.bell("a"), w.bell("b"));
        let (a1, a2, b1) = (a.notified(), a.notified(), b.notified());
        tokio::pin!(a1, a2, b1);
        for n in [a1.as_mut(), a2.as_mut(), b1.as_mut()] {
            n.enable();
        }
        w.wake("a");
        // A zero timeout polls the future once: ready now, or not.
        let zero = Duration::ZERO;
        assert!(tokio::time::timeout(zero, a1.as_mut()).await.is_ok());
        let second = tokio::time::timeout(zero, a2.as_mut()).await;
        assert!(second.is_err(), "one wake-up, one claimer");
        assert!(tokio::time::timeout(zero, b1.as_mut()).await.is_err());
        w.wake_all();
        assert!(tokio::time::timeout(zero, a2.as_mut()).await.is_ok());
        assert!(tokio::time::timeout(zero, b1.as_mut()).await.is_ok());
    }

    #[test]
    fn queues_without_claimers_are_forgotten() {
        let w = Wakeups::default();
        drop(w.bell("gone"));
        w.wake("gone");
        let queues = w.queues.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(queues.is_empty());
    }
}
