//! Ops through the log and back, and records written before a field
//! existed still reading as they did.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use spool_core::{ParentFailure, RateLimit, TaskId};

use crate::codec::{self, DecodeError};

use super::*;

fn settle_failure(number: Option<u64>) -> Op {
    Op::Settle {
        now: Timestamp(5),
        tasks: vec![Settlement {
            id: 9,
            attempt: 2,
            next: Next::Dead,
            error: Some(Failure {
                attempt: 2,
                number,
                message: "boom".into(),
            }),
        }],
        follow: Vec::new(),
    }
}

fn decoded_failure(body: &[u8]) -> Failure {
    match Op::decode(kind::SETTLE, body, &mut Vec::new()).unwrap() {
        Op::Settle { mut tasks, .. } => tasks.remove(0).error.unwrap(),
        other => panic!("decoded {other:?}"),
    }
}

#[test]
fn a_failure_keeps_its_number_through_the_log() {
    let mut body = Vec::new();
    settle_failure(Some(7)).encode(&mut body, &mut Vec::new());
    let f = decoded_failure(&body);
    assert_eq!(
        (f.attempt, f.number, f.message.as_str()),
        (2, Some(7), "boom")
    );
}

#[test]
fn a_failure_written_before_numbers_still_reads() {
    // The settle record as Spool wrote it before failures were numbered.
    let mut old = Vec::new();
    put_ts(&mut old, Timestamp(5));
    codec::put_u32(&mut old, 1);
    codec::put_u64(&mut old, 9);
    codec::put_u32(&mut old, 2);
    codec::put_u8(&mut old, 1);
    codec::put_u8(&mut old, 1);
    codec::put_u32(&mut old, 2);
    codec::put_str(&mut old, "boom");
    let f = decoded_failure(&old);
    assert_eq!((f.attempt, f.number, f.message.as_str()), (2, None, "boom"));
    let mut body = Vec::new();
    settle_failure(None).encode(&mut body, &mut Vec::new());
    assert_eq!(body, old);
}

const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn enqueue(lease_ms: Option<u64>, traceparent: Option<&str>) -> Op {
    Op::Enqueue {
        now: Timestamp(5),
        queue: QueueName::new("q").unwrap(),
        tasks: vec![NewEntry {
            id: 9,
            kind: Kind::new("k").unwrap(),
            payload: Payload::binary(vec![1, 2]),
            priority: -1,
            run_at: Timestamp(6),
            key: None,
            max_attempts: 3,
            lease_ms,
            traceparent: traceparent.map(str::to_string),
            group: None,
            deps: None,
        }],
    }
}

