-- Scheduled tasks whose run_at has passed become ready (up to $1 per
-- queue and partition of the task table), and claimers waiting on their
-- queues are woken. Answers one row per woken queue.
--
-- The due rows come from each partition's tasks_scheduled in run_at order
-- (src/sql.rs puts in one scan per partition, sql/promote_due_scan.sql,
-- joined by UNION ALL): through the parent, with statistics saying a
-- partition was empty, the planner read all of its due rows and sorted
-- them. The update finds the locked rows by ctid (a TID scan of each
-- partition, keeping the rows of the right one), with no join for the
-- planner to turn into a scan of the table (claim_steps.sql says why).
WITH due AS (
    {due_scans}
), promoted AS (
    UPDATE {schema}.tasks t SET state = 'ready'
    WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM due))
      AND (t.gen, t.ctid) = ANY(ARRAY(SELECT (gen, ctid) FROM due))
    RETURNING t.queue_id
)
SELECT pg_notify({channel}, q.name)
FROM {schema}.queues q
WHERE q.id IN (SELECT queue_id FROM promoted)
