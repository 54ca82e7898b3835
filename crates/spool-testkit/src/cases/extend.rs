//! Extend (docs/spec.md §3, §7.1): a heartbeat sets `expires_at = now + lease` and
//! keeps the task from expiring.

use std::time::Duration;

use spool_core::{Ack, QueueSettings, TaskState};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

/// Extend moves expires_at to now + the asked lease and keeps the token.
pub async fn extend_pushes_lease_expiry(fx: Fixture) {
    let q = make_queue(&fx, "extend", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("long job")).await;
    let t = claim_id_leased(&fx, &q, WORKER, id, Duration::from_secs(2)).await;
    let lease = Duration::from_secs(60);
    let (extended, at) = timed(&fx, fx.store.extend(id, token(&t), lease)).await;
    let extended = extended.unwrap();
    assert_eq!(extended.state, TaskState::Leased);
    let new_lease = extended.lease.unwrap();
    assert_eq!(new_lease.owner, WORKER);
    at.assert_after("expires_at after extend", new_lease.expires_at, lease);
    assert_eq!(
        get(&fx, id).await.lease.unwrap().expires_at,
        new_lease.expires_at
    );
    fx.store.ack(id, token(&t), Ack::Done).await.unwrap();
}

/// Extend needs the current token; an unknown id is not_found.
pub async fn extend_with_stale_token_is_lease_lost(fx: Fixture) {
    let q = make_queue(&fx, "extend-stale", QueueSettings::default()).await;
    let id = enqueue(&fx, &q, job("work")).await;
    let t = claim_id(&fx, &q, WORKER, id).await;
    let before = get(&fx, id).await;
    let lease = Duration::from_secs(60);
    expect_code(
        fx.store.extend(id, wrong(token(&t)), lease).await,
        "lease_lost",
    );
    assert_eq!(get(&fx, id).await, before);
    expect_code(
        fx.store.extend(UNKNOWN_ID, token(&t), lease).await,
        "not_found",
    );
}

/// A lease extended in time does not expire when it first would have.
pub async fn extended_lease_outlives_its_original_expiry(fx: Fixture) {
    let q = make_queue(&fx, "heartbeat", quick()).await;
    let id = enqueue(&fx, &q, job("long job")).await;
    let first = Duration::from_millis(500);
    let t = claim_id_leased(&fx, &q, WORKER, id, first).await;
    fx.advance(Duration::from_millis(200)).await;
    fx.store
        .extend(id, token(&t), Duration::from_secs(3))
        .await
        .unwrap();
    fx.advance(first + BEYOND).await;

    let seen = get(&fx, id).await;
    assert_eq!(seen.state, TaskState::Leased);
    assert!(seen.errors.is_empty(), "the lease never expired");
    claim_nothing(&fx, &q).await;
    fx.store.ack(id, token(&t), Ack::Done).await.unwrap();
}
