-- Claims from a queue with limits (docs/spec.md §4): at most $3 tasks, at
-- most the whole tokens of its rate limit's bucket, and at most max_leased
-- less the leases live now. Same parameters as claim.sql. It runs in a
-- transaction that holds the queue row's lock (lock_limited_queue.sql),
-- so its snapshot, taken after the lock was granted, sees every token
-- spent and every task leased by the claims before it, on any node.
--
-- The bucket refills continuously, rate_limit tokens per rate_period_ms,
-- up to rate_burst, from rate_refilled_at to this statement's start (a
-- lock wait does not count twice; sql/bucket_tokens.sql); the tokens
-- claimed are taken out.
-- Live leases are counted on tasks_leased, at most max_leased rows: a
-- lease past its expiry frees its slot at once, written down or not.
--
-- A queue that has had groups and has none left, no grouped task ready or
-- leased and no group_concurrency (`settled`), goes back to the ordinary
-- claim: has_groups is cleared, under the row lock, so the next claim on
-- any node sees it. A grouped task that becomes ready afterwards marks the
-- queue again: its enqueue (sql/mark_grouped.sql), or, for one whose
-- enqueue saw the flag still set and committed after this, or that became
-- ready another way, the sweeper (sql/promote_due.sql). Each look is a
-- probe of tasks_ready_grouped or tasks_leased_grouped in its order (not
-- EXISTS, which drops the order and lets statistics pick a scan of a
-- partition).
--
-- A queue with groups, or a group_concurrency, takes its tasks through
-- claim_group_steps.sql, within the allowance, and keeps the group it
-- served last as its cursor (src/sql.rs puts in that group, or NULL for
-- queues without groups, which keeps the cursor); other queues take
-- theirs through claim_steps.sql.
--
-- Each rendering claims only from the queues it is for (`grouped_guard`:
-- those with groups or a group_concurrency, or the others), as the lock
-- statement says, reading the same row under the same lock. The two are
-- sent together (src/ops/claim_limits.rs, "One round trip"): a claim sent
-- for the kind of queue this one no longer is takes nothing, spends
-- nothing and answers no row.
--
-- A grouped claim under a group_rate_limit also spends its groups' tokens
-- (group_spent.sql) and, when it took less than asked, may wait for them
-- (group_refill.sql); other claims write no bucket (src/sql.rs gives them
-- an empty step in its place).
--
-- Answers what claim.sql answers, each row also with `refill_ms` (how long
-- until the bucket holds a whole token again, 0 if it does; or, for a
-- grouped claim held back by its groups' buckets, until one holds a
-- token; NULL without a rate limit) and `expiry_ms` (with max_leased reached, or, for a
-- grouped claim, with groups full (sql/group_wait.sql): how long until the
-- first live lease that may matter runs out): when a waiting claim should
-- look again; and `throttled`: the limits let the claim take nothing
-- while the queue holds tasks it could take otherwise (sql/ready_waits.sql,
-- asked only then; spool_claims_throttled_total counts such claims).
WITH RECURSIVE b AS (
    SELECT id, lease_ms, rate_limit, rate_period_ms, rate_burst, max_leased,
           group_concurrency, has_groups, group_cursor, at,
           group_rate_limit, group_rate_period_ms, group_rate_burst,
           {bucket_tokens} AS tokens
    FROM {schema}.queues,
         LATERAL (SELECT date_trunc('milliseconds', statement_timestamp()) AS at) t
    WHERE name = $1 AND NOT paused AND {grouped_guard}
), live AS (
    {live_leases}
), q AS (
    SELECT id, lease_ms, limited, allowance, allowance > 0 AS may_claim FROM (
        SELECT id, lease_ms,
               (rate_limit IS NOT NULL OR max_leased IS NOT NULL
                OR group_concurrency IS NOT NULL OR has_groups) AS limited,
               LEAST(
                   $3::bigint,
                   COALESCE(floor(tokens + 1e-9)::bigint, $3::bigint),
                   COALESCE(max_leased - (SELECT n FROM live), $3::bigint)
               ) AS allowance
        FROM b
    ) x
), settled AS (
    SELECT b.has_groups AND b.group_concurrency IS NULL
           AND (SELECT grp FROM {schema}.tasks
                WHERE queue_id = b.id AND state = 'ready' AND grp IS NOT NULL
                ORDER BY grp LIMIT 1) IS NULL
           AND (SELECT grp FROM {schema}.tasks
                WHERE queue_id = b.id AND state = 'leased' AND grp IS NOT NULL
                ORDER BY grp LIMIT 1) IS NULL
           AS done
    FROM b
), {claim_steps}, spent AS (
    UPDATE {schema}.queues SET
        rate_tokens = CASE WHEN rate_limit IS NULL THEN rate_tokens
                           ELSE (SELECT tokens FROM b) - (SELECT count(*) FROM claimed) END,
        rate_refilled_at = CASE WHEN rate_limit IS NULL THEN rate_refilled_at
                                ELSE GREATEST(rate_refilled_at, (SELECT at FROM b)) END,
        group_cursor = COALESCE({last_turn}, group_cursor),
        has_groups = has_groups AND NOT COALESCE((SELECT done FROM settled), false)
    WHERE id = (SELECT id FROM b)
      AND (rate_limit IS NOT NULL OR {last_turn} IS NOT NULL
           OR COALESCE((SELECT done FROM settled), false))
), {group_spent}, waits AS (
    SELECT
        LEAST(
            CASE WHEN b.rate_limit IS NOT NULL THEN ceil(
                GREATEST(0, 1 - (b.tokens - (SELECT count(*) FROM claimed)))
                * b.rate_period_ms / b.rate_limit)::bigint
            END,
            {group_refill}) AS refill_ms,
        LEAST(
            CASE WHEN b.max_leased IS NOT NULL
                      AND (SELECT n FROM live) + (SELECT count(*) FROM claimed) >= b.max_leased
            THEN (SELECT ceil(EXTRACT(EPOCH FROM min(lease_expires_at) - b.at) * 1000)::bigint
                  FROM {schema}.tasks
                  WHERE queue_id = b.id AND state = 'leased' AND lease_expires_at > b.at)
            END,
            {group_wait}) AS expiry_ms
    FROM b
)
SELECT a.limited, w.refill_ms, w.expiry_ms,
       CASE WHEN a.allowance <= 0 THEN {ready_waits} ELSE false END AS throttled,
       c.*
FROM q a CROSS JOIN waits w LEFT JOIN claimed c ON true
