-- Locks tasks $1 (ascending) whose parents ended, and answers what
-- resolving them needs: state, how many parents each still waits for and
-- how many failed, its policy and its queue; a child cancelled meanwhile
-- is not answered. Under READ COMMITTED, FOR UPDATE waits for a
-- transaction that is resolving another parent of the same child and
-- then answers the row as that one left it, so two parents ending at
-- once never lose an update of the count.
SELECT t.id, t.state, t.waiting_count, t.parents_failed, t.if_parent_fails, q.name AS queue
FROM unnest($1::bigint[]) WITH ORDINALITY AS c(id, ord)
CROSS JOIN LATERAL (
    SELECT * FROM {schema}.tasks t WHERE t.id = c.id LIMIT 1
    FOR UPDATE
) t
JOIN {schema}.queues q ON q.id = t.queue_id
ORDER BY c.ord
