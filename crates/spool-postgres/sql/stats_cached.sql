-- The count kept by stats_refresh.sql when it is younger than $1 ms, and
-- the clock by which its groups' oldest ready ages are measured. No row:
-- none kept yet, or too old.
SELECT groups, floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint AS now_ms
FROM {schema}.stats_cache
WHERE computed_at > clock_timestamp() - $1::bigint * interval '1 millisecond'
