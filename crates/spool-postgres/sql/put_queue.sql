-- Writes queue $1's settings. The caller holds the row's lock (`lock_queue`),
-- taken before it read the settings it changed. $9, $10, $11: the rate
-- limit (limit, period_ms, burst; all NULL for none), $12 max_leased,
-- $13 group_concurrency, $14, $15, $16 the rate limit of each group (as
-- $9-$11). A rate limit that is new or changed starts with a full bucket,
-- each group's too (their rows go); an unchanged one keeps its tokens.
WITH reset AS (
    DELETE FROM {schema}.group_buckets g
    USING {schema}.queues q
    WHERE q.name = $1 AND g.queue_id = q.id
      AND (q.group_rate_limit, q.group_rate_period_ms, q.group_rate_burst)
          IS DISTINCT FROM ($14::integer, $15::bigint, $16::integer)
)
UPDATE {schema}.queues SET
    lease_ms = $2,
    max_attempts = $3,
    backoff_base_ms = $4,
    backoff_max_ms = $5,
    dedup_window_ms = $6,
    max_payload = $7,
    paused = $8,
    rate_tokens = CASE
        WHEN (rate_limit, rate_period_ms, rate_burst) IS NOT DISTINCT FROM ($9::integer, $10::bigint, $11::integer)
        THEN rate_tokens ELSE $11::integer::double precision END,
    rate_refilled_at = CASE
        WHEN (rate_limit, rate_period_ms, rate_burst) IS NOT DISTINCT FROM ($9::integer, $10::bigint, $11::integer)
        THEN rate_refilled_at WHEN $9::integer IS NULL THEN NULL ELSE {schema}.now_ms() END,
    rate_limit = $9::integer,
    rate_period_ms = $10::bigint,
    rate_burst = $11::integer,
    max_leased = $12::integer,
    group_concurrency = $13::integer,
    group_rate_limit = $14::integer,
    group_rate_period_ms = $15::bigint,
    group_rate_burst = $16::integer
WHERE name = $1
