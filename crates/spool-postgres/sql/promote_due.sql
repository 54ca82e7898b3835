-- Scheduled tasks whose run_at has passed become ready (up to $1 per
-- queue), and claimers waiting on their queues are woken. Answers one row
-- per woken queue. The update finds the locked rows by ctid (a TID scan of
-- each partition, keeping the rows of the right one), with no join for the
-- planner to turn into a scan of the table (claim_steps.sql says why).
WITH due AS (
    SELECT d.gen, d.ctid
    FROM {schema}.queues q
    CROSS JOIN LATERAL (
        SELECT t.gen, t.ctid FROM {schema}.tasks t
        WHERE t.queue_id = q.id AND t.state = 'scheduled' AND t.run_at <= now()
        ORDER BY t.run_at
        LIMIT $1
        FOR UPDATE SKIP LOCKED
    ) d
), promoted AS (
    UPDATE {schema}.tasks t SET state = 'ready'
    WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM due))
      AND (t.gen, t.ctid) = ANY(ARRAY(SELECT (gen, ctid) FROM due))
    RETURNING t.queue_id
)
SELECT pg_notify({channel}, q.name)
FROM {schema}.queues q
WHERE q.id IN (SELECT queue_id FROM promoted)
