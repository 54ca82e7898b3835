-- Reads queue $1's rate-limit bucket without locking its row, for a paced
-- claim (src/ops/claim_pace.rs) to decide how long to sleep before it
-- takes the lock. Only a forecast: a claim on another node may be
-- spending tokens right now, so the locked claim (claim_limited.sql) may
-- find fewer; it never finds more (the refill is a function of time),
-- except just after a put_queue refilled the bucket.
--
-- Answers no row for a paused or unknown queue; otherwise `tokens` (the
-- bucket now, as claim_limited.sql counts it: sql/bucket_tokens.sql),
-- `per_ms` (tokens added per millisecond) and `burst`, all NULL without a
-- rate limit; and `throttled`: the bucket holds less than a whole token
-- (claim_limited.sql would take nothing; the same 1e-9 as there) while
-- the queue holds tasks a claim could take (sql/ready_waits.sql, asked
-- only then).
SELECT b.tokens, b.per_ms, b.burst,
       CASE WHEN b.tokens + 1e-9 < 1 THEN {ready_waits} ELSE false END AS throttled
FROM (
    SELECT id, {bucket_tokens} AS tokens,
           rate_limit::double precision / rate_period_ms AS per_ms,
           rate_burst::double precision AS burst
    FROM {schema}.queues,
         LATERAL (SELECT date_trunc('milliseconds', statement_timestamp()) AS at) t
    WHERE name = $1 AND NOT paused
) b
