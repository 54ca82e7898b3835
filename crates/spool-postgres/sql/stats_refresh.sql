-- Counts tasks per queue, kind and shown state, with each group's oldest
-- ready run_at, keeps the count in stats_cache for other callers and
-- nodes (migration 5), and answers it. A queue without tasks has one
-- group with a NULL kind. Run after the sweep has written expired leases
-- down, so stored 'leased' rows are leased.
WITH groups AS (
    SELECT q.name, q.paused, t.kind,
           count(*) FILTER (WHERE t.state = 'scheduled' AND t.run_at > now()) AS scheduled,
           count(*) FILTER (WHERE t.state = 'ready'
                               OR (t.state = 'scheduled' AND t.run_at <= now())) AS ready,
           count(*) FILTER (WHERE t.state = 'leased') AS leased,
           count(*) FILTER (WHERE t.state = 'dead') AS dead,
           count(*) FILTER (WHERE t.state = 'pending') AS pending,
           floor(extract(epoch FROM min(t.run_at) FILTER (
               WHERE t.state = 'ready' OR (t.state = 'scheduled' AND t.run_at <= now())
           )) * 1000)::bigint AS oldest_ready_ms
    FROM {schema}.queues q
    LEFT JOIN {schema}.tasks t ON t.queue_id = q.id
    GROUP BY q.name, q.paused, t.kind
), kept AS (
    INSERT INTO {schema}.stats_cache AS c (one, computed_at, groups)
    SELECT true, clock_timestamp(),
           COALESCE(jsonb_agg(g ORDER BY g.name, g.kind), '[]'::jsonb)
    FROM groups g
    ON CONFLICT (one) DO UPDATE SET
        computed_at = excluded.computed_at,
        groups = excluded.groups
    RETURNING c.groups
)
SELECT groups, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms FROM kept
