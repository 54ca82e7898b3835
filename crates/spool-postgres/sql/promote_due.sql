-- Scheduled tasks whose run_at has passed become ready (up to $1 per
-- queue), and claimers waiting on their queues are woken. Answers one row
-- per woken queue.
--
-- A queue not marked as grouped that has a grouped ready task, promoted
-- now or found in tasks_ready_grouped (an enqueue that saw the mark and
-- committed after a claim cleared it, sql/claim_limited.sql; a retried dead
-- task; a dependency resolved), is marked again and woken: the ordinary
-- claim never takes a grouped task, so without the mark it would wait.
-- For a queue without groups that is one probe of an empty range of
-- tasks_ready_grouped, read in its order (not EXISTS, which drops the
-- order and lets statistics pick a scan of a partition). The update finds
-- the locked rows by ctid (a TID scan of each partition, keeping the rows
-- of the right one), with no join for the planner to turn into a scan of
-- the table (claim_steps.sql says why); the connections' enable_seqscan =
-- off keeps it from reading a partition whole instead, which its plan did
-- when it was made just after a turn of the ring (README.md).
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
    RETURNING t.queue_id, t.grp
), regrouped AS (
    UPDATE {schema}.queues q SET has_groups = true
    WHERE NOT q.has_groups
      AND (q.id IN (SELECT queue_id FROM promoted WHERE grp IS NOT NULL)
           OR (SELECT t.grp FROM {schema}.tasks t
               WHERE t.queue_id = q.id AND t.state = 'ready' AND t.grp IS NOT NULL
               ORDER BY t.grp LIMIT 1) IS NOT NULL)
    RETURNING q.id
)
SELECT pg_notify({channel}, q.name)
FROM {schema}.queues q
WHERE q.id IN (SELECT queue_id FROM promoted UNION SELECT id FROM regrouped)
