-- Creates queue $1 with the given settings unless it exists.
INSERT INTO {schema}.queues
    (name, lease_ms, max_attempts, backoff_base_ms, backoff_max_ms, dedup_window_ms, max_payload, paused)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (name) DO NOTHING
