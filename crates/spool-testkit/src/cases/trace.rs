//! Trace context (docs/spec.md §2): a task's `traceparent` is kept as given
//! from enqueue to every claim, and only a valid one is taken.

use spool_core::{FailRequest, QueueSettings};

use crate::arrange::*;
use crate::check::*;
use crate::fixture::Fixture;

const TRACED: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const UNSAMPLED: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/// A traceparent given at enqueue, alone, in a batch or beside a key, comes
/// back as given from get and from every claim, retries included; a task
/// given none has none.
pub async fn traceparent_is_kept_from_enqueue_to_every_claim(fx: Fixture) {
    let q = make_queue(&fx, "traced", QueueSettings::default()).await;
    let alone = enqueue(&fx, &q, job("alone").traceparent(TRACED)).await;
    let batch = vec![
        job("batched").traceparent(UNSAMPLED),
        job("untraced"),
        job("keyed").key(key("traced-key")).traceparent(TRACED),
    ];
    let out = fx.store.enqueue(&q, batch).await.expect("enqueue a batch");
    let expected = [
        (alone, Some(TRACED)),
        (out[0].id, Some(UNSAMPLED)),
        (out[1].id, None),
        (out[2].id, Some(TRACED)),
    ];
    for (id, tp) in expected {
        assert_eq!(get(&fx, id).await.traceparent.as_deref(), tp, "get {id}");
    }

    let claimed = claim(&fx, &q, WORKER, 10).await;
    assert_eq!(claimed.len(), expected.len());
    for t in &claimed {
        let (_, tp) = expected.iter().find(|(id, _)| *id == t.id).expect("known");
        assert_eq!(t.traceparent.as_deref(), *tp, "claim of {}", t.id);
    }

    // A retry runs in the same trace: the failed task keeps its traceparent.
    let first = claimed
        .iter()
        .find(|t| t.id == alone)
        .expect("claimed above");
    let now = fx.store.now().await.expect("now");
    let req = FailRequest {
        retry_at: Some(now),
        ..FailRequest::new("once more")
    };
    fx.store.fail(alone, token(first), req).await.expect("fail");
    let again = claim_id(&fx, &q, OTHER_WORKER, alone).await;
    assert_eq!(again.attempt, 2);
    assert_eq!(again.traceparent.as_deref(), Some(TRACED));
}

/// Anything but a version-00 traceparent in lowercase with ids that are not
/// all zeros is bad_request, and refuses its whole batch.
pub async fn malformed_traceparent_is_refused(fx: Fixture) {
    let q = make_queue(&fx, "badly-traced", QueueSettings::default()).await;
    let malformed = [
        "not a traceparent",
        "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
    ];
    for bad in malformed {
        let alone = vec![job("alone").traceparent(bad)];
        expect_code(fx.store.enqueue(&q, alone).await, "bad_request");
        let batch = vec![
            job("fine").key(key("kept-free")),
            job("bad").traceparent(bad),
        ];
        expect_code(fx.store.enqueue(&q, batch).await, "bad_request");
    }
    assert_eq!(stats_of(&fx, &q).await.counts.total(), 0);
}
