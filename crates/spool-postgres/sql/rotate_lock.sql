-- The rotation's last step takes generation {gen} for itself: nothing may
-- read or write it while it is emptied and truncated. lock_timeout bounds
-- how long claims queued behind this request wait when it cannot be had
-- (a transaction that read the task table is still open): the rotation
-- gives up and tries again later (src/rotate.rs).
SET LOCAL lock_timeout = '50ms';
LOCK TABLE {schema}.tasks_g{gen} IN ACCESS EXCLUSIVE MODE
