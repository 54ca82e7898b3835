-- Version 8: claim limits per queue (docs/spec.md §4). A rate limit is
-- all three of rate_limit (tasks per period), rate_period_ms and
-- rate_burst, or none of them; its token bucket is rate_tokens as of
-- rate_refilled_at, refilled continuously by the claims that read it
-- under the queue row's lock. max_leased caps tasks leased at once.
-- Nullable, without defaults: existing queues keep their settings and
-- have no limits, and adding the columns rewrites no row.
ALTER TABLE {schema}.queues
    ADD COLUMN rate_limit       integer CHECK (rate_limit >= 1),
    ADD COLUMN rate_period_ms   bigint  CHECK (rate_period_ms >= 1),
    ADD COLUMN rate_burst       integer CHECK (rate_burst >= 1),
    ADD COLUMN rate_tokens      double precision,
    ADD COLUMN rate_refilled_at timestamptz,
    ADD COLUMN max_leased       integer CHECK (max_leased >= 1),
    ADD CHECK ((rate_limit IS NULL) = (rate_period_ms IS NULL)
               AND (rate_limit IS NULL) = (rate_burst IS NULL));
