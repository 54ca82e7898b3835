-- Version 7: a task may carry its producer's trace context, a W3C
-- traceparent that Spool checks at enqueue (docs/spec.md §2) and hands to
-- every run. Nullable, without a default: adding it rewrites no row, and
-- tasks enqueued before carry none. Added to the partitioned table, it is
-- added to every partition.
ALTER TABLE {schema}.tasks ADD COLUMN traceparent text;
