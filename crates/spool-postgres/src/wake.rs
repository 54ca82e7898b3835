//! Waking waiting claimers: a per-queue signal in this process, fed by a
//! dedicated LISTEN connection.
//!
//! Every change that makes a task ready (enqueue, release, a retry, a due
//! task promoted, a lease written down as expired, a resume) sends
//! `NOTIFY "<schema>.ready", '<queue>'`, in the same transaction where it
//! can, so a rolled-back enqueue wakes no one. The listener turns each
//! notification into a bump of that queue's [`watch`] channel. A burst of
//! notifications coalesces: a waiter wakes once and claims what is there.
//! While the listener is down, waiters fall back to polling; when it comes
//! back, every waiter is woken, since notifications sent meanwhile are lost.

use std::collections::HashMap;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::{AsyncMessage, NoTls};

/// One signal per queue that someone waits on.
#[derive(Debug, Default)]
pub(crate) struct Wakeups {
    // A std mutex: held for a map operation, never across an await.
    queues: Mutex<HashMap<String, watch::Sender<u64>>>,
}

impl Wakeups {
    /// A receiver that changes after the next wake-up of `queue`. Subscribe
    /// before looking for work, so a wake-up in between is not lost.
    pub(crate) fn subscribe(&self, queue: &str) -> watch::Receiver<u64> {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        queues
            .entry(queue.to_string())
            .or_insert_with(|| watch::channel(0).0)
            .subscribe()
    }

    /// Wakes every claimer waiting on `queue` in this process.
    pub(crate) fn wake(&self, queue: &str) {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(tx) = queues.get(queue) {
            if tx.receiver_count() == 0 {
                // Nobody waits: forget the queue, so the map holds only
                // queues with waiters.
                queues.remove(queue);
            } else {
                tx.send_modify(|n| *n = n.wrapping_add(1));
            }
        }
    }

    /// Wakes every waiter of every queue.
    pub(crate) fn wake_all(&self) {
        let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
        queues.retain(|_, tx| tx.receiver_count() > 0);
        for tx in queues.values() {
            tx.send_modify(|n| *n = n.wrapping_add(1));
        }
    }
}

/// Shortest and longest pause between reconnection attempts.
const RECONNECT_MIN: Duration = Duration::from_millis(100);
const RECONNECT_MAX: Duration = Duration::from_secs(5);

/// Keeps a LISTEN connection open for as long as the store lives,
/// reconnecting with exponential backoff.
pub(crate) async fn listen(config: tokio_postgres::Config, channel: String, wakeups: Arc<Wakeups>) {
    let mut pause = RECONNECT_MIN;
    loop {
        match listen_once(&config, &channel, &wakeups).await {
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
    channel: &str,
    wakeups: &Wakeups,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(NoTls).await?;
    // The connection must be polled for the LISTEN to complete; the same
    // loop then delivers notifications until the connection ends.
    let drive = async {
        while let Some(message) = poll_fn(|cx| connection.poll_message(cx)).await {
            if let AsyncMessage::Notification(n) = message? {
                wakeups.wake(n.payload());
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
    wakeups.wake_all();
    drive.await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wake_up_reaches_subscribers_of_that_queue_only() {
        let w = Wakeups::default();
        let mut a = w.subscribe("a");
        let b = w.subscribe("b");
        w.wake("a");
        assert!(a.has_changed().unwrap_or(false));
        assert!(!b.has_changed().unwrap_or(true));
        a.mark_unchanged();
        w.wake_all();
        assert!(a.has_changed().unwrap_or(false));
        assert!(b.has_changed().unwrap_or(false));
    }

    #[test]
    fn queues_without_waiters_are_forgotten() {
        let w = Wakeups::default();
        drop(w.subscribe("gone"));
        w.wake("gone");
        let queues = w.queues.lock().unwrap_or_else(PoisonError::into_inner);
        assert!(queues.is_empty());
    }
}
