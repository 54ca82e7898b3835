-- Version 14: a rate limit for each task group of a queue (docs/spec.md
-- §4; README.md, "Groups").
--
-- group_rate_limit, group_rate_period_ms and group_rate_burst: all three
-- or none, as the queue's own rate limit (migration 8). Nullable without
-- defaults: existing queues keep their settings, and adding the columns
-- rewrites no row.
--
-- group_buckets: one group's bucket, `tokens` as of `refilled_at`,
-- written by the grouped claims that take its tasks, under the queue
-- row's lock (so every node reads the tokens the claim before spent). A
-- group without a row has a full bucket. The index on refilled_at finds
-- the buckets a claim may have to wait for: only one emptied within the
-- last token's interval can still be short of a token.
ALTER TABLE {schema}.queues
    ADD COLUMN group_rate_limit     integer CHECK (group_rate_limit >= 1),
    ADD COLUMN group_rate_period_ms bigint  CHECK (group_rate_period_ms >= 1),
    ADD COLUMN group_rate_burst     integer CHECK (group_rate_burst >= 1),
    ADD CHECK ((group_rate_limit IS NULL) = (group_rate_period_ms IS NULL)
               AND (group_rate_limit IS NULL) = (group_rate_burst IS NULL));

CREATE TABLE {schema}.group_buckets (
    queue_id    bigint           NOT NULL,
    grp         text COLLATE "C" NOT NULL,
    tokens      double precision NOT NULL,
    refilled_at timestamptz      NOT NULL,
    PRIMARY KEY (queue_id, grp)
);
CREATE INDEX group_buckets_refilled ON {schema}.group_buckets (queue_id, refilled_at);
