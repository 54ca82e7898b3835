//! Dependencies in the runtime (docs/spec.md §3.2, §6): a job enqueued
//! after others runs once they have ended, and a batch's callback reads
//! from its `Context` how its members ended and the results they left, on
//! the engine and through a server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use spool_core::{ParentFailure, Store};
use spool_runtime::{Client, Context, EnqueueOptions, TaskError, Worker};

use crate::support::{eventually, remote, Embedded, Server};
use crate::workflow_jobs::{Callback, Member};

/// (completed, failed, still waited on, the members' results) as each
/// callback run saw them.
type Seen = Arc<Mutex<Vec<(u32, u32, usize, Vec<u32>)>>>;

async fn a_callback_sees_how_its_batch_ended(store: Arc<dyn Store>) {
    let client = Client::new(store.clone());
    let mut callback = EnqueueOptions::new().if_parent_fails(ParentFailure::Run);
    let mut members = Vec::new();
    for (n, ok) in [(10, true), (20, false), (30, true)] {
        let member = client.enqueue(Member { ok, n }).await.unwrap();
        callback = callback.after(member.id);
        members.push(member.id);
    }
    let cb = client.enqueue_with(Callback, callback).await.unwrap().id;
    let pending = store.get(cb.into()).await.unwrap();
    assert_eq!(pending.state, spool_core::TaskState::Pending);

    let seen: Seen = Arc::default();
    let record = seen.clone();
    let worker = Worker::builder(store.clone())
        .register(|ctx: Context, m: Member| async move {
            // Even a member that fails leaves a result: it must not count.
            ctx.set_result(&m.n).unwrap();
            match m.ok {
                true => Ok(()),
                false => Err(TaskError::permanent("this member fails")),
            }
        })
        .register(move |ctx: Context, _: Callback| {
            let record = record.clone();
            let members = members.clone();
            async move {
                let d = ctx.deps().expect("a callback has dependencies");
                let results = members
                    .iter()
                    .filter_map(|id| ctx.parent_result::<u32>(*id))
                    .map(|r| r.expect("a result as the member left it"))
                    .collect();
                record
                    .lock()
                    .unwrap()
                    .push((d.completed(), d.failed, d.waiting_on.len(), results));
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
    assert_eq!(
        *seen.lock().unwrap(),
        [(2, 1, 0, vec![10, 30])],
        "once, after all three, with the results of those that completed"
    );
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
