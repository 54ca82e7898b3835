-- The ring's current generation, and whether it is due to be rotated
-- (src/rotate.rs): it has been current for at least $1 ms, or for at
-- least $3 ms and it takes more than $2 bytes with its indexes.
SELECT current,
       rotated_at <= now() - $1::bigint * interval '1 millisecond'
       OR (rotated_at <= now() - $3::bigint * interval '1 millisecond'
           AND pg_total_relation_size(format('%s.tasks_g%s', '{schema}', current)::regclass)
               > $2::bigint) AS due
FROM {schema}.ring
