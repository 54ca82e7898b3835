-- Writes task $1's dependencies as spool_core::deps decided them: waiting
-- on $3, $4 parents failed; `pending` unless $6 (released: scheduled or
-- ready by its own run_at). $2 after and $5 the policy are written at
-- enqueue, NULL (kept) afterwards. The caller holds the row's lock.
-- Answers the state written and the queue's name, to wake its claimers.
UPDATE {schema}.tasks t SET
    state = CASE WHEN NOT $6::boolean THEN 'pending'
                 WHEN t.run_at <= now() THEN 'ready'
                 ELSE 'scheduled' END,
    after_ids = COALESCE($2::bigint[], t.after_ids),
    waiting_on = $3::bigint[],
    parents_failed = $4::integer,
    if_parent_fails = COALESCE($5::text, t.if_parent_fails),
    updated_at = {schema}.now_ms()
WHERE t.id = $1
RETURNING t.state, (SELECT name FROM {schema}.queues WHERE id = t.queue_id) AS queue
