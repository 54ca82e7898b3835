-- Version 13: what a pending task waits for, and its parents' results,
-- leave its row (docs/spec.md §3.2; README.md, "Dependencies").
--
-- Until now each parent's ending rewrote its dependent's row with the
-- whole `waiting_on` array and `parent_results` object (migrations 11 and
-- 12), so a callback with N parents cost writes quadratic in N (1,000
-- parents with 1 kB results: 556 MB of WAL). Now an ending writes, for
-- each dependent, one counter on its row and at most one row of its own:
--   waiting_count   on the task's row: how many parents it still waits
--                   for; NULL reads as 0 (a task that waits for nothing);
--   task_deps       the edges still waiting, already there (migration
--                   11), now also indexed by child: a pending task's
--                   `waiting_on` is its edges, read in parent order;
--   task_results    one row per parent that completed with a result
--                   while the task waited for it, keyed (child, parent),
--                   the result's JSON text as the ack gave it.
-- A task holding results carries `has_dependents`, as a task others wait
-- for does: every statement that ends a task in one go passes it over,
-- and the transaction that ends it (src/deps/endings.rs) deletes its
-- results with it, so a completed or cancelled task leaves none.
--
-- What pending tasks held is carried over: each result becomes a row of
-- task_results, and each pending task's count is its array's length (its
-- edges are already in task_deps). Only the rows of pending tasks and of
-- tasks holding results are rewritten, to set the count and the mark;
-- every other row is left alone (finding them reads the table once).
--
-- `waiting_on` and `parent_results` stay, no longer read or written: a
-- process of version 12 still running during an upgrade names them in
-- every statement that reads a task, and keeps claiming and acking until
-- it is replaced. Its workflows do not mix with this version's (it keeps
-- the array, this version the count), so a workflow started or ended by
-- such a process during the upgrade may stall; upgrade every process
-- before relying on dependencies again.
ALTER TABLE {schema}.tasks ADD COLUMN waiting_count integer;

CREATE INDEX task_deps_child ON {schema}.task_deps (child, parent);

CREATE TABLE {schema}.task_results (
    child  bigint NOT NULL,
    parent bigint NOT NULL,
    result text NOT NULL,
    PRIMARY KEY (child, parent)
);

INSERT INTO {schema}.task_results (child, parent, result)
SELECT t.id, r.key::bigint, r.value #>> '{}'
FROM {schema}.tasks t
CROSS JOIN LATERAL jsonb_each(t.parent_results) r
WHERE t.parent_results IS NOT NULL;

UPDATE {schema}.tasks t SET
    waiting_count = CASE WHEN t.state = 'pending'
                         THEN COALESCE(cardinality(t.waiting_on), 0) END,
    has_dependents = CASE WHEN t.parent_results IS NOT NULL THEN true
                          ELSE t.has_dependents END
WHERE t.state = 'pending' OR t.parent_results IS NOT NULL;
