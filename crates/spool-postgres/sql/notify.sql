-- Wakes claimers waiting on the queues named in $1, in every process.
SELECT pg_notify({channel}, q) FROM unnest($1::text[]) AS q
