-- For each lease of $1 (task ids) and $2 (tokens), in input order: whether
-- it is held now, that is, the task is leased under that token and its
-- lease has not expired. Each item looks its row up by id alone, as
-- ack_many.sql does, so only the primary key serves the lookup.
SELECT COALESCE(
           m.lease_token = a.token AND m.state = 'leased' AND m.lease_expires_at > now(),
           false
       ) AS held
FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS a(id, token, ord)
LEFT JOIN LATERAL (
    SELECT t.state, t.lease_token, t.lease_expires_at
    FROM {schema}.tasks t WHERE t.id = a.id LIMIT 1
) m ON true
ORDER BY a.ord
