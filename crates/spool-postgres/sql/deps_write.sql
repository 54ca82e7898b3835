-- Writes task $1's dependencies as spool_core::deps decided them: waiting
-- for $3 parents still, $4 parents failed; `pending` unless $6 (released:
-- scheduled or ready by its own run_at). $2 after and $5 the policy are
-- written at enqueue, NULL (kept) afterwards. $7 is the parent whose
-- result ($8, its JSON text) the task has just received: one row of
-- task_results (migration 13), the same parent's replacing its own, and
-- the mark (`has_dependents`) that makes the task's ending delete it;
-- NULL (most writes) adds none. Whatever the task waits for, the write
-- is its row and at most one result: no array or object grows with its
-- parents. The caller holds the row's lock. Answers the state written and
-- the queue's name, to wake its claimers.
WITH kept AS (
    INSERT INTO {schema}.task_results (child, parent, result)
    SELECT $1, $7::bigint, $8::text WHERE $7::bigint IS NOT NULL
    ON CONFLICT (child, parent) DO UPDATE SET result = EXCLUDED.result
)
UPDATE {schema}.tasks t SET
    state = CASE WHEN NOT $6::boolean THEN 'pending'
                 WHEN t.run_at <= now() THEN 'ready'
                 ELSE 'scheduled' END,
    after_ids = COALESCE($2::bigint[], t.after_ids),
    waiting_count = $3::integer,
    parents_failed = $4::integer,
    if_parent_fails = COALESCE($5::text, t.if_parent_fails),
    has_dependents = CASE WHEN $7::bigint IS NULL THEN t.has_dependents ELSE true END,
    updated_at = {schema}.now_ms()
WHERE t.id = $1
RETURNING t.state, (SELECT name FROM {schema}.queues WHERE id = t.queue_id) AS queue
