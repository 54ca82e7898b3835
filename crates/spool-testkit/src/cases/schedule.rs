//! Schedules (docs/spec.md §5): stored definitions and the tick guard that makes a
//! tick fire once however many schedulers run.

use std::sync::Arc;
use std::time::Duration;

use spool_core::schedule::tick_key;
use spool_core::{Cadence, Payload, QueueSettings, ScheduleSpec, TaskRef, Timestamp};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

fn every(name: &str, queue: &str, ms: u64) -> ScheduleSpec {
    ScheduleSpec {
        name: kind(name),
        queue: queue_name(queue),
        kind: None,
        payload: Payload::json(&b"{\"check\":true}"[..]),
        cadence: Cadence::Every(Duration::from_millis(ms)),
        deadline: None,
    }
}

/// The latest tick due now, after moving time past at least one tick.
async fn due_tick(fx: &Fixture, name: &str) -> Timestamp {
    fx.advance(Duration::from_millis(250)).await;
    let now = fx.store.now().await.unwrap();
    let s = fx
        .store
        .list_schedules()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.spec.name.as_str() == name)
        .expect("the schedule is listed");
    s.due(now)
        .expect("a tick is due after 250 ms of a 100 ms schedule")
}

/// Put, list (with next fire), replace, delete; bad cadences are refused.
pub async fn schedules_round_trip(fx: Fixture) {
    make_queue(&fx, "sched", QueueSettings::default()).await;
    let put = fx
        .store
        .put_schedule(every("beat", "sched", 1000))
        .await
        .unwrap();
    assert_eq!(put.spec, every("beat", "sched", 1000));
    assert_eq!(put.last_fire_at, None);
    let now = fx.store.now().await.unwrap();
    let next = put
        .next_fire_at()
        .expect("an every schedule always has a next tick");
    assert!(next > now.minus(Duration::from_secs(1)) && next <= now.plus(Duration::from_secs(1)));

    let replaced = fx
        .store
        .put_schedule(every("beat", "sched", 2000))
        .await
        .unwrap();
    assert_eq!(
        replaced.spec.cadence,
        Cadence::Every(Duration::from_secs(2))
    );
    assert_eq!(
        replaced.created_at, put.created_at,
        "replacing keeps the schedule's history"
    );
    assert_eq!(fx.store.list_schedules().await.unwrap().len(), 1);

    expect_code(
        fx.store.put_schedule(every("fast", "sched", 99)).await,
        "bad_request",
    );
    let mut cron = every("cron", "sched", 1000);
    cron.cadence = Cadence::Cron {
        expr: "0 * * *".into(),
        tz: None,
    };
    expect_code(fx.store.put_schedule(cron).await, "bad_request");

    fx.store.delete_schedule(&kind("beat")).await.unwrap();
    assert!(fx.store.list_schedules().await.unwrap().is_empty());
    expect_code(fx.store.delete_schedule(&kind("beat")).await, "not_found");
}

/// A tick fires once: its task has the tick's key, run_at and deadline
/// lease; firing it again, or an earlier tick, does nothing.
pub async fn a_tick_fires_once(fx: Fixture) {
    make_queue(&fx, "ticks", QueueSettings::default()).await;
    let mut spec = every("tock", "ticks", 100);
    spec.deadline = Some(Duration::from_millis(50));
    fx.store.put_schedule(spec).await.unwrap();
    let tick = due_tick(&fx, "tock").await;

    let fired = fx.store.fire_schedule(&kind("tock"), tick).await.unwrap();
    let fired = fired.expect("the first fire of a tick enqueues");
    assert!(!fired.duplicate);
    let task = get(&fx, fired.id).await;
    assert_eq!(task.key, Some(tick_key(&kind("tock"), tick)));
    assert_eq!(task.run_at, tick);
    assert_eq!(task.lease_ms, Some(50));
    assert_eq!(task.kind.as_str(), "ticks");
    let by_key = fx
        .store
        .get(TaskRef::Key(
            queue_name("ticks"),
            tick_key(&kind("tock"), tick),
        ))
        .await
        .unwrap();
    assert_eq!(by_key.id, fired.id);

    assert_eq!(
        fx.store.fire_schedule(&kind("tock"), tick).await.unwrap(),
        None
    );
    let earlier = tick.minus(Duration::from_millis(100));
    assert_eq!(
        fx.store
            .fire_schedule(&kind("tock"), earlier)
            .await
            .unwrap(),
        None
    );
    let listed = fx.store.list_schedules().await.unwrap();
    assert_eq!(listed[0].last_fire_at, Some(tick));
    assert_eq!(
        listed[0].next_fire_at(),
        Some(tick.plus(Duration::from_millis(100)))
    );
}

/// Many schedulers firing the same tick at once: exactly one enqueues.
pub async fn concurrent_fires_enqueue_one_task(fx: Fixture) {
    make_queue(&fx, "herd", QueueSettings::default()).await;
    fx.store
        .put_schedule(every("herd", "herd", 100))
        .await
        .unwrap();
    let tick = due_tick(&fx, "herd").await;
    let store = fx.store.clone();
    let fires = (0..16).map(|_| {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.fire_schedule(&kind("herd"), tick).await })
    });
    let mut enqueued = 0;
    for f in fires {
        if let Some(out) = f.await.unwrap().unwrap() {
            assert!(!out.duplicate);
            enqueued += 1;
        }
    }
    assert_eq!(enqueued, 1, "one task per tick");
    assert_eq!(stats_of(&fx, &queue_name("herd")).await.counts.total(), 1);
}

/// Ticks that are not the schedule's, lie in the future, or name no
/// schedule are refused.
pub async fn bad_ticks_are_refused(fx: Fixture) {
    make_queue(&fx, "strict", QueueSettings::default()).await;
    fx.store
        .put_schedule(every("s", "strict", 100))
        .await
        .unwrap();
    let tick = due_tick(&fx, "s").await;
    expect_code(
        fx.store
            .fire_schedule(&kind("s"), tick.plus(Duration::from_millis(37)))
            .await,
        "bad_request",
    );
    expect_code(
        fx.store
            .fire_schedule(&kind("s"), tick.plus(Duration::from_secs(3600)))
            .await,
        "bad_request",
    );
    expect_code(
        fx.store.fire_schedule(&kind("nope"), tick).await,
        "not_found",
    );
    assert_eq!(stats_of(&fx, &queue_name("strict")).await.counts.total(), 0);
}
