-- Writes expired leases down, as spool_core::transition decided: per
-- element, task $1 whose lease token is still $2 and whose lease still ends
-- at $4 becomes dead ($3) or ready again at $4, with errors $5; updated
-- when the lease ran out ($4). Answers the ids written.
--
-- The leases were read without locks (expired_leases.sql). A heartbeat
-- (extend.sql) that began before the lease ran out may commit after that
-- read with the same token and a later end: the lease end must still be
-- the one read, and passed, or the holder, already told its lease is
-- extended, would lose the task to a second worker.
--
-- Each element looks its row up by id alone, so that only the primary key
-- can serve the lookup (LIMIT 1 and MATERIALIZED keep the lookups from
-- being flattened into a join the planner could turn around), and the
-- update reaches the rows by partition (gen) and ctid: no plan depends on
-- the table's statistics (README.md). A row changed by another transaction since has
-- another ctid and is left alone.
--
-- A task that pending tasks wait for is written dead only with $6, in
-- the transaction that resolves them (src/sweep.rs, src/deps/endings.rs).
WITH u AS (
    SELECT *
    FROM unnest($1::bigint[], $2::bigint[], $3::boolean[], $4::timestamptz[], $5::jsonb[])
        AS u(id, token, dead, at, errors)
), target AS MATERIALIZED (
    SELECT m.gen, m.ctid, u.*
    FROM u
    CROSS JOIN LATERAL (
        SELECT t.gen, t.ctid, t.state, t.lease_token, t.lease_expires_at, t.has_dependents
        FROM {schema}.tasks t WHERE t.id = u.id LIMIT 1
    ) m
    WHERE m.state = 'leased' AND m.lease_token = u.token
      AND (NOT u.dead OR $6::boolean OR m.has_dependents IS NULL)
      AND m.lease_expires_at = u.at AND m.lease_expires_at <= now()
)
UPDATE {schema}.tasks t SET
    state = CASE WHEN u.dead THEN 'dead' ELSE 'ready' END,
    run_at = CASE WHEN u.dead THEN t.run_at ELSE u.at END,
    errors = u.errors,
    lease_owner = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = u.at
FROM target u
WHERE t.gen = u.gen AND t.ctid = u.ctid AND t.lease_token = u.token AND t.lease_expires_at = u.at
RETURNING t.id
