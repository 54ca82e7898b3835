-- Ends the lease of task $1 held under token $2 without completing it:
-- waiting again at $3 (NULL: now) with attempt $4 (NULL: the claimed attempt
-- given back). Used by ack with reschedule_at, release and snooze.
-- Answers the task, or nothing when the lease is not held; `frees_slot`
-- when its queue has a max_leased, or a group_concurrency and the task a
-- group, where the lease's end frees a slot.
UPDATE {schema}.tasks t SET
    state = CASE WHEN COALESCE($3, now()) <= now() THEN 'ready' ELSE 'scheduled' END,
    run_at = COALESCE($3, {schema}.now_ms()),
    attempt = COALESCE($4, GREATEST(t.attempt - 1, 0)),
    lease_owner = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = {schema}.now_ms()
WHERE t.id = $1 AND t.lease_token = $2
  AND t.state = 'leased' AND t.lease_expires_at > now()
RETURNING {task}, (SELECT name FROM {schema}.queues WHERE id = t.queue_id) AS queue,
    (SELECT max_leased IS NOT NULL OR (group_concurrency IS NOT NULL AND t.grp IS NOT NULL)
     FROM {schema}.queues WHERE id = t.queue_id) AS frees_slot
