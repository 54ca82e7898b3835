-- The ring's current generation, and whether it has been current for at
-- least $1 ms (src/rotate.rs).
SELECT current, rotated_at <= now() - $1::bigint * interval '1 millisecond' AS due
FROM {schema}.ring
