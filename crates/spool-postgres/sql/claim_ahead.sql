-- Claims from a queue with limits before taking its row's lock ("Claims
-- ahead of the lock", README.md): claim_limited.sql's work, done without
-- the turn on the row that makes a limited queue's claims run one at a
-- time; settle_limited.sql then keeps, under the lock, what the limits
-- allow, and gives the rest back. Same parameters as claim.sql.
--
-- Only for a queue whose claims need no turns of groups (no group_concurrency,
-- no grouped tasks) and whose limits, as this statement's snapshot counts
-- them, leave room for {ahead} claims of $3: the bucket holds that many
-- tokens and max_leased that many more leases than are live. Near a limit,
-- claims ahead would take tasks only to give most of them back, so there
-- the claim takes the lock first, as before. A claim that may not claim
-- ahead takes nothing and answers `ahead` false, or no row for a queue
-- that is unknown, paused, grouped or without limits.
--
-- What it counts it does not spend: the bucket's tokens and the live
-- leases are read, not written, so claims ahead on every node run side by
-- side, and only the settling statements take turns.
WITH b AS (
    SELECT id, lease_ms, max_leased, at, {bucket_tokens} AS tokens
    FROM {schema}.queues,
         LATERAL (SELECT date_trunc('milliseconds', statement_timestamp()) AS at) t
    WHERE name = $1 AND NOT paused
      AND NOT (group_concurrency IS NOT NULL OR has_groups)
      AND (rate_limit IS NOT NULL OR max_leased IS NOT NULL)
), live AS (
    {live_leases}
), q AS (
    SELECT id, lease_ms,
           COALESCE(floor(tokens + 1e-9)::bigint >= {ahead} * $3::bigint, true)
           AND COALESCE(max_leased - (SELECT n FROM live) >= {ahead} * $3::bigint, true)
           AS may_claim
    FROM b
), {claim_steps}
SELECT q.may_claim AS ahead, c.* FROM q LEFT JOIN claimed c ON true
