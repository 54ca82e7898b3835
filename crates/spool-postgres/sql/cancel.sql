-- Deletes task $1 in any state and retires its idempotency key for the
-- queue's dedup window. Answers how many tasks were deleted (0 or 1), and
-- `freed`, the queue's name when the task was leased in a queue with a
-- max_leased, or a group_concurrency and the task a group (a slot freed
-- there).
-- A task that pending tasks wait for is deleted only with $2, in the
-- transaction that resolves them (src/deps/endings.rs); without it the
-- statement deletes nothing and the store takes that path.
WITH gone AS (
    DELETE FROM {schema}.tasks t WHERE t.id = $1 AND ($2::boolean OR t.has_dependents IS NULL)
    RETURNING t.id, t.queue_id, t.key, t.state, t.grp
), retired AS (
    UPDATE {schema}.keys k
    SET expires_at = {schema}.now_ms() + q.dedup_window_ms * interval '1 millisecond'
    FROM gone g
    JOIN {schema}.queues q ON q.id = g.queue_id
    WHERE g.key IS NOT NULL
      AND k.queue_id = g.queue_id AND k.key = g.key AND k.task_id = g.id
)
SELECT count(*),
       (SELECT q.name FROM gone g JOIN {schema}.queues q ON q.id = g.queue_id
        WHERE g.state = 'leased'
          AND (q.max_leased IS NOT NULL OR (q.group_concurrency IS NOT NULL AND g.grp IS NOT NULL))
        LIMIT 1) AS freed
FROM gone
