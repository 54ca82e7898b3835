//! Queue settings (docs/spec.md §4): put and get, validation, unknown queues,
//! changes that keep every task, and partial changes that keep every field
//! they do not name, a concurrent pause included.

use std::time::Duration;

use spool_core::{ListRequest, QueueChange, QueueSettings, RateLimit, StoreError, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

fn custom() -> QueueSettings {
    QueueSettings {
        lease: Duration::from_millis(12_345),
        max_attempts: 9,
        backoff_base: Duration::from_millis(250),
        backoff_max: Duration::from_secs(7),
        dedup_window: Duration::from_secs(61),
        max_payload: 4096,
        paused: true,
        rate_limit: Some(RateLimit {
            limit: 50,
            period: Duration::from_secs(2),
            burst: 5,
        }),
        max_leased: Some(7),
        group_concurrency: Some(3),
        group_rate_limit: Some(RateLimit {
            limit: 4,
            period: Duration::from_millis(1500),
            burst: 2,
        }),
    }
}

/// put_queue answers the settings it stored; get_queue gives them back; a
/// second put replaces them.
pub async fn queue_settings_round_trip(fx: Fixture) {
    let q = queue_name("configured");
    let put = fx.store.put_queue(&q, custom().into()).await.unwrap();
    assert_eq!(put, custom());
    assert_eq!(fx.store.get_queue(&q).await.unwrap(), custom());

    let replaced = QueueSettings {
        max_payload: 64 * 1024 * 1024,
        ..QueueSettings::default()
    };
    fx.store
        .put_queue(&q, replaced.clone().into())
        .await
        .unwrap();
    assert_eq!(fx.store.get_queue(&q).await.unwrap(), replaced);
}

/// Incoherent settings are bad_request and change nothing, neither an
/// existing queue nor a new one.
pub async fn invalid_queue_settings_are_refused(fx: Fixture) {
    let q = make_queue(&fx, "strict", custom()).await;
    let fresh = queue_name("never-made");
    let invalid = [
        QueueSettings {
            lease: Duration::ZERO,
            ..custom()
        },
        QueueSettings {
            max_attempts: 0,
            ..custom()
        },
        QueueSettings {
            backoff_base: Duration::from_secs(8),
            ..custom()
        },
        QueueSettings {
            max_payload: 64 * 1024 * 1024 + 1,
            ..custom()
        },
        QueueSettings {
            max_leased: Some(0),
            ..custom()
        },
        QueueSettings {
            rate_limit: Some(RateLimit {
                limit: 1,
                period: Duration::from_secs(1),
                burst: 0,
            }),
            ..custom()
        },
        QueueSettings {
            rate_limit: Some(RateLimit {
                limit: 0,
                period: Duration::from_secs(1),
                burst: 1,
            }),
            ..custom()
        },
    ];
    for bad in invalid {
        expect_code(
            fx.store.put_queue(&q, bad.clone().into()).await,
            "bad_request",
        );
        expect_code(fx.store.put_queue(&fresh, bad.into()).await, "bad_request");
    }
    // Fine alone, but over the queue's backoff_max of 7 s.
    let slower = QueueChange {
        backoff_base: Some(Duration::from_secs(8)),
        ..QueueChange::default()
    };
    expect_code(fx.store.put_queue(&q, slower).await, "bad_request");
    assert_eq!(fx.store.get_queue(&q).await.unwrap(), custom());
    expect_code(fx.store.get_queue(&fresh).await, "not_found");
}

/// A queue nobody made is QueueNotFound, code not_found, and cannot be
/// paused or resumed into existence.
pub async fn unknown_queue_is_not_found(fx: Fixture) {
    let q = queue_name("ghost");
    let err = expect_code(fx.store.get_queue(&q).await, "not_found");
    assert_eq!(err, StoreError::QueueNotFound(q.clone()));
    expect_code(fx.store.set_paused(&q, true).await, "not_found");
    expect_code(fx.store.set_paused(&q, false).await, "not_found");
    expect_code(fx.store.get_queue(&q).await, "not_found");
}

/// Changing a queue's settings keeps every task in the state it was in.
pub async fn changing_settings_keeps_tasks(fx: Fixture) {
    let q = make_queue(&fx, "reconfigured", quick()).await;
    let dead = dead_task(&fx, &q, job("dead")).await;
    let ready = enqueue_n(&fx, &q, 3).await;
    let later = job("scheduled").delay(Duration::from_secs(3600));
    let scheduled = enqueue(&fx, &q, later).await;
    let before = list_all(&fx, ListRequest::new(q.clone())).await;

    let changed = QueueSettings {
        lease: Duration::from_secs(10),
        max_attempts: 3,
        dedup_window: Duration::from_secs(1),
        max_payload: 1024,
        ..quick()
    };
    fx.store.put_queue(&q, changed.into()).await.unwrap();
    let after = list_all(&fx, ListRequest::new(q.clone())).await;
    let states =
        |ts: &[spool_core::Task]| -> Vec<_> { ts.iter().map(|t| (t.id, t.state)).collect() };
    assert_eq!(states(&after), states(&before));
    assert_eq!(get(&fx, dead).await.state, TaskState::Dead);
    assert_eq!(get(&fx, scheduled).await.state, TaskState::Scheduled);
    assert_eq!(ids(&claim(&fx, &q, WORKER, 10).await), ready);
}

/// A change naming only the lease keeps every other field as it was,
/// `paused` included; on a queue it creates, the others are the defaults.
pub async fn a_change_keeps_the_fields_it_does_not_name(fx: Fixture) {
    let lease_only = QueueChange {
        lease: Some(Duration::from_millis(4321)),
        ..QueueChange::default()
    };
    let q = make_queue(&fx, "partly-changed", custom()).await;
    let expected = QueueSettings {
        lease: Duration::from_millis(4321),
        ..custom()
    };
    assert_eq!(fx.store.put_queue(&q, lease_only).await.unwrap(), expected);
    assert_eq!(fx.store.get_queue(&q).await.unwrap(), expected);

    let fresh = queue_name("partly-made");
    let expected = QueueSettings {
        lease: Duration::from_millis(4321),
        ..QueueSettings::default()
    };
    assert_eq!(
        fx.store.put_queue(&fresh, lease_only).await.unwrap(),
        expected
    );
    assert_eq!(fx.store.get_queue(&fresh).await.unwrap(), expected);
}

/// How many times the race of a pause and a settings change is run.
const PAUSE_RACE_ROUNDS: u64 = 100;

/// A pause and a change of the lease, at the same time, many times: the
/// queue ends paused, with the new lease, every time. A store that read the
/// settings, changed them and wrote them all back would sometimes undo the
/// pause it read before.
pub async fn a_settings_change_does_not_undo_a_concurrent_pause(fx: Fixture) {
    let q = make_queue(&fx, "raced", custom()).await;
    for round in 1..=PAUSE_RACE_ROUNDS {
        fx.store.set_paused(&q, false).await.unwrap();
        let lease = Duration::from_millis(1000 + round);
        let change = QueueChange {
            lease: Some(lease),
            ..QueueChange::default()
        };
        let (pause, put) = {
            let (a, b, q1, q2) = (fx.store.clone(), fx.store.clone(), q.clone(), q.clone());
            // Started in either order, on the runtime's two threads.
            let pause = async move { a.set_paused(&q1, true).await };
            let put = async move { b.put_queue(&q2, change).await };
            if round % 2 == 0 {
                let pause = tokio::spawn(pause);
                (pause, tokio::spawn(put))
            } else {
                let put = tokio::spawn(put);
                (tokio::spawn(pause), put)
            }
        };
        pause.await.unwrap().unwrap();
        put.await.unwrap().unwrap();
        let now = fx.store.get_queue(&q).await.unwrap();
        assert_eq!(
            now,
            QueueSettings {
                lease,
                paused: true,
                ..custom()
            },
            "round {round}: the change undid the pause or lost a field"
        );
    }
}
