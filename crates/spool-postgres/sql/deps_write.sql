-- Writes task $1's dependencies as spool_core::deps decided them: waiting
-- on $3, $4 parents failed; `pending` unless $6 (released: scheduled or
-- ready by its own run_at). $2 after and $5 the policy are written at
-- enqueue, NULL (kept) afterwards. $7 are the parents' results the task
-- has just received (a jsonb object, parent id to result text, migration
-- 12), added to those it holds, the same parent's replacing its own:
-- NULL (most writes) leaves them as they are. The caller holds the row's
-- lock. Answers the state written and the queue's name, to wake its
-- claimers.
UPDATE {schema}.tasks t SET
    state = CASE WHEN NOT $6::boolean THEN 'pending'
                 WHEN t.run_at <= now() THEN 'ready'
                 ELSE 'scheduled' END,
    after_ids = COALESCE($2::bigint[], t.after_ids),
    waiting_on = $3::bigint[],
    parents_failed = $4::integer,
    if_parent_fails = COALESCE($5::text, t.if_parent_fails),
    parent_results = CASE WHEN $7::jsonb IS NULL THEN t.parent_results
                          ELSE COALESCE(t.parent_results, '{}'::jsonb) || $7::jsonb END,
    updated_at = {schema}.now_ms()
WHERE t.id = $1
RETURNING t.state, (SELECT name FROM {schema}.queues WHERE id = t.queue_id) AS queue
