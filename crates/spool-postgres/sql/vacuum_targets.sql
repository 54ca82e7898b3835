-- The task table's partitions worth vacuuming (src/vacuum.rs): those of
-- at least ten pages. A partition vacuumed empty would tell the planner it
-- has no pages, and a generic plan made then would scan it sequentially
-- once it fills; one of ten pages or more keeps at least those.
SELECT c.relname::text
FROM pg_inherits h
JOIN pg_class c ON c.oid = h.inhrelid
WHERE h.inhparent = '{schema}.tasks'::regclass
  AND pg_relation_size(c.oid) >= 10 * current_setting('block_size')::bigint
ORDER BY c.relname
