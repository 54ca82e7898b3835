-- The whole tokens left now in the rate-limit bucket of each queue that
-- has a rate limit, counted as the limited claim counts them
-- (sql/bucket_tokens.sql, the same 1e-9 as claim_limited.sql): the stats'
-- rate_tokens, read fresh even when the counts come from the shared
-- cache. Reads the queues table alone and locks nothing.
SELECT name, floor({bucket_tokens} + 1e-9)::bigint AS tokens
FROM {schema}.queues,
     LATERAL (SELECT date_trunc('milliseconds', statement_timestamp()) AS at) t
WHERE rate_limit IS NOT NULL
