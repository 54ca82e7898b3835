-- Whether another transaction open for longer than $1 ms holds a lock on
-- generation {gen} (a REPEATABLE READ report that read the task table,
-- say). The rotation's ACCESS EXCLUSIVE request would wait behind it until
-- its lock timeout, and every claim would queue behind the request
-- meanwhile; so the rotation does not ask (src/rotate.rs). The store's own
-- statements hold their locks for milliseconds.
SELECT EXISTS (
    SELECT 1
    FROM pg_locks l
    JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'relation'
      AND l.relation = '{schema}.tasks_g{gen}'::regclass
      AND l.granted
      AND l.pid <> pg_backend_pid()
      AND a.xact_start < clock_timestamp() - $1::bigint * interval '1 millisecond'
) AS held
