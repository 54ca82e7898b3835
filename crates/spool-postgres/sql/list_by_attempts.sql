-- A page of queue $1's tasks (id $2), most attempts first then id, after
-- the cursor (attempt $3, id $4), at most $5. {filter} is the state filter.
--
-- In four parts, each read in its order from an index and stopped at the
-- page's end, appended in order: the rest of the cursor's attempt count
-- and then the higher counts below it, both from tasks_retried (attempt
-- > 1); then attempt 1, then attempt 0, each in id order. So a page reads
-- about a page of rows, never the whole queue sorted. The caller sorts the
-- page again, which costs nothing and does not rely on the append order.
(SELECT {task}, $1::text AS queue
 FROM {schema}.tasks t
 WHERE t.queue_id = $2 AND t.attempt > 1 AND t.attempt = $3::bigint AND t.id > $4::bigint
   AND {filter}
 ORDER BY t.id
 LIMIT $5)
UNION ALL
(SELECT {task}, $1::text AS queue
 FROM {schema}.tasks t
 WHERE t.queue_id = $2 AND t.attempt > 1 AND t.attempt < $3::bigint AND {filter}
 ORDER BY t.attempt DESC, t.id
 LIMIT $5)
UNION ALL
(SELECT {task}, $1::text AS queue
 FROM {schema}.tasks t
 WHERE t.queue_id = $2 AND t.attempt = 1
   AND ($3::bigint > 1 OR ($3::bigint = 1 AND t.id > $4::bigint)) AND {filter}
 ORDER BY t.id
 LIMIT $5)
UNION ALL
(SELECT {task}, $1::text AS queue
 FROM {schema}.tasks t
 WHERE t.queue_id = $2 AND t.attempt = 0
   AND ($3::bigint > 0 OR t.id > $4::bigint) AND {filter}
 ORDER BY t.id
 LIMIT $5)
LIMIT $5
