-- Up to $2 leases that have expired, per queue (all queues when $1 is NULL,
-- else queue id $1), oldest first. Read without locks: the write back
-- (expire.sql) checks that each lease is still the one read.
SELECT t.id, t.attempt, t.max_attempts, t.lease_token, t.lease_expires_at, t.errors,
       q.name AS queue
FROM {schema}.queues q
CROSS JOIN LATERAL (
    SELECT * FROM {schema}.tasks t
    WHERE t.queue_id = q.id AND t.state = 'leased' AND t.lease_expires_at <= now()
    ORDER BY t.lease_expires_at
    LIMIT $2
) t
WHERE $1::integer IS NULL OR q.id = $1
