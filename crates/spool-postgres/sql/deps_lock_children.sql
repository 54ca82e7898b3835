-- Locks tasks $1 (ascending) whose parents ended, and answers each as a
-- task; a child cancelled meanwhile is not answered. Under READ
-- COMMITTED, FOR UPDATE waits for a transaction that is resolving
-- another parent of the same child and then answers the row as that one
-- left it, so two parents ending at once never lose an update.
SELECT {task}, q.name AS queue
FROM unnest($1::bigint[]) WITH ORDINALITY AS c(id, ord)
CROSS JOIN LATERAL (
    SELECT * FROM {schema}.tasks t WHERE t.id = c.id LIMIT 1
    FOR UPDATE
) t
JOIN {schema}.queues q ON q.id = t.queue_id
ORDER BY c.ord
