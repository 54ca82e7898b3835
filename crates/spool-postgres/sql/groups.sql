-- The groups of queue $1 (id) with tasks waiting (ready or scheduled) or
-- leased, busiest first (most waiting, then most leased, then by name),
-- at most $2 of them. Run after the queue's expired leases were written
-- down, so stored 'leased' rows are leased. Each part reads one partial
-- index's range of the queue: grouped ready and leased tasks by group
-- (migration 9), scheduled ones from tasks_scheduled, keeping the grouped.
WITH counted AS (
    SELECT grp, 1 AS waiting, 0 AS leased FROM {schema}.tasks
    WHERE queue_id = $1 AND grp IS NOT NULL AND state = 'ready'
    UNION ALL
    SELECT grp, 1, 0 FROM {schema}.tasks
    WHERE queue_id = $1 AND state = 'scheduled' AND grp IS NOT NULL
    UNION ALL
    SELECT grp, 0, 1 FROM {schema}.tasks
    WHERE queue_id = $1 AND grp IS NOT NULL AND state = 'leased'
)
SELECT grp, sum(waiting)::bigint AS waiting, sum(leased)::bigint AS leased
FROM counted
GROUP BY grp
ORDER BY 2 DESC, 3 DESC, grp
LIMIT $2
