-- Settles a claim made ahead of the queue row's lock (claim_ahead.sql),
-- under that lock (lock_limited_queue.sql, in the same transaction): keeps
-- the first tasks of $2 (the claimed ids, in claim order) that queue $1's
-- limits allow now, spends their tokens, and gives the others back.
--
-- Why this holds across nodes as claim_limited.sql does: settling
-- statements take turns on the row, and each one's snapshot, taken once
-- the lock was granted, sees the leases and the tokens of every claim
-- settled before it. The leases it counts as others' are the live ones
-- this transaction did not write (a row's xmin is the transaction that
-- wrote its version: cheaper per row than a look in $2). Claims ahead
-- that are not settled yet are not counted, and are held to the limits
-- when their own turn comes. So at most what the limits allow is ever
-- kept, whatever the claims ahead took.
--
-- A task given back is as it was before the claim: ready in its place in
-- claim order (run_at kept; a due scheduled task the claim took is ready
-- now), its attempt given back, no lease; only updated_at keeps the
-- claim's time.
--
-- A queue that gained groups since the claim (a group_concurrency set, a
-- grouped task enqueued) keeps none: its claims take the groups in turn.
--
-- Answers `kept` (how many of $2 stay claimed), `given_back`, `grouped`,
-- and, as claim_limited.sql does, `refill_ms` (NULL without a rate limit)
-- and `expiry_ms` (with max_leased reached).
WITH b AS (
    SELECT id, rate_limit, rate_period_ms, max_leased, at, {bucket_tokens} AS tokens,
           (group_concurrency IS NOT NULL OR has_groups) AS grouped
    FROM {schema}.queues,
         LATERAL (SELECT date_trunc('milliseconds', statement_timestamp()) AS at) t
    WHERE name = $1
), others AS (
    {others_leases}
), k AS (
    SELECT GREATEST(0, LEAST(
               CASE WHEN b.grouped THEN 0 ELSE cardinality($2::bigint[]) END,
               COALESCE(floor(b.tokens + 1e-9)::bigint, cardinality($2::bigint[])),
               COALESCE(b.max_leased - (SELECT n FROM others), cardinality($2::bigint[]))
           )) AS kept
    FROM b
), back AS (
    UPDATE {schema}.tasks t SET
        state = 'ready',
        attempt = t.attempt - 1,
        lease_owner = NULL,
        lease_token = NULL,
        lease_expires_at = NULL
    WHERE t.id = ANY(($2::bigint[])[(SELECT kept FROM k) + 1:])
      AND t.queue_id = (SELECT id FROM b) AND t.state = 'leased'
    RETURNING t.id
), spent AS (
    UPDATE {schema}.queues SET
        rate_tokens = (SELECT tokens FROM b) - (SELECT kept FROM k),
        rate_refilled_at = GREATEST(rate_refilled_at, (SELECT at FROM b))
    WHERE id = (SELECT id FROM b) AND rate_limit IS NOT NULL
)
SELECT k.kept, (SELECT count(*) FROM back) AS given_back, b.grouped,
       CASE WHEN b.rate_limit IS NOT NULL THEN ceil(
           GREATEST(0, 1 - (b.tokens - k.kept)) * b.rate_period_ms / b.rate_limit)::bigint
       END AS refill_ms,
       CASE WHEN b.max_leased IS NOT NULL
                 AND (SELECT n FROM others) + k.kept >= b.max_leased
       THEN (SELECT ceil(EXTRACT(EPOCH FROM min(lease_expires_at) - b.at) * 1000)::bigint
             FROM {schema}.tasks
             WHERE queue_id = b.id AND state = 'leased' AND lease_expires_at > b.at)
       END AS expiry_ms
FROM b CROSS JOIN k
