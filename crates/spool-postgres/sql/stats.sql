-- Counts per queue, kind and shown state, and each group's oldest ready
-- run_at as an age in ms. A queue without tasks has one row with a NULL kind.
-- Run after the sweep has written expired leases down, so stored 'leased'
-- rows are leased.
SELECT q.name, q.paused, t.kind,
       count(*) FILTER (WHERE t.state = 'scheduled' AND t.run_at > now()) AS scheduled,
       count(*) FILTER (WHERE t.state = 'ready'
                           OR (t.state = 'scheduled' AND t.run_at <= now())) AS ready,
       count(*) FILTER (WHERE t.state = 'leased') AS leased,
       count(*) FILTER (WHERE t.state = 'dead') AS dead,
       floor(extract(epoch FROM now() - min(t.run_at) FILTER (
           WHERE t.state = 'ready' OR (t.state = 'scheduled' AND t.run_at <= now())
       )) * 1000)::bigint AS oldest_ready_age_ms
FROM {schema}.queues q
LEFT JOIN {schema}.tasks t ON t.queue_id = q.id
GROUP BY q.name, q.paused, t.kind
ORDER BY q.name, t.kind
