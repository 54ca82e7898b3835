-- A fragment: the tokens in one group's bucket at the claim's clock,
-- b.at, under the queue's group_rate_limit (claim_limited.sql's `b`):
-- {bucket}.tokens as of {bucket}.refilled_at (a row of group_buckets),
-- plus group_rate_limit per group_rate_period_ms since, at most
-- group_rate_burst. The grouped claim's steps put it in where they name
-- group_tokens in braces, so every look at a group's bucket counts alike.
LEAST(
    b.group_rate_burst::double precision,
    {bucket}.tokens
        + GREATEST(0, EXTRACT(EPOCH FROM b.at - {bucket}.refilled_at)::double precision * 1000)
          * b.group_rate_limit / b.group_rate_period_ms)
