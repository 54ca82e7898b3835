-- Creates queue $1 or replaces its settings.
INSERT INTO {schema}.queues
    (name, lease_ms, max_attempts, backoff_base_ms, backoff_max_ms, dedup_window_ms, max_payload, paused)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (name) DO UPDATE SET
    lease_ms = excluded.lease_ms,
    max_attempts = excluded.max_attempts,
    backoff_base_ms = excluded.backoff_base_ms,
    backoff_max_ms = excluded.backoff_max_ms,
    dedup_window_ms = excluded.dedup_window_ms,
    max_payload = excluded.max_payload,
    paused = excluded.paused
