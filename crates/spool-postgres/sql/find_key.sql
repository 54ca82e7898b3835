-- The id of the live task with key $2 in queue $1.
SELECT k.task_id
FROM {schema}.keys k
JOIN {schema}.queues q ON q.id = k.queue_id
WHERE q.name = $1 AND k.key = $2 AND k.expires_at IS NULL
