-- Wakes claimers waiting on queue $1, in every process.
SELECT pg_notify({channel}, $1)
