-- Takes the edges of parents $1 that just ended: deletes and answers
-- them (parent, child), children ascending, in the transaction that ended
-- the parents. An edge goes once: a second ending of the same parent
-- (a retried task that dies again) finds none.
WITH taken AS (
    DELETE FROM {schema}.task_deps d
    WHERE d.parent = ANY($1::bigint[])
    RETURNING d.parent, d.child
)
SELECT parent, child FROM taken ORDER BY child, parent
