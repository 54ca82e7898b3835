-- The ring's current generation, and whether it is due to be rotated
-- (src/rotate.rs): it has been current for at least $1 ms, or for at
-- least $3 ms while it takes more than $2 bytes with its indexes and
-- something has held the xmin horizon since before $4 (src/horizon.rs):
-- a next XID an earlier call answered; NULL, none yet, counts as free.
-- Held since before $4: this snapshot's xmin, the oldest XID still
-- running, is older than it; or a session's snapshot or a replication
-- slot's xmin is (ages in XIDs against the XIDs assigned since $4).
-- Also answers next_xid, the next XID to be assigned, for later calls.
WITH s AS (
    SELECT pg_snapshot_xmin(snap) AS oldest_running,
           pg_snapshot_xmax(snap)::text::bigint AS next_xid
    FROM pg_current_snapshot() AS snap
)
SELECT r.current, s.next_xid,
       r.rotated_at <= now() - $1::bigint * interval '1 millisecond'
       OR (r.rotated_at <= now() - $3::bigint * interval '1 millisecond'
           AND pg_total_relation_size(format('%s.tasks_g%s', '{schema}', r.current)::regclass)
               > $2::bigint
           AND COALESCE(
               s.oldest_running < $4::bigint::text::xid8
               OR EXISTS (SELECT 1 FROM pg_stat_activity a
                          WHERE a.backend_type IS DISTINCT FROM 'autovacuum worker'
                            AND age(a.backend_xmin) > s.next_xid - $4::bigint)
               OR EXISTS (SELECT 1 FROM pg_replication_slots p
                          WHERE age(p.xmin) > s.next_xid - $4::bigint),
               false)) AS due
FROM {schema}.ring r, s
