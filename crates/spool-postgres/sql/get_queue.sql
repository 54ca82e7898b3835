-- Queue $1: its id and settings.
SELECT id, lease_ms, max_attempts, backoff_base_ms, backoff_max_ms, dedup_window_ms,
       max_payload, paused
FROM {schema}.queues
WHERE name = $1
