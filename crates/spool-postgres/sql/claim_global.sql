-- The "global acquire lock" claim (docs/spec.md §10, ClaimStrategy::GlobalLock):
-- sql/claim_steps.sql under a per-queue transaction-level advisory lock, so one
-- claimer at a time, on any node, acquires from a queue. Same parameters.
--
-- The lock is tried, never waited for: pg_try_advisory_xact_lock on
-- (hash of 'spool.claim' and the schema, queue id). It is held until this
-- statement's own transaction commits, i.e. until the claimed rows are
-- leased for everyone to see, so the next holder starts past them.
-- q is materialized once (it calls a volatile function), and the claim
-- steps scan only when the lock was got (may_claim).
--
-- A queue with limits or groups takes no lock and yields no candidates, only a row
-- that says `limited` (and `locked`, so the caller does not back off): its
-- claims go through claim_limited.sql, under the queue row's lock.
--
-- Answers one row per claimed task, `locked` true; or one row with
-- `locked` and a NULL n when nothing was claimed (false: another claimer
-- holds the lock, back off and try again); or no row for a paused or
-- unknown queue.
WITH q AS (
    SELECT id, lease_ms,
           (rate_limit IS NOT NULL OR max_leased IS NOT NULL
            OR group_concurrency IS NOT NULL OR has_groups) AS limited,
           CASE WHEN rate_limit IS NULL AND max_leased IS NULL
                     AND group_concurrency IS NULL AND NOT has_groups
                THEN pg_try_advisory_xact_lock(hashtext('spool.claim {schema}'), id)
                ELSE false END AS may_claim
    FROM {schema}.queues WHERE name = $1 AND NOT paused
), {claim_steps}
SELECT q.may_claim OR q.limited AS locked, q.limited, c.* FROM q LEFT JOIN claimed c ON true
