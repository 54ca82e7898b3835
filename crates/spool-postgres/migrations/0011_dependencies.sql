-- Version 11: dependencies between tasks (docs/spec.md §3.2; README.md,
-- "Dependencies").
--
-- A task that waits for others is stored `pending`: no partial index of
-- the claim (tasks_ready, tasks_ready_grouped, tasks_scheduled,
-- tasks_leased, tasks_dead) holds that state, so claims, promotion and
-- expiry never see it. What it waits for lives on its own row:
--   after_ids       the tasks named at enqueue, in the order named, each
--                   once; NULL for a task without dependencies (almost
--                   every task), so such rows store nothing more;
--   waiting_on      those that have not ended yet, ascending;
--   parents_failed  how many ended dead or cancelled;
--   if_parent_fails 'cancel' or 'run'.
-- `has_dependents` is true on a task that some pending task waits for,
-- NULL otherwise. It is the hot path's only probe: ack, fail, cancel and
-- expiry end a task in one statement only while it is NULL, and leave a
-- task with dependents to a transaction that resolves them
-- (src/deps/), so ending a task without dependents costs a test of a
-- column of the row it already reads. It is set under the parent row's
-- lock by the enqueue that makes a task wait for it, which is an update
-- of that row: a concurrent ending that read the row before either fails
-- its condition on the new version or sees the flag.
--
-- `task_deps` holds the edges still waiting, keyed by parent: when a
-- parent ends, its dependents are found by one range probe. An edge is
-- deleted by the transaction that ends its parent; an edge whose child
-- was cancelled meanwhile is deleted then too.
--
-- Every existing row stays valid: the new columns are NULL, with no check
-- of their own (no rewrite or scan of the table), and the state check only
-- widens. It is added NOT VALID:
-- every row passed the narrower one, so there is nothing to scan for.
ALTER TABLE {schema}.tasks
    ADD COLUMN after_ids bigint[],
    ADD COLUMN waiting_on bigint[],
    ADD COLUMN parents_failed integer,
    ADD COLUMN if_parent_fails text,
    ADD COLUMN has_dependents boolean;

ALTER TABLE {schema}.tasks DROP CONSTRAINT tasks_state_check;
ALTER TABLE {schema}.tasks ADD CONSTRAINT tasks_state_check
    CHECK (state IN ('ready', 'scheduled', 'leased', 'dead', 'pending')) NOT VALID;

CREATE TABLE {schema}.task_deps (
    parent bigint NOT NULL,
    child  bigint NOT NULL,
    PRIMARY KEY (parent, child)
);
