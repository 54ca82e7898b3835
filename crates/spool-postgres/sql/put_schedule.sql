-- Creates schedule $1 or replaces its definition, keeping its firing state
-- (last_fire_at) and created_at. $2 queue, $3 kind, $4 payload is JSON,
-- $5 payload, $6 every_ms, $7 cron, $8 tz, $9 deadline_ms.
INSERT INTO {schema}.schedules AS s
    (name, queue, kind, payload_json, payload, every_ms, cron, tz, deadline_ms, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {schema}.now_ms())
ON CONFLICT (name) DO UPDATE SET
    queue = excluded.queue,
    kind = excluded.kind,
    payload_json = excluded.payload_json,
    payload = excluded.payload,
    every_ms = excluded.every_ms,
    cron = excluded.cron,
    tz = excluded.tz,
    deadline_ms = excluded.deadline_ms
RETURNING s.*
