-- What tasks $1, each with dependencies, hold beside their rows
-- (migration 13): the parents a pending one still waits for
-- (`waiting_on`, ascending; NULL for a task not pending), and the results
-- its parents left it (`result_parents` and `results`, by parent id
-- ascending; NULL for none). Answers `waiting_count` from the row too:
-- every ending a task waits for lowers it, so a caller that read the row
-- in another statement knows whether an ending came between. A task gone
-- meanwhile is not answered. One statement, one snapshot: the edges, the
-- results and the count agree.
SELECT c.id, t.waiting_count,
       CASE WHEN t.state = 'pending' THEN ARRAY(
           SELECT d.parent FROM {schema}.task_deps d WHERE d.child = c.id ORDER BY d.parent
       ) END AS waiting_on,
       r.parents AS result_parents, r.texts AS results
FROM unnest($1::bigint[]) AS c(id)
CROSS JOIN LATERAL (
    SELECT t.state, t.waiting_count FROM {schema}.tasks t WHERE t.id = c.id LIMIT 1
) t
CROSS JOIN LATERAL (
    SELECT array_agg(x.parent ORDER BY x.parent) AS parents,
           array_agg(x.result ORDER BY x.parent) AS texts
    FROM {schema}.task_results x WHERE x.child = c.id
) r
