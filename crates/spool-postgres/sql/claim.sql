-- Claims up to $3 tasks of queue $1 in one statement (sql/claim_steps.sql,
-- which says what the parameters are). A paused or unknown queue yields
-- no candidates. Answers the claimed tasks with n, their place in claim
-- order.
WITH q AS (
    SELECT id, lease_ms, true AS may_claim
    FROM {schema}.queues WHERE name = $1 AND NOT paused
), {claim_steps}
SELECT * FROM claimed
