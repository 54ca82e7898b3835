-- Heartbeat: the lease of task $1 held under token $2 now ends $3 ms from
-- now. Answers the task, or nothing when the lease is not held.
UPDATE {schema}.tasks t SET
    lease_expires_at = {schema}.now_ms() + $3::bigint * interval '1 millisecond',
    updated_at = {schema}.now_ms()
WHERE t.id = $1 AND t.lease_token = $2
  AND t.state = 'leased' AND t.lease_expires_at > now()
RETURNING {task}, (SELECT name FROM {schema}.queues WHERE id = t.queue_id) AS queue
