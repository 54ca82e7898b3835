-- Task $1 with its queue's settings.
SELECT {task}, q.name AS queue, q.backoff_base_ms, q.backoff_max_ms, q.max_payload
FROM {schema}.tasks t
JOIN {schema}.queues q ON q.id = t.queue_id
WHERE t.id = $1
