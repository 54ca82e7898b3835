-- The tokens in a queue row's rate-limit bucket at `at` (NULL without a
-- rate limit): rate_tokens as of rate_refilled_at (a full bucket if never
-- counted), plus rate_limit per rate_period_ms since, at most rate_burst.
-- A fragment: claim_limited.sql and peek_bucket.sql put it in where they
-- name bucket_tokens in braces, so both count the bucket alike.
CASE WHEN rate_limit IS NOT NULL THEN LEAST(
    rate_burst::double precision,
    COALESCE(rate_tokens, rate_burst)
        + GREATEST(0, EXTRACT(EPOCH FROM at - rate_refilled_at)::double precision * 1000)
          * rate_limit / rate_period_ms)
END
