-- A fragment: how many of queue b's leases are live at b.at, counted up
-- to b.max_leased (no more can matter; none without one), on
-- tasks_leased: a lease past its expiry frees its slot at once, written
-- down or not. claim_limited.sql, claim_ahead.sql and settle_limited.sql
-- put it in where they name live_leases in braces, each with the CTE `b`
-- (id, max_leased, at); settle_limited.sql adds a condition of its own
-- where the fragment names `also`.
SELECT count(*) AS n FROM (
    SELECT 1 FROM {schema}.tasks
    WHERE queue_id = (SELECT id FROM b) AND state = 'leased'
      AND lease_expires_at > (SELECT at FROM b){also}
    LIMIT COALESCE((SELECT max_leased FROM b), 0)
) l
