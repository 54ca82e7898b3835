-- A fragment of sql/claim_steps.sql: the scheduled tasks of one partition
-- ({table}) whose run_at has passed, in (run_at, id) order, at most $3.
SELECT * FROM (SELECT gen, ctid, id, priority, run_at FROM {schema}.{table}
    WHERE queue_id = (SELECT id FROM q WHERE may_claim) AND state = 'scheduled'
      AND run_at <= now()
    ORDER BY run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED) d_{table}
