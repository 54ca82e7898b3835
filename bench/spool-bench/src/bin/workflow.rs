//! A batch with a callback on the embedded engine (docs/spec.md §3.2): how
//! soon the callback runs after the last member's ack, and what waiting
//! for many parents costs the members' acks.
//!
//! ```text
//! cargo run --release -p spool-bench --bin workflow -- [--members 10000] [--claimers 4] [--ack-batch 100] [--rounds 5] [--result-bytes 0]
//! ```
//! Each round enqueues `--members` tasks on one queue, then a callback on
//! another that waits for all of them with `if_parent_fails: run`; one
//! claimer long-polls the callback queue while `--claimers` loops claim
//! `--ack-batch` members at a time and ack them. Reports, per round, the
//! members' drain rate and the time from the end of the last member's ack
//! to the callback's claim returning (negative when the claim returned
//! first: the release is in the same commit as the ack, and the waiting
//! claim is served in that turn), and checks the callback ran once, with
//! every member counted completed. The same drain without a callback runs
//! beside it, for the cost. With `--result-bytes N`, every member is
//! acked on its own (a batch of `--ack-batch` acks at once) with a result
//! of about N bytes, the plain drain acks one by one too, and the callback
//! must hold every member's result.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use spool::embedded::{Engine, EngineConfig};
use spool_core::{
    Ack, ClaimRequest, NewTask, Parent, ParentFailure, Payload, QueueName, Store, TaskId,
    TaskResult,
};
use tokio::sync::Mutex;
use tokio::task::JoinSet;

#[derive(Parser, Debug)]
struct Options {
    #[arg(long, default_value_t = 10_000)]
    members: usize,
    #[arg(long, default_value_t = 4)]
    claimers: usize,
    #[arg(long, default_value_t = 100)]
    ack_batch: u32,
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Members ack with a result of about this many bytes; 0: none.
    #[arg(long, default_value_t = 0)]
    result_bytes: usize,
}

/// How a drain acks what it claimed.
#[derive(Clone)]
enum Acks {
    /// In one `ack_many` per claim.
    Many,
    /// Each on its own, all of a claim's at once: with this result, if any.
    One(Option<TaskResult>),
}

fn payload() -> Payload {
    Payload::json(format!("{{\"pad\":\"{}\"}}", "x".repeat(88)))
}

/// Drains `members` tasks of `q` with `claimers` loops; when each loop
/// last finished an ack.
async fn drain(
    engine: &Arc<Engine>,
    q: &QueueName,
    claimers: usize,
    batch: u32,
    how: &Acks,
) -> Instant {
    let last = Arc::new(Mutex::new(Instant::now()));
    let mut loops = Vec::new();
    for i in 0..claimers {
        let (engine, q, last, how) = (engine.clone(), q.clone(), last.clone(), how.clone());
        loops.push(tokio::spawn(async move {
            let worker = format!("w{i}");
            loop {
                let got = engine
                    .claim(ClaimRequest::new(q.clone(), worker.as_str()).max(batch))
                    .await
                    .unwrap();
                if got.is_empty() {
                    return;
                }
                let acks: Vec<_> = got
                    .iter()
                    .map(|t| (t.id, t.lease.as_ref().unwrap().token))
                    .collect();
                match &how {
                    Acks::Many => {
                        for r in engine.ack_many(acks).await.unwrap() {
                            r.unwrap();
                        }
                    }
                    Acks::One(result) => {
                        let mut each = JoinSet::new();
                        for (id, token) in acks {
                            let ack = result.clone().map_or(Ack::Done, Ack::Result);
                            let engine = engine.clone();
                            each.spawn(async move { engine.ack(id, token, ack).await });
                        }
                        while let Some(r) = each.join_next().await {
                            r.unwrap().unwrap();
                        }
                    }
                }
                let now = Instant::now();
                let mut l = last.lock().await;
                *l = (*l).max(now);
            }
        }));
    }
    for l in loops {
        l.await.unwrap();
    }
    let l = *last.lock().await;
    l
}

async fn enqueue_members(engine: &Engine, q: &QueueName, n: usize) -> Vec<TaskId> {
    let tasks = (0..n).map(|_| NewTask::new(payload())).collect();
    let out = engine.enqueue(q, tasks).await.unwrap();
    out.into_iter().map(|o| o.id).collect()
}

#[tokio::main]
async fn main() {
    let o = Options::parse();
    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(Engine::open(EngineConfig::new(dir.path())).unwrap());
    let members = QueueName::new("members").unwrap();
    let plain = QueueName::new("plain").unwrap();
    let callbacks = QueueName::new("callbacks").unwrap();
    let (plain_acks, member_acks) = match o.result_bytes {
        0 => (Acks::Many, Acks::Many),
        n => {
            let text = format!("{{\"pad\":\"{}\"}}", "r".repeat(n.saturating_sub(10)));
            let result = TaskResult::from_json(&text).unwrap();
            (Acks::One(None), Acks::One(Some(result)))
        }
    };
    println!("round  plain/s  members/s  ratio  callback after last ack");
    for round in 1..=o.rounds {
        enqueue_members(&engine, &plain, o.members).await;
        let start = Instant::now();
        drain(&engine, &plain, o.claimers, o.ack_batch, &plain_acks).await;
        let plain_rate = o.members as f64 / start.elapsed().as_secs_f64();

        let ids = enqueue_members(&engine, &members, o.members).await;
        let callback = ids
            .iter()
            .fold(NewTask::new(payload()), |t, id| t.after(Parent::Task(*id)))
            .if_parent_fails(ParentFailure::Run);
        let cb = engine.enqueue(&callbacks, vec![callback]).await.unwrap()[0].id;
        let waiter = {
            let (engine, q) = (engine.clone(), callbacks.clone());
            tokio::spawn(async move {
                let got = engine
                    .claim(
                        ClaimRequest::new(q, "callback")
                            .max(10)
                            .wait(Duration::from_secs(30)),
                    )
                    .await
                    .unwrap();
                (got, Instant::now())
            })
        };
        let start = Instant::now();
        let last_ack = drain(&engine, &members, o.claimers, o.ack_batch, &member_acks).await;
        let rate = o.members as f64 / start.elapsed().as_secs_f64();
        let (got, claimed_at) = waiter.await.unwrap();
        assert_eq!(got.len(), 1, "the callback runs once");
        assert_eq!(got[0].id, cb);
        let deps = got[0].deps.as_deref().unwrap();
        assert_eq!((deps.completed() as usize, deps.failed), (o.members, 0));
        if let Acks::One(Some(_)) = member_acks {
            assert_eq!(deps.results.len(), o.members, "every member's result");
        }
        let after = if claimed_at >= last_ack {
            format!("+{:.2} ms", (claimed_at - last_ack).as_secs_f64() * 1e3)
        } else {
            format!("-{:.2} ms", (last_ack - claimed_at).as_secs_f64() * 1e3)
        };
        engine
            .ack(got[0].id, got[0].lease.as_ref().unwrap().token, Ack::Done)
            .await
            .unwrap();
        println!(
            "{round:>5}  {plain_rate:>7.0}  {rate:>9.0}  {:>5.2}  {after}",
            rate / plain_rate
        );
    }
}
