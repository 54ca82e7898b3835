-- Milliseconds until the next scheduled task of queue $1 is due (no row:
-- none, or the queue is paused): when a waiting claimer should look again.
-- One probe of tasks_scheduled, however many tasks are scheduled.
SELECT ceil(extract(epoch FROM t.run_at - now()) * 1000)::bigint
FROM {schema}.queues q
CROSS JOIN LATERAL (
    SELECT t.run_at FROM {schema}.tasks t
    WHERE t.queue_id = q.id AND t.state = 'scheduled' AND t.run_at > now()
    ORDER BY t.run_at
    LIMIT 1
) t
WHERE q.name = $1 AND NOT q.paused
