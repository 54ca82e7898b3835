-- Tries the session-level lock that lets one process at a time vacuum
-- this schema's task table (src/vacuum.rs). Answers whether it got it.
SELECT pg_try_advisory_lock(hashtext('spool.vacuum {schema}'))
