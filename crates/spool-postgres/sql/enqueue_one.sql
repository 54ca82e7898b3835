-- Enqueue of a single task without a key, outside a caller's transaction:
-- what enqueue_keyless.sql does for a batch of one, as a plain
-- INSERT ... SELECT, whose plan is far cheaper to start for every call.
--
-- $1 queue name, $2 kind, $3 priority, $4 run_at (NULL: now plus
-- $5 delay_ms), $6 max_attempts (NULL: the queue's), $7 lease_ms,
-- $8 payload_json, $9 payload, $10 traceparent.
--
-- Answers the new task's id, the statement's clock (db_now, the run_at
-- of a task to run now) and the ring's current generation; no row, and
-- nothing written, when the queue does not exist or the payload is larger
-- than its max_payload (the caller then asks enqueue_keyless.sql, which
-- tells which).
--
-- Rendered once per generation of the ring (src/sql.rs): the task goes
-- straight into partition {gen}, the generation the store last saw
-- current (src/rotate.rs, `CurrentGen`), and the answer tells it which is
-- current now. Through the parent table every single enqueue routed its
-- row, and setting up the routing cost 12-16% of the statement's round
-- trip (docs/BENCHMARKS.md, 2026-12-02). Any generation keeps the task:
-- a turn moves every task out of the generation it empties, under a lock
-- that this insert's lock waits for or holds up (src/rotate.rs).
INSERT INTO {schema}.tasks_g{gen}
    (id, queue_id, state, priority, run_at, attempt, max_attempts, lease_ms,
     kind, key, payload_json, payload, created_at, updated_at, traceparent, gen)
SELECT nextval('{schema}.task_ids'), q.id,
       CASE WHEN r.run_at <= now() THEN 'ready' ELSE 'scheduled' END,
       $3::smallint, r.run_at, 0, COALESCE($6::integer, q.max_attempts), $7::bigint,
       $2::text, NULL, $8::boolean, $9::bytea, {schema}.now_ms(), {schema}.now_ms(),
       $10::text, {gen}::smallint
FROM {schema}.queues q
CROSS JOIN LATERAL (
    SELECT COALESCE($4::timestamptz,
                    {schema}.now_ms() + $5::bigint * interval '1 millisecond') AS run_at
) r
WHERE q.name = $1 AND octet_length($9::bytea) <= q.max_payload
RETURNING id, {schema}.now_ms() AS db_now, (SELECT current FROM {schema}.ring) AS current
