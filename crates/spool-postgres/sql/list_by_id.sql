-- A page of queue $1's tasks (id $2), ids above $3, ascending, at most $4.
-- {filter} is the state filter.
SELECT {task}, $1::text AS queue
FROM {schema}.tasks t
WHERE t.queue_id = $2 AND t.id > $3 AND {filter}
ORDER BY t.id
LIMIT $4
