-- Enqueue, step 1: the queue's settings and $2 fresh task ids.
-- $1 queue name, $2 how many ids.
-- The sequence hands ids out in this order; the caller sorts them anyway.
SELECT q.id, q.max_attempts, q.max_payload,
       ARRAY(SELECT nextval('{schema}.task_ids') FROM generate_series(1, $2::integer)) AS ids
FROM {schema}.queues q
WHERE q.name = $1
