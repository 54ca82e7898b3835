-- Version 3: vacuum never truncates the task table.
--
-- Truncating a table's empty tail takes an ACCESS EXCLUSIVE lock, which
-- stops every claim, ack and enqueue until it is done (5 s in a measured
-- run). The queue table empties and refills all the time, so the space is
-- better kept for reuse. This holds for autovacuum and for the store's own
-- vacuum (src/vacuum.rs) alike.
ALTER TABLE {schema}.tasks SET (vacuum_truncate = false);
