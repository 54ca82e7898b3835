-- Takes queue $1's row lock for a limited claim (claim_limited.sql), held
-- until the claim's transaction ends: limited claims of a queue, on every
-- node, take turns, and each one's statement starts after the last one
-- committed, so it sees the tokens it spent and the tasks it leased.
--
-- Rendered twice (src/sql.rs): waiting for the lock, and with SKIP LOCKED
-- after FOR UPDATE, for a paced claim (src/ops/claim_pace.rs) that would
-- rather go back to sleep than queue behind another node's claim; that
-- one answers no row while another transaction holds the lock.
--
-- Answers the queue's id and whether its claims take groups into account
-- (`grouped`: it holds grouped tasks, or has a group_concurrency). For
-- such a queue it also makes up to 1,000 of its due scheduled tasks ready,
-- earliest first, as the sweeper would: the grouped claim reads ready
-- tasks only, and its statement, which comes next, sees them.
WITH q AS (
    SELECT id, (group_concurrency IS NOT NULL OR has_groups) AS grouped
    FROM {schema}.queues WHERE name = $1
    FOR UPDATE {skip_locked}
), due AS (
    SELECT t.gen, t.ctid FROM {schema}.tasks t
    WHERE t.queue_id = (SELECT id FROM q WHERE grouped) AND t.state = 'scheduled'
      AND t.run_at <= now()
    ORDER BY t.run_at, t.id
    LIMIT 1000
    FOR UPDATE SKIP LOCKED
), promoted AS (
    UPDATE {schema}.tasks t SET state = 'ready'
    WHERE t.ctid = ANY(ARRAY(SELECT ctid FROM due))
      AND (t.gen, t.ctid) = ANY(ARRAY(SELECT (gen, ctid) FROM due))
)
SELECT id, grouped FROM q
