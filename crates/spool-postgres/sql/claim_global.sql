-- The "global acquire lock" claim (SPEC §10, ClaimStrategy::GlobalLock):
-- sql/claim.sql under a per-queue transaction-level advisory lock, so one
-- claimer at a time, on any node, acquires from a queue. Same parameters.
--
-- The lock is tried, never waited for: pg_try_advisory_xact_lock on
-- (hash of 'spool.claim' and the schema, queue id). It is held until this
-- statement's own transaction commits, i.e. until the claimed rows are
-- leased for everyone to see, so the next holder starts past them.
-- q is materialized once (it calls a volatile function), and ready/due scan
-- only when the lock was got.
--
-- Answers one row per claimed task, `locked` true; or one row with
-- `locked` and a NULL n when nothing was claimed (false: another claimer
-- holds the lock, back off and try again); or no row for a paused or
-- unknown queue.
WITH q AS (
    SELECT id, lease_ms,
           pg_try_advisory_xact_lock(hashtext('spool.claim {schema}'), id) AS locked
    FROM {schema}.queues WHERE name = $1 AND NOT paused
), ready AS (
    SELECT id, priority, run_at FROM {schema}.tasks
    WHERE queue_id = (SELECT id FROM q WHERE locked) AND state = 'ready'
    ORDER BY priority, run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), due AS (
    SELECT id, priority, run_at FROM {schema}.tasks
    WHERE queue_id = (SELECT id FROM q WHERE locked) AND state = 'scheduled'
      AND run_at <= now()
    ORDER BY run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT id, row_number() OVER (ORDER BY priority, run_at, id) AS n
    FROM (SELECT * FROM ready UNION ALL SELECT * FROM due) c
    ORDER BY priority, run_at, id
    LIMIT $3
), claimed AS (
    UPDATE {schema}.tasks t SET
        state = 'leased',
        attempt = t.attempt + 1,
        lease_owner = $2,
        lease_token = ($5::bigint[])[p.n],
        lease_expires_at = {schema}.now_ms()
            + COALESCE(t.lease_ms, $4, (SELECT lease_ms FROM q)) * interval '1 millisecond',
        updated_at = {schema}.now_ms()
    FROM picked p
    WHERE t.id = p.id
    RETURNING p.n, {task}, $1::text AS queue
)
SELECT q.locked, c.* FROM q LEFT JOIN claimed c ON true
