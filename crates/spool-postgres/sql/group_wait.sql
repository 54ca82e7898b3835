-- A fragment: how long a claim of a queue with a group_concurrency that
-- took less than asked ($3) may wait for a slot (claim_limited.sql's
-- expiry_ms): until the first live lease of a grouped task runs out,
-- which may free a slot of a full group (an ack, release or failure that
-- frees one wakes the claim sooner: README.md, "Groups"). Read in lease
-- order on tasks_leased, stopping at the first grouped lease.
CASE WHEN b.group_concurrency IS NOT NULL AND (SELECT count(*) FROM claimed) < $3
THEN (SELECT ceil(EXTRACT(EPOCH FROM l.lease_expires_at - b.at) * 1000)::bigint
      FROM {schema}.tasks l
      WHERE l.queue_id = b.id AND l.state = 'leased' AND l.lease_expires_at > b.at
        AND l.grp IS NOT NULL
      ORDER BY l.lease_expires_at
      LIMIT 1)
END
