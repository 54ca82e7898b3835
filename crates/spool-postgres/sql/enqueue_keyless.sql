-- Enqueue of a batch in which no task has a key, in one statement (so
-- atomic without a transaction, and one round trip): the queue's settings,
-- fresh ids, the payload check and the insert. Batches with keys take the
-- two statements enqueue_prepare.sql and enqueue_insert.sql.
--
-- $1 queue name; $2 NOTIFY here, in the caller's transaction (see
-- enqueue_insert.sql); then one array per column, one element per task:
-- $3 kind, $4 priority, $5 run_at (NULL: now plus $6 delay_ms),
-- $7 max_attempts (NULL: the queue's), $8 lease_ms, $9 payload_json,
-- $10 payload, $11 traceparent, $12 group (NULL: none).
--
-- A batch with a grouped task marks its queue `has_groups` (once: the
-- update matches only while the flag is unset), in this statement, so a
-- claim that sees its tasks sees the flag too (README.md, "Groups").
--
-- Inserts nothing when the queue does not exist or a payload is larger
-- than the queue's max_payload. Answers one row: max_payload (NULL: no
-- such queue), too_large (the size of the first payload over it, else
-- NULL), ids (the new tasks' ids in input order, ascending) and db_now
-- (the statement's clock: the run_at of tasks to run now).
--
-- `gen` is the ring's current generation, read once for the statement:
-- the column's DEFAULT (current_gen(), a SQL function) would run for every
-- row, about 25 us each (docs/BENCHMARKS.md, 2026-12-02), and reads the
-- same row under the same snapshot.
WITH q AS (
    SELECT id, max_attempts, max_payload FROM {schema}.queues WHERE name = $1
), input AS (
    SELECT *
    FROM unnest($3::text[], $4::smallint[], $5::timestamptz[], $6::bigint[],
                $7::integer[], $8::bigint[], $9::boolean[], $10::bytea[], $11::text[],
                $12::text[])
        WITH ORDINALITY AS u(kind, priority, run_at, delay_ms, max_attempts, lease_ms,
                             payload_json, payload, traceparent, grp, ord)
), too_large AS (
    SELECT octet_length(i.payload) AS size
    FROM input i, q
    WHERE octet_length(i.payload) > q.max_payload
    ORDER BY i.ord
    LIMIT 1
), ids AS (
    -- nextval is evaluated after the sort, so ids ascend in input order.
    SELECT i.ord, nextval('{schema}.task_ids') AS id
    FROM input i
    WHERE EXISTS (SELECT 1 FROM q) AND NOT EXISTS (SELECT 1 FROM too_large)
    ORDER BY i.ord
), inserted AS (
    INSERT INTO {schema}.tasks
        (id, queue_id, state, priority, run_at, attempt, max_attempts, lease_ms,
         kind, key, payload_json, payload, created_at, updated_at, traceparent, grp, gen)
    SELECT n.id, q.id,
           CASE WHEN r.run_at <= now() THEN 'ready' ELSE 'scheduled' END,
           i.priority, r.run_at, 0, COALESCE(i.max_attempts, q.max_attempts), i.lease_ms,
           i.kind, NULL, i.payload_json, i.payload, {schema}.now_ms(), {schema}.now_ms(),
           i.traceparent, i.grp, (SELECT current FROM {schema}.ring)
    FROM input i
    JOIN ids n ON n.ord = i.ord
    CROSS JOIN q
    CROSS JOIN LATERAL (
        SELECT COALESCE(i.run_at, {schema}.now_ms() + i.delay_ms * interval '1 millisecond') AS run_at
    ) r
    RETURNING state
), {mark_grouped}
), woken AS (
    SELECT pg_notify({channel}, $1)
    WHERE $2::boolean AND EXISTS (SELECT 1 FROM inserted WHERE state = 'ready')
)
SELECT (SELECT max_payload FROM q) AS max_payload,
       (SELECT size FROM too_large) AS too_large,
       ARRAY(SELECT id FROM ids ORDER BY ord) AS ids,
       (SELECT count(*) FROM woken) AS woken,
       {schema}.now_ms() AS db_now
