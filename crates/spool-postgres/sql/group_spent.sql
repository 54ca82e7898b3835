-- A fragment: a grouped claim's spending of its groups' tokens, for
-- claim_limited.sql after `claimed` (README.md, "Groups"). Under the
-- queue's group_rate_limit, each group the claim took tasks of gets its
-- bucket written as of the claim's clock: what it held then, less the
-- tasks taken. A group without a row had a full bucket. The queue row's
-- lock orders every grouped claim of the queue, on any node, so the next
-- one reads these tokens. Answers each bucket's tokens left.
group_spent AS (
    INSERT INTO {schema}.group_buckets AS g (queue_id, grp, tokens, refilled_at)
    SELECT b.id, p.grp,
           COALESCE((SELECT {group_tokens:gb} FROM {schema}.group_buckets gb
                     WHERE gb.queue_id = b.id AND gb.grp = p.grp),
                    b.group_rate_burst) - count(*),
           b.at
    FROM picked p
    JOIN claimed c ON c.n = p.n
    CROSS JOIN b
    WHERE b.group_rate_limit IS NOT NULL AND p.grp <> ''
    GROUP BY b.id, p.grp, b.at, b.group_rate_limit, b.group_rate_period_ms, b.group_rate_burst
    ON CONFLICT (queue_id, grp)
        DO UPDATE SET tokens = EXCLUDED.tokens, refilled_at = EXCLUDED.refilled_at
    RETURNING g.tokens
)
