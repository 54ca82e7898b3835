-- Locks the tasks named as parents by an enqueue ($1, ascending: every
-- transaction that locks several tasks does so in id order) and tells
-- how each stands: `failed` when it is dead, shown dead (its last lease
-- ran out, not yet written down) included. A parent not answered is gone:
-- completed, as far as the store can tell (docs/spec.md §3.2).
--
-- The lock holds the parent until the enqueue commits, so it cannot end
-- between this look and the edge the enqueue adds; deps_wait.sql then
-- marks it (`has_dependents`), which every later ending sees.
-- FOR UPDATE answers the newest version of a row another transaction
-- changed meanwhile, and nothing for one it deleted.
SELECT p.id,
       (p.state = 'dead'
        OR (p.state = 'leased' AND p.lease_expires_at <= now()
            AND p.attempt >= p.max_attempts)) AS failed
FROM unnest($1::bigint[]) WITH ORDINALITY AS c(id, ord)
CROSS JOIN LATERAL (
    SELECT t.id, t.state, t.lease_expires_at, t.attempt, t.max_attempts
    FROM {schema}.tasks t WHERE t.id = c.id LIMIT 1
    FOR UPDATE
) p
ORDER BY c.ord
