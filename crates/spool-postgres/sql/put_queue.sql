-- Writes queue $1's settings. The caller holds the row's lock (`lock_queue`),
-- taken before it read the settings it changed.
UPDATE {schema}.queues SET
    lease_ms = $2,
    max_attempts = $3,
    backoff_base_ms = $4,
    backoff_max_ms = $5,
    dedup_window_ms = $6,
    max_payload = $7,
    paused = $8
WHERE name = $1
