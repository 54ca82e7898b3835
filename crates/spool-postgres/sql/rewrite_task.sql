-- Writes task $1 back after update or retry: dead when $2, else waiting at
-- $3; priority $4, payload ($5 is JSON, $6 bytes) unless NULL (unchanged);
-- attempt $7, errors $8. Clears any lease: the caller holds the row lock
-- and saw no valid one. A pending task stays pending (its new run_at
-- applies when it is released, docs/spec.md §3.2).
UPDATE {schema}.tasks t SET
    state = CASE WHEN t.state = 'pending' THEN 'pending'
                 WHEN $2 THEN 'dead'
                 WHEN $3 <= now() THEN 'ready'
                 ELSE 'scheduled' END,
    run_at = $3,
    priority = COALESCE($4, t.priority),
    payload_json = COALESCE($5, t.payload_json),
    payload = COALESCE($6, t.payload),
    attempt = $7,
    errors = $8,
    lease_owner = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = {schema}.now_ms()
WHERE t.id = $1
RETURNING {task}, (SELECT name FROM {schema}.queues WHERE id = t.queue_id) AS queue
