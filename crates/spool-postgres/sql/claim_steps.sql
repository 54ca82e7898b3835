-- A fragment: the steps of a claim, for claim.sql and claim_global.sql,
-- which put it in their WITH after a CTE
-- `q (id, lease_ms, may_claim)`: the queue, when it exists and is not
-- paused, and whether this statement may take from it.
--
-- Claims up to {limit} tasks of queue $1 for worker $2: $3, or what the
-- queue's limits allow (claim_limited.sql). $4 the lease the claim
-- asked for in ms (NULL: the queue's), $5 one fresh random token per task
-- that may be claimed (at least $3 of them). ($6 priority, $7 run_at): the
-- claim floor, where the ready scan starts (src/floor.rs): entries before
-- it are of tasks already claimed, which a held xmin horizon keeps in the
-- index; the floor is the front of claim order when the caller knows no
-- better.
--
-- Candidates come from index range scans, each stopping after {limit} rows:
-- ready rows in claim order (tasks_ready), and scheduled rows whose run_at
-- has passed but which the sweeper has not promoted yet (tasks_scheduled),
-- each merging the partitions' indexes in their order. The store's
-- sessions run with enable_sort off (src/store.rs), which leaves the
-- planner no plan that reads a partition's every ready row and sorts
-- them, as it chose whenever statistics said a partition was empty.
-- SKIP LOCKED makes concurrent claimers pass over each other's rows instead
-- of waiting.
--
-- Only tasks without a group: tasks_ready holds no others (migration 9),
-- and a queue with grouped tasks claims through claim_group_steps.sql. A
-- due grouped task in a queue not (or no longer) marked as grouped is left
-- to the sweeper, which makes it ready and marks the queue
-- (sql/promote_due.sql), so that it is claimed in its group's turn.
-- The lease is written by sql/claim_update.sql, which defines `claimed`:
-- the claimed tasks with n, their place in claim order.
ready AS (
    SELECT gen, ctid, id, priority, run_at FROM {schema}.tasks
    WHERE queue_id = (SELECT id FROM q WHERE may_claim) AND state = 'ready' AND grp IS NULL
      AND (priority, run_at) >= ($6::smallint, $7::timestamptz)
    ORDER BY priority, run_at, id
    LIMIT {limit}
    FOR UPDATE SKIP LOCKED
), due AS (
    SELECT gen, ctid, id, priority, run_at FROM {schema}.tasks
    WHERE queue_id = (SELECT id FROM q WHERE may_claim) AND state = 'scheduled'
      AND run_at <= now() AND grp IS NULL
    ORDER BY run_at, id
    LIMIT {limit}
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT gen, ctid, row_number() OVER (ORDER BY priority, run_at, id) AS n
    FROM (SELECT * FROM ready UNION ALL SELECT * FROM due) c
    ORDER BY priority, run_at, id
    LIMIT {limit}
), {claim_update}
