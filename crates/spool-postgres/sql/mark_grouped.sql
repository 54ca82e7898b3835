-- A fragment of the enqueue statements, after `input` (the batch, with a
-- grp column): marks the queue as having groups when a task of the batch
-- has one (src/sql.rs puts in how the statement names the queue's id).
-- The update matches only while the flag is unset, so only the first
-- grouped batch of a queue writes (and locks) its row; for a batch
-- without groups the condition on the input is decided first, and the
-- queue's row is not read.
marked AS (
    UPDATE {schema}.queues SET has_groups = true
    WHERE id = {queue_id} AND NOT has_groups
      AND EXISTS (SELECT 1 FROM input WHERE grp IS NOT NULL)