#[test]
fn dependencies_and_follow_ups_go_through_the_log() {
    let deps = NewDeps {
        deps: Dependencies {
            after: vec![TaskId(4), TaskId(2)],
            waiting_on: vec![TaskId(2)],
            failed: 1,
            if_parent_fails: ParentFailure::Run,
            results: Vec::new(),
        },
        cancelled: false,
    };
    let mut op = enqueue(Some(250), Some(TRACEPARENT));
    if let Op::Enqueue { tasks, .. } = &mut op {
        tasks[0].group = Some(TaskGroup::new("g").unwrap());
        tasks[0].deps = Some(Box::new(deps.clone()));
    }
    let mut body = Vec::new();
    op.encode(&mut body, &mut Vec::new());
    let t = decoded_entry(&body).unwrap();
    assert_eq!(t.deps.as_deref(), Some(&deps));
    assert_eq!(t.group.unwrap().as_str(), "g");

    let follow = vec![Follow {
        task: 9,
        parent: 2,
        failed: 1,
        outcome: Outcome::Released,
    }];
    let result = TaskResult::from_json(r#"{"rows":3}"#).unwrap();
    for results in [Vec::new(), vec![(2, result)]] {
        let delete = Op::Delete {
            now: Timestamp(5),
            ids: vec![2],
            follow: follow.clone(),
            results: results.clone(),
        };
        let mut body = Vec::new();
        delete.encode(&mut body, &mut Vec::new());
        match Op::decode(kind::DELETE, &body, &mut Vec::new()).unwrap() {
            Op::Delete {
                ids,
                follow: f,
                results: r,
                ..
            } => assert_eq!((ids, f, r), (vec![2], follow.clone(), results)),
            other => panic!("decoded {other:?}"),
        }
    }
    // Without follow-ups a delete is written as it always was.
    let plain = Op::Delete {
        now: Timestamp(5),
        ids: vec![2],
        follow: Vec::new(),
        results: Vec::new(),
    };
    let mut plain_body = Vec::new();
    plain.encode(&mut plain_body, &mut Vec::new());
    assert_eq!(plain_body.len(), 8 + 4 + 8);
}

fn decoded_entry(body: &[u8]) -> Result<NewEntry, DecodeError> {
    match Op::decode(kind::ENQUEUE, body, &mut Vec::new())? {
        Op::Enqueue { mut tasks, .. } => Ok(tasks.remove(0)),
        other => panic!("decoded {other:?}"),
    }
}

#[test]
fn a_traceparent_goes_through_the_log_with_or_without_a_lease() {
    for lease_ms in [None, Some(250)] {
        let mut body = Vec::new();
        enqueue(lease_ms, Some(TRACEPARENT)).encode(&mut body, &mut Vec::new());
        let t = decoded_entry(&body).unwrap();
        assert_eq!(t.lease_ms, lease_ms);
        assert_eq!(t.traceparent.as_deref(), Some(TRACEPARENT));
    }
}

#[test]
fn a_group_goes_through_the_log_beside_a_lease_and_a_traceparent() {
    for (lease_ms, traceparent) in [(None, None), (Some(250), Some(TRACEPARENT))] {
        let mut op = enqueue(lease_ms, traceparent);
        if let Op::Enqueue { tasks, .. } = &mut op {
            tasks[0].group = Some(TaskGroup::new("customer 7").unwrap());
        }
        let mut body = Vec::new();
        op.encode(&mut body, &mut Vec::new());
        let t = decoded_entry(&body).unwrap();
        assert_eq!(
            (t.lease_ms, t.traceparent.as_deref()),
            (lease_ms, traceparent)
        );
        assert_eq!(t.group.as_ref().map(TaskGroup::as_str), Some("customer 7"));
    }
}

#[test]
fn an_entry_without_a_traceparent_is_written_as_before() {
    for lease_ms in [None, Some(250)] {
        // The entry's tail as Spool wrote it before trace context: the
        // lease as an optional u64, nothing after it.
        let mut body = Vec::new();
        enqueue(lease_ms, None).encode(&mut body, &mut Vec::new());
        let mut tail = Vec::new();
        put_opt_u64(&mut tail, lease_ms);
        assert!(body.ends_with(&tail));
        let t = decoded_entry(&body).unwrap();
        assert_eq!((t.lease_ms, t.traceparent), (lease_ms, None));
    }
}

#[test]
fn an_unknown_tail_or_a_bad_traceparent_is_damage() {
    let mut body = Vec::new();
    enqueue(None, None).encode(&mut body, &mut Vec::new());
    let last = body.len() - 1;
    body[last] = 16;
    assert_eq!(decoded_entry(&body).unwrap_err().what, "lease_ms");

    let mut body = Vec::new();
    enqueue(None, Some(TRACEPARENT)).encode(&mut body, &mut Vec::new());
    let last = body.len() - 1;
    body[last] = b'g';
    assert_eq!(decoded_entry(&body).unwrap_err().what, "traceparent");
}

fn put_queue(settings: QueueSettings) -> Op {
    Op::PutQueue {
        queue: QueueName::new("q").unwrap(),
        settings,
    }
}

fn decoded_settings(body: &[u8]) -> Result<QueueSettings, DecodeError> {
    match Op::decode(kind::PUT_QUEUE, body, &mut Vec::new())? {
        Op::PutQueue { settings, .. } => Ok(settings),
        other => panic!("decoded {other:?}"),
    }
}

#[test]
fn limits_go_through_the_log() {
    let rate_limit = Some(RateLimit {
        limit: 7,
        period: Duration::from_millis(250),
        burst: 3,
    });
    let per_group = Some(RateLimit {
        limit: 2,
        period: Duration::from_secs(1),
        burst: 1,
    });
    let cases = [
        (rate_limit, None, None, None),
        (None, Some(9), None, None),
        (rate_limit, Some(9), None, None),
        (None, None, Some(2), None),
        (rate_limit, Some(9), Some(2), None),
        (None, None, None, per_group),
        (rate_limit, Some(9), Some(2), per_group),
    ];
    for (rate_limit, max_leased, group_concurrency, group_rate_limit) in cases {
        let settings = QueueSettings {
            paused: true,
            rate_limit,
            max_leased,
            group_concurrency,
            group_rate_limit,
            ..QueueSettings::default()
        };
        let mut body = Vec::new();
        put_queue(settings.clone()).encode(&mut body, &mut Vec::new());
        assert_eq!(decoded_settings(&body).unwrap(), settings);
    }
}

#[test]
fn settings_without_limits_are_written_as_before() {
    for paused in [false, true] {
        // The settings as Spool wrote them before queues had limits:
        // the paused flag as the last byte, nothing after it.
        let settings = QueueSettings {
            paused,
            ..QueueSettings::default()
        };
        let mut body = Vec::new();
        put_queue(settings.clone()).encode(&mut body, &mut Vec::new());
        assert_eq!(body.last(), Some(&u8::from(paused)));
        assert_eq!(decoded_settings(&body).unwrap(), settings);
    }
    let mut body = Vec::new();
    put_queue(QueueSettings::default()).encode(&mut body, &mut Vec::new());
    let last = body.len() - 1;
    body[last] = 32;
    assert_eq!(decoded_settings(&body).unwrap_err().what, "paused");
}
