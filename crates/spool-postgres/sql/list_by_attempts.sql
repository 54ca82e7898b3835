-- A page of queue $1's tasks (id $2), most attempts first then id, after
-- the cursor (attempt $3, id $4), at most $5. {filter} is the state filter.
SELECT {task}, $1::text AS queue
FROM {schema}.tasks t
WHERE t.queue_id = $2 AND {filter}
  AND (t.attempt < $3::bigint OR (t.attempt = $3::bigint AND t.id > $4::bigint))
ORDER BY t.attempt DESC, t.id
LIMIT $5
