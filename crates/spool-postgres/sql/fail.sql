-- Records a failure of task $1 held under token $2: dead when $3, else
-- waiting at $4; $5 the error history to keep. The caller computed these
-- with spool_core::transition from the task as it read it; the lease
-- condition makes the write refuse if the lease was lost meanwhile.
-- Answers the task, or nothing when the lease is not held; `frees_slot`
-- when its queue has a max_leased, or a group_concurrency and the task a
-- group, where the lease's end frees a slot.
-- A dead write ($3) to a task that pending tasks wait for happens only
-- with $6, in the transaction that resolves them (src/deps/endings.rs);
-- without it the write matches nothing and the store takes that path.
UPDATE {schema}.tasks t SET
    state = CASE WHEN $3 THEN 'dead' WHEN $4 <= now() THEN 'ready' ELSE 'scheduled' END,
    run_at = CASE WHEN $3 THEN t.run_at ELSE $4 END,
    errors = $5,
    lease_owner = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = {schema}.now_ms()
WHERE t.id = $1 AND t.lease_token = $2
  AND t.state = 'leased' AND t.lease_expires_at > now()
  AND (NOT $3 OR $6::boolean OR t.has_dependents IS NULL)
RETURNING {task}, (SELECT name FROM {schema}.queues WHERE id = t.queue_id) AS queue,
    (SELECT max_leased IS NOT NULL OR (group_concurrency IS NOT NULL AND t.grp IS NOT NULL)
     FROM {schema}.queues WHERE id = t.queue_id) AS frees_slot
