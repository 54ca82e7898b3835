-- Up to $2 leases that have expired, per queue (all queues when $1 is NULL,
-- else queue id $1), oldest first, among those that ended within the last
-- $3 ms. Read without locks: the write back (expire.sql) checks that each
-- lease is still the one read.
--
-- $3 is the sweeper's window (src/sweep.rs): since its last complete pass,
-- plus a margin, and now and then everything. While a transaction holds
-- the xmin horizon, the tasks_leased entries of every lease acked since it
-- began stay in the index, and those whose lease has since run out lie at
-- its front, where a scan from the front would walk them on every tick.
SELECT t.id, t.attempt, t.max_attempts, t.lease_token, t.lease_expires_at, t.errors,
       t.has_dependents IS NOT NULL AS has_dependents, q.name AS queue
FROM {schema}.queues q
CROSS JOIN LATERAL (
    SELECT * FROM {schema}.tasks t
    WHERE t.queue_id = q.id AND t.state = 'leased' AND t.lease_expires_at <= now()
      AND t.lease_expires_at > now() - $3::bigint * interval '1 millisecond'
    ORDER BY t.lease_expires_at
    LIMIT $2
) t
WHERE $1::integer IS NULL OR q.id = $1
