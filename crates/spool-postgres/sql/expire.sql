-- Writes expired leases down, as spool_core::transition decided: per
-- element, task $1 whose lease token is still $2 becomes dead ($3) or ready
-- again at $4, with errors $5; updated when the lease ran out ($4).
-- Answers the ids written.
UPDATE {schema}.tasks t SET
    state = CASE WHEN u.dead THEN 'dead' ELSE 'ready' END,
    run_at = CASE WHEN u.dead THEN t.run_at ELSE u.at END,
    errors = u.errors,
    lease_owner = NULL,
    lease_token = NULL,
    lease_expires_at = NULL,
    updated_at = u.at
FROM unnest($1::bigint[], $2::bigint[], $3::boolean[], $4::timestamptz[], $5::jsonb[])
    AS u(id, token, dead, at, errors)
WHERE t.id = u.id AND t.state = 'leased' AND t.lease_token = u.token
RETURNING t.id
