-- Queue $1: its id and settings.
SELECT id, lease_ms, max_attempts, backoff_base_ms, backoff_max_ms, dedup_window_ms,
       max_payload, paused, rate_limit, rate_period_ms, rate_burst, max_leased,
       group_concurrency, group_rate_limit, group_rate_period_ms, group_rate_burst
FROM {schema}.queues
WHERE name = $1
