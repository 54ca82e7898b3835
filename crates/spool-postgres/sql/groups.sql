-- The groups of queue $1 (id) with tasks waiting (ready or scheduled) or
-- leased, busiest first (most waiting, then most leased, then by name),
-- at most $2 of them, each with the whole tokens left in its bucket under
-- the queue's group_rate_limit (NULL without one; a group no claim has
-- spent from has a full bucket), counted as the grouped claim counts them
-- (sql/claim_group_steps.sql). Run after the queue's expired leases were
-- written down, so stored 'leased' rows are leased. Each part reads one
-- partial index's range of the queue: grouped ready and leased tasks by
-- group (migration 9), scheduled ones from tasks_scheduled, keeping the
-- grouped.
WITH counted AS (
    SELECT grp, 1 AS waiting, 0 AS leased FROM {schema}.tasks
    WHERE queue_id = $1 AND grp IS NOT NULL AND state = 'ready'
    UNION ALL
    SELECT grp, 1, 0 FROM {schema}.tasks
    WHERE queue_id = $1 AND state = 'scheduled' AND grp IS NOT NULL
    UNION ALL
    SELECT grp, 0, 1 FROM {schema}.tasks
    WHERE queue_id = $1 AND grp IS NOT NULL AND state = 'leased'
), busiest AS (
    SELECT grp, sum(waiting)::bigint AS waiting, sum(leased)::bigint AS leased
    FROM counted
    GROUP BY grp
    ORDER BY 2 DESC, 3 DESC, grp
    LIMIT $2
)
SELECT w.grp, w.waiting, w.leased,
       CASE WHEN b.group_rate_limit IS NOT NULL THEN floor(COALESCE(
           (SELECT {group_tokens:gb} FROM {schema}.group_buckets gb
            WHERE gb.queue_id = $1 AND gb.grp = w.grp),
           b.group_rate_burst) + 1e-9)::bigint
       END AS rate_tokens
FROM busiest w
CROSS JOIN (
    SELECT group_rate_limit, group_rate_period_ms, group_rate_burst,
           date_trunc('milliseconds', statement_timestamp()) AS at
    FROM {schema}.queues WHERE id = $1
) b
ORDER BY 2 DESC, 3 DESC, w.grp
