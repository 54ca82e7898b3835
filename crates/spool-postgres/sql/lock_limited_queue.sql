-- Takes queue $1's row lock for a limited claim (claim_limited.sql), held
-- until the claim's transaction ends: limited claims of a queue, on every
-- node, take turns, and each one's statement starts after the last one
-- committed, so it sees the tokens it spent and the tasks it leased.
SELECT id FROM {schema}.queues WHERE name = $1 FOR UPDATE
