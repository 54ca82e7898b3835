-- Enqueue, step 2, in one statement (so atomic without a transaction):
-- claim the idempotency keys, insert the tasks whose key is not taken, and
-- with $13 wake waiting claimers if any task is ready.
--
-- $1 queue id, $2 queue name (the notification), then one array per column,
-- one element per task: $3 id, $4 kind, $5 priority, $6 run_at (NULL: now
-- plus $7 delay_ms), $8 key, $9 max_attempts, $10 lease_ms,
-- $11 payload_json, $12 payload, $14 traceparent, $15 group (NULL: none).
-- Keys are unique within the input. A batch with a grouped task marks its
-- queue `has_groups`, as enqueue_keyless.sql says.
-- $13: NOTIFY here, in the caller's transaction. A notifying commit holds
-- PostgreSQL's global notification lock through its WAL flush, which
-- serializes every such commit in the cluster; the store's own enqueues
-- pass false and notify after commit, coalesced (src/notifier.rs).
--
-- A key row is taken over only when its dedup window has passed; otherwise
-- it keeps naming the existing task and the input task is a duplicate.
-- Keys are locked in key order, so concurrent batches cannot deadlock.
-- Answers one row per input key (key, the task id it names), or a single
-- row of NULL keys when no task has a key; each row also carries db_now,
-- the statement's clock (the run_at of tasks to run now).
--
-- `gen` is the ring's current generation, read once for the statement:
-- the column's DEFAULT (current_gen(), a SQL function) would run for every
-- row, about 25 us each (docs/BENCHMARKS.md, 2026-12-02), and reads the
-- same row under the same snapshot.
WITH input AS (
    SELECT *
    FROM unnest($3::bigint[], $4::text[], $5::smallint[], $6::timestamptz[], $7::bigint[],
                $8::text[], $9::integer[], $10::bigint[], $11::boolean[], $12::bytea[],
                $14::text[], $15::text[])
        AS u(id, kind, priority, run_at, delay_ms, key, max_attempts, lease_ms, payload_json,
             payload, traceparent, grp)
), taken AS (
    INSERT INTO {schema}.keys AS k (queue_id, key, task_id)
    SELECT $1, i.key, i.id FROM input i WHERE i.key IS NOT NULL ORDER BY i.key
    ON CONFLICT (queue_id, key) DO UPDATE SET
        task_id = CASE WHEN k.expires_at <= now() THEN excluded.task_id ELSE k.task_id END,
        expires_at = CASE WHEN k.expires_at <= now() THEN NULL ELSE k.expires_at END
    RETURNING k.key, k.task_id
), inserted AS (
    INSERT INTO {schema}.tasks
        (id, queue_id, state, priority, run_at, attempt, max_attempts, lease_ms,
         kind, key, payload_json, payload, created_at, updated_at, traceparent, grp, gen)
    SELECT i.id, $1,
           CASE WHEN r.run_at <= now() THEN 'ready' ELSE 'scheduled' END,
           i.priority, r.run_at, 0, i.max_attempts, i.lease_ms,
           i.kind, i.key, i.payload_json, i.payload, {schema}.now_ms(), {schema}.now_ms(),
           i.traceparent, i.grp, (SELECT current FROM {schema}.ring)
    FROM input i
    CROSS JOIN LATERAL (
        SELECT COALESCE(i.run_at, {schema}.now_ms() + i.delay_ms * interval '1 millisecond') AS run_at
    ) r
    WHERE i.key IS NULL
       OR EXISTS (SELECT 1 FROM taken t WHERE t.key = i.key AND t.task_id = i.id)
    RETURNING state
), {mark_grouped}
), woken AS (
    SELECT pg_notify({channel}, $2)
    WHERE $13::boolean AND EXISTS (SELECT 1 FROM inserted WHERE state = 'ready')
)
SELECT t.key, t.task_id, {schema}.now_ms() AS db_now
FROM (SELECT count(*) FROM woken) w
LEFT JOIN taken t ON true
