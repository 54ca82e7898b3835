//! Fail (docs/spec.md §2, §3, §7.1): retry after backoff or at retry_at, dead when
//! discarded or out of attempts, the error history, stale tokens.

use std::time::Duration;

use spool_core::{FailRequest, QueueSettings, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// A failure with attempts left schedules the task after
/// `min(base * 2^(attempt-1), max)` with ±10% jitter.
pub async fn fail_schedules_retry_after_exponential_backoff(fx: Fixture) {
    let settings = QueueSettings {
        backoff_base: Duration::from_millis(100),
        backoff_max: Duration::from_millis(350),
        ..quick()
    };
    let q = make_queue(&fx, "backoff", settings).await;
    let id = enqueue(&fx, &q, job("flaky")).await;
    // 100 ms, then doubled, then capped at backoff_max.
    let expected = [100, 200, 350].map(Duration::from_millis);
    for (attempt, backoff) in (1..).zip(expected) {
        let t = claim_id(&fx, &q, WORKER, id).await;
        assert_eq!(t.attempt, attempt);
        let (failed, at) = timed(&fx, fx.store.fail(id, token(&t), FailRequest::new("boom"))).await;
        let failed = failed.unwrap();
        assert_eq!(failed.state, TaskState::Scheduled);
        assert_eq!(failed.attempt, attempt);
        assert_eq!(failed.lease, None);
        let last = failed.errors.last().unwrap();
        assert_eq!((last.attempt, last.message.as_str()), (attempt, "boom"));
        let (lo, hi) = jitter_band(backoff);
        at.assert_offset(
            &format!("run_at after attempt {attempt}"),
            failed.run_at,
            lo,
            hi,
        );
        fx.advance(hi + BEYOND).await;
    }
}

/// retry_at replaces the backoff: at or before now the task is claimable at
/// once; later, it is scheduled exactly then.
pub async fn fail_honours_retry_at(fx: Fixture) {
    let q = make_queue(&fx, "retry-at", quick()).await;
    let id = enqueue(&fx, &q, job("flaky")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let now = fx.store.now().await.unwrap();
    let at_once = FailRequest {
        retry_at: Some(now),
        ..FailRequest::new("retry now")
    };
    let failed = fx.store.fail(id, token(&t), at_once).await.unwrap();
    assert_eq!(failed.state, TaskState::Ready);
    let t = claim_id(&fx, &q, WORKER, id).await;
    assert_eq!(t.attempt, 2);

    let delay = Duration::from_millis(300);
    let later = fx.store.now().await.unwrap().plus(delay);
    let req = FailRequest {
        retry_at: Some(later),
        ..FailRequest::new("retry later")
    };
    let failed = fx.store.fail(id, token(&t), req).await.unwrap();
    assert_eq!(failed.state, TaskState::Scheduled);
    assert_eq!(failed.run_at, later);
    claim_nothing(&fx, &q).await;
    fx.advance(delay + BEYOND).await;
    assert_eq!(claim_id(&fx, &q, WORKER, id).await.attempt, 3);
}

/// discard makes the task dead at once, attempts left or not.
pub async fn fail_with_discard_is_dead(fx: Fixture) {
    let q = make_queue(&fx, "discard", quick()).await;
    let id = enqueue(&fx, &q, job("poison")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let req = FailRequest {
        discard: true,
        ..FailRequest::new("bad input")
    };
    let (failed, at) = timed(&fx, fx.store.fail(id, token(&t), req)).await;
    let failed = failed.unwrap();
    assert_eq!(failed.state, TaskState::Dead);
    assert_eq!(failed.attempt, 1);
    assert_eq!(failed.lease, None);
    assert_eq!(failed.errors.len(), 1);
    assert_eq!(failed.errors[0].attempt, 1);
    assert_eq!(failed.errors[0].message, "bad input");
    at.assert_now("the error's time", failed.errors[0].at);
    assert_eq!(get(&fx, id).await.state, TaskState::Dead);
    claim_nothing(&fx, &q).await;
    assert_eq!(stats_of(&fx, &q).await.counts.dead, 1);
}

/// A failure of the last attempt is dead, even with a retry_at.
pub async fn fail_on_last_attempt_is_dead(fx: Fixture) {
    let q = make_queue(&fx, "last-attempt", quick()).await;
    let id = enqueue(&fx, &q, job("twice").max_attempts(2)).await;
    for attempt in 1..=2 {
        let t = claim_id(&fx, &q, WORKER, id).await;
        assert_eq!(t.attempt, attempt);
        let now = fx.store.now().await.unwrap();
        let req = FailRequest {
            retry_at: Some(now),
            ..FailRequest::new(format!("failure {attempt}"))
        };
        let failed = fx.store.fail(id, token(&t), req).await.unwrap();
        let expected = if attempt == 1 {
            TaskState::Ready
        } else {
            TaskState::Dead
        };
        assert_eq!(failed.state, expected, "after attempt {attempt} of 2");
    }
    let dead = get(&fx, id).await;
    let attempts: Vec<u32> = dead.errors.iter().map(|e| e.attempt).collect();
    assert_eq!(attempts, vec![1, 2]);
    claim_nothing(&fx, &q).await;
}

/// A task remembers its last five failures, oldest first.
pub async fn fail_keeps_last_five_errors_oldest_first(fx: Fixture) {
    let q = make_queue(&fx, "errors", quick()).await;
    let id = enqueue(&fx, &q, job("flaky").max_attempts(10)).await;
    for n in 1..=7 {
        let t = claim_id(&fx, &q, WORKER, id).await;
        let now = fx.store.now().await.unwrap();
        let req = FailRequest {
            retry_at: Some(now),
            ..FailRequest::new(format!("boom {n}"))
        };
        fx.store.fail(id, token(&t), req).await.unwrap();
    }
    let task = get(&fx, id).await;
    let errors = &task.errors;
    assert_eq!(
        failures(&task),
        vec![
            (3, "boom 3"),
            (4, "boom 4"),
            (5, "boom 5"),
            (6, "boom 6"),
            (7, "boom 7")
        ]
    );
    assert!(errors.windows(2).all(|w| w[0].at <= w[1].at));
}

/// A message is kept up to 4096 bytes, cut on a character boundary.
pub async fn fail_truncates_long_messages(fx: Fixture) {
    const LIMIT: usize = 4096;
    let q = make_queue(&fx, "long-errors", quick()).await;
    let id = enqueue(&fx, &q, job("verbose").max_attempts(10)).await;
    // Plain ASCII, then three-byte characters, whose last whole one ends
    // before byte 4096.
    for long in ["x".repeat(5000), "€".repeat(2000)] {
        let t = claim_id(&fx, &q, WORKER, id).await;
        let now = fx.store.now().await.unwrap();
        let req = FailRequest {
            retry_at: Some(now),
            ..FailRequest::new(long.clone())
        };
        let failed = fx.store.fail(id, token(&t), req).await.unwrap();
        let kept = &failed.errors.last().unwrap().message;
        let width = long.chars().next().unwrap().len_utf8();
        assert!(
            kept.len() <= LIMIT && kept.len() > LIMIT - width && long.starts_with(kept.as_str()),
            "a message of {} bytes should be cut to the whole characters of its first \
             {LIMIT} bytes, got {} bytes",
            long.len(),
            kept.len()
        );
    }
}

/// A stale token is lease_lost and changes nothing; an unknown id is
/// not_found.
pub async fn fail_with_stale_token_is_lease_lost(fx: Fixture) {
    let q = make_queue(&fx, "fail-stale", quick()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let before = get(&fx, id).await;
    let stale = fx
        .store
        .fail(id, wrong(token(&t)), FailRequest::new("x"))
        .await;
    expect_code(stale, "lease_lost");
    assert_eq!(get(&fx, id).await, before);
    let unknown = fx
        .store
        .fail(UNKNOWN_ID, token(&t), FailRequest::new("x"))
        .await;
    expect_code(unknown, "not_found");
}
