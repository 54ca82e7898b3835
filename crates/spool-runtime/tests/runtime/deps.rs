//! Dependencies in the runtime (docs/spec.md §3.2, §6): a job enqueued
//! after others runs once they have ended, and a batch's callback reads
//! from its `Context` how its members ended, on the engine and through a
//! server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use spool_core::{ParentFailure, Store};
use spool_runtime::{Client, Context, EnqueueOptions, Job, TaskError, Worker};

use crate::support::{eventually, remote, Embedded, Server};

#[derive(Serialize, Deserialize)]
struct Member {
    ok: bool,
}

impl Job for Member {
    const KIND: &'static str = "member";
    const QUEUE: &'static str = "batch";
}

#[derive(Serialize, Deserialize)]
struct Callback;

impl Job for Callback {
    const KIND: &'static str = "callback";
    const QUEUE: &'static str = "batch";
}

/// (completed, failed, still waited on) as each callback run saw them.
type Seen = Arc<Mutex<Vec<(u32, u32, usize)>>>;

async fn a_callback_sees_how_its_batch_ended(store: Arc<dyn Store>) {
    let client = Client::new(store.clone());
    let mut callback = EnqueueOptions::new().if_parent_fails(ParentFailure::Run);
    for ok in [true, false, true] {
        let member = client.enqueue(Member { ok }).await.unwrap();
        callback = callback.after(member.id);
    }
    let cb = client.enqueue_with(Callback, callback).await.unwrap().id;
    let pending = store.get(cb.into()).await.unwrap();
    assert_eq!(pending.state, spool_core::TaskState::Pending);

    let seen: Seen = Arc::default();
    let record = seen.clone();
    let worker = Worker::builder(store.clone())
        .register(|_ctx: Context, m: Member| async move {
            match m.ok {
                true => Ok(()),
                false => Err(TaskError::permanent("this member fails")),
            }
        })
        .register(move |ctx: Context, _: Callback| {
            let record = record.clone();
            async move {
                let d = ctx.deps().expect("a callback has dependencies");
                record
                    .lock()
                    .unwrap()
                    .push((d.completed(), d.failed, d.waiting_on.len()));
                Ok(())
            }
        })
        .start()
        .unwrap();
    eventually(Duration::from_secs(10), "the callback ran", || async {
        !seen.lock().unwrap().is_empty()
    })
    .await;
    assert!(worker.shutdown(Duration::from_secs(5)).await.finished);
    assert_eq!(*seen.lock().unwrap(), [(2, 1, 0)], "once, after all three");
}

#[tokio::test]
async fn a_callback_sees_its_batch_on_the_engine() {
    let e = Embedded::open();
    a_callback_sees_how_its_batch_ended(e.store.clone()).await;
}

#[tokio::test]
async fn a_callback_sees_its_batch_through_a_server() {
    let server = Server::builder().start().await;
    a_callback_sees_how_its_batch_ended(remote(&server)).await;
}
