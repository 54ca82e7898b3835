-- Version 9: task groups (docs/spec.md §4, "Groups"; README.md, "Groups").
--
-- tasks.grp is a task's group, NULL for none: nullable without a default,
-- so adding it rewrites no row and tasks enqueued before have none. It is
-- added to the partitioned table, so to every partition, and the
-- rotation's moves (an update of gen) carry it like every other column.
-- Collation "C": groups are ordered by their bytes, as spool_core orders
-- them, whatever the database's collation.
ALTER TABLE {schema}.tasks ADD COLUMN grp text COLLATE "C";

-- group_concurrency: at most that many tasks of one group leased at once
-- (NULL: no bound). has_groups: the queue has held a task with a group,
-- set by the enqueue that writes the first one, in its statement, and
-- never cleared: while it and group_concurrency are unset, the queue's
-- claims take the ordinary path, which reads only this row to know it.
-- group_cursor: the group the queue's last claim served last ('' for the
-- tasks without one; NULL before the first grouped claim), where the next
-- claim's turn starts. The constant default rewrites no row.
ALTER TABLE {schema}.queues
    ADD COLUMN group_concurrency integer CHECK (group_concurrency >= 1),
    ADD COLUMN has_groups boolean NOT NULL DEFAULT false,
    ADD COLUMN group_cursor text COLLATE "C";

-- The claim index keeps the ready tasks without a group only: what the
-- ordinary claim reads is unchanged, and a grouped claim finds the tasks
-- without a group (the group named '') without walking grouped ones. For a
-- queue without groups it holds the same rows as before. Built again on
-- every partition, under the migration's lock.
DROP INDEX {schema}.tasks_ready;
CREATE INDEX tasks_ready ON {schema}.tasks (queue_id, priority, run_at, id)
    WHERE state = 'ready' AND grp IS NULL;

-- Grouped ready tasks, by group, in claim order within it: a grouped
-- claim skips from group to group (one probe per group) and takes each
-- group's head. Grouped leases, by group and end: the live leases of a
-- group are a range. Both partial, so tasks without a group, however
-- many, are never written to them.
CREATE INDEX tasks_ready_grouped ON {schema}.tasks (queue_id, grp, priority, run_at, id)
    WHERE grp IS NOT NULL AND state = 'ready';
CREATE INDEX tasks_leased_grouped ON {schema}.tasks (queue_id, grp, lease_expires_at)
    WHERE grp IS NOT NULL AND state = 'leased';
