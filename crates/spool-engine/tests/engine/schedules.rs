//! Schedules survive restarts and checkpoints: a tick fired before a
//! restart is never fired again after it.

use std::sync::Arc;
use std::time::Duration;

use spool_core::{Cadence, Kind, ManualClock, Payload, QueueName, ScheduleSpec, Store, Timestamp};
use spool_engine::{Engine, EngineConfig};

#[tokio::test]
async fn fired_ticks_survive_restart_and_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(ManualClock::new(Timestamp(1_700_000_000_000)));
    let mut cfg = EngineConfig::new(dir.path());
    cfg.clock = clock.clone();
    let name = Kind::new("beat").unwrap();
    let spec = ScheduleSpec {
        name: name.clone(),
        queue: QueueName::new("beats").unwrap(),
        kind: None,
        payload: Payload::json(&b"1"[..]),
        cadence: Cadence::Every(Duration::from_secs(1)),
        deadline: None,
    };
    let engine = Engine::open(cfg.clone()).unwrap();
    engine.put_schedule(spec.clone()).await.unwrap();
    clock.advance(Duration::from_millis(2500));
    let tick = Timestamp(1_700_000_002_000);
    assert!(engine.fire_schedule(&name, tick).await.unwrap().is_some());
    drop(engine);

    let engine = Engine::open(cfg.clone()).unwrap();
    assert_eq!(engine.fire_schedule(&name, tick).await.unwrap(), None);
    let listed = engine.list_schedules().await.unwrap();
    assert_eq!(listed[0].last_fire_at, Some(tick));
    assert_eq!(listed[0].spec, spec);
    engine.checkpoint().await.unwrap();
    clock.advance(Duration::from_secs(1));
    let next = Timestamp(1_700_000_003_000);
    assert!(engine.fire_schedule(&name, next).await.unwrap().is_some());
    drop(engine);

    let engine = Engine::open(cfg).unwrap();
    assert_eq!(engine.fire_schedule(&name, next).await.unwrap(), None);
    assert_eq!(
        engine.stats().await.unwrap()[0].counts.total(),
        2,
        "one task per tick"
    );
}
