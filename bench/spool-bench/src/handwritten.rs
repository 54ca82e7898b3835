//! The hand-written SKIP LOCKED queue of docs/spec.md §11 that the
//! benchmarks run beside Spool: its table and its two statements, with
//! `{s}` standing for the (quoted) schema, and the connections its
//! producers and consumers use.

/// The queue's one table and its claim index.
pub const SCHEMA: &str = "
CREATE TABLE {s}.jobs (
    id           bigserial   PRIMARY KEY,
    queue        text        NOT NULL,
    payload      bytea       NOT NULL,
    run_at       timestamptz NOT NULL DEFAULT now(),
    attempts     integer     NOT NULL DEFAULT 0,
    locked_by    text,
    locked_until timestamptz
);
CREATE INDEX jobs_claim ON {s}.jobs (queue, run_at, id);
";

/// Lease: the oldest due, unleased (or expired) jobs of queue $1, at most
/// $3, for worker $2.
pub const CLAIM: &str = "
UPDATE {s}.jobs j SET locked_by = $2, locked_until = now() + interval '10 minutes',
    attempts = j.attempts + 1
WHERE j.id IN (
    SELECT id FROM {s}.jobs
    WHERE queue = $1 AND run_at <= now() AND (locked_until IS NULL OR locked_until < now())
    ORDER BY run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED)
RETURNING j.id, j.payload";

/// Ack: delete the batch $1 if worker $2 still holds it.
pub const ACK: &str = "DELETE FROM {s}.jobs WHERE id = ANY($1) AND locked_by = $2";

/// A connection of its own for one producer or consumer, durable like
/// Spool's (`synchronous_commit = on`, whatever the server's default).
pub async fn session() -> tokio_postgres::Client {
    let client = crate::db::connect().await;
    client
        .batch_execute("SET synchronous_commit = on")
        .await
        .unwrap();
    client
}
