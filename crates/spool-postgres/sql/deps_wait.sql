-- Records that each child $2[i] waits for parent $1[i]: the edge, keyed
-- by parent for the lookup when it ends, and the parent's mark
-- (`has_dependents`), written only where it is not set yet. The enqueue
-- locked every parent first (deps_parents.sql).
WITH edges AS (
    INSERT INTO {schema}.task_deps (parent, child)
    SELECT * FROM unnest($1::bigint[], $2::bigint[])
    ON CONFLICT DO NOTHING
)
UPDATE {schema}.tasks t SET has_dependents = true
WHERE t.id = ANY($1::bigint[]) AND t.has_dependents IS NULL
