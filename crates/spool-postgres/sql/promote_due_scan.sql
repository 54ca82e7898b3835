-- A fragment of sql/promote_due.sql: per queue, the scheduled tasks of
-- one partition ({table}) whose run_at has passed, oldest first, at most
-- $1, locked.
SELECT d.gen, d.ctid
FROM {schema}.queues q
CROSS JOIN LATERAL (
    SELECT t.gen, t.ctid FROM {schema}.{table} t
    WHERE t.queue_id = q.id AND t.state = 'scheduled' AND t.run_at <= now()
    ORDER BY t.run_at
    LIMIT $1
    FOR UPDATE SKIP LOCKED
) d
