-- Gives back the lock of vacuum_lock.sql.
SELECT pg_advisory_unlock(hashtext('spool.vacuum {schema}'))
