-- A fragment of sql/claim_steps.sql: the ready tasks of one partition
-- ({table}) from the claim floor on, in claim order, at most $3.
SELECT * FROM (SELECT gen, ctid, id, priority, run_at FROM {schema}.{table}
    WHERE queue_id = (SELECT id FROM q WHERE may_claim) AND state = 'ready'
      AND (priority, run_at) >= ($6::smallint, $7::timestamptz)
    ORDER BY priority, run_at, id
    LIMIT $3
    FOR UPDATE SKIP LOCKED) r_{table}
