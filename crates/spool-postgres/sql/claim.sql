-- Claims up to $3 tasks of queue $1 in one statement (sql/claim_steps.sql,
-- which says what the parameters are). A paused or unknown queue yields
-- no row. A queue with limits, or with groups (it holds grouped tasks
-- or has a group_concurrency), yields no candidates here, only a row that
-- says `limited`: its claims go through claim_limited.sql, under the
-- queue row's lock. Answers the claimed tasks with n, their place in claim
-- order, or one row with a NULL n when nothing was claimed.
WITH q AS (
    SELECT id, lease_ms,
           (rate_limit IS NOT NULL OR max_leased IS NOT NULL
            OR group_concurrency IS NOT NULL OR has_groups) AS limited,
           (rate_limit IS NULL AND max_leased IS NULL
            AND group_concurrency IS NULL AND NOT has_groups) AS may_claim
    FROM {schema}.queues WHERE name = $1 AND NOT paused
), {claim_steps}
SELECT q.limited, c.* FROM q LEFT JOIN claimed c ON true
