-- Version 6: the task table becomes a ring of generations, so its size no
-- longer depends on VACUUM (README.md, "A held horizon: the ring").
--
-- `tasks` is partitioned by `gen`: generations 0, 1 and 2 form a ring, and
-- 3 (`tasks_parked`) holds dead tasks and tasks scheduled far ahead, which
-- the hot path does not touch. New tasks go to the current generation
-- (`ring.current`, the column's default). The rotation (src/rotate.rs)
-- moves the live rows of the oldest generation forward and TRUNCATEs its
-- partition, which frees every dead row version in it whatever snapshot
-- any transaction holds; VACUUM cannot.
--
-- Every queued task is kept: the rows of the version-5 table are copied
-- into the current generation (dead ones parked) and the old table
-- dropped, in the migration's one transaction. The copy holds an ACCESS
-- EXCLUSIVE lock on the old table while it runs.

CREATE TABLE {schema}.ring (
    one        boolean     PRIMARY KEY DEFAULT true CHECK (one),
    current    smallint    NOT NULL CHECK (current BETWEEN 0 AND 2),
    rotated_at timestamptz NOT NULL
);
INSERT INTO {schema}.ring (current, rotated_at) VALUES (0, now());

-- The generation new rows go to. STABLE: the statement's snapshot decides,
-- and a rotation that truncates a generation waits for every transaction
-- that wrote to it (its ACCESS EXCLUSIVE lock), so no row is lost to it.
CREATE FUNCTION {schema}.current_gen() RETURNS smallint
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT current FROM {schema}.ring $$;

ALTER TABLE {schema}.tasks RENAME TO tasks_v5;
ALTER INDEX {schema}.tasks_pkey RENAME TO tasks_v5_pkey;
ALTER INDEX {schema}.tasks_ready RENAME TO tasks_v5_ready;
ALTER INDEX {schema}.tasks_scheduled RENAME TO tasks_v5_scheduled;
ALTER INDEX {schema}.tasks_leased RENAME TO tasks_v5_leased;
ALTER INDEX {schema}.tasks_dead RENAME TO tasks_v5_dead;
ALTER INDEX {schema}.tasks_retried RENAME TO tasks_v5_retried;

-- The columns of version 1 (with their defaults, NOT NULLs and checks),
-- and gen. The primary key of a partitioned table must hold the partition
-- key: (id, gen), which a lookup by id alone uses as well. Ids stay unique
-- because the sequence hands each out once; a moved row keeps its id.
CREATE TABLE {schema}.tasks (
    LIKE {schema}.tasks_v5 INCLUDING DEFAULTS INCLUDING CONSTRAINTS,
    gen smallint NOT NULL DEFAULT {schema}.current_gen(),
    PRIMARY KEY (id, gen)
) PARTITION BY LIST (gen);

CREATE TABLE {schema}.tasks_g0 PARTITION OF {schema}.tasks FOR VALUES IN (0);
CREATE TABLE {schema}.tasks_g1 PARTITION OF {schema}.tasks FOR VALUES IN (1);
CREATE TABLE {schema}.tasks_g2 PARTITION OF {schema}.tasks FOR VALUES IN (2);
CREATE TABLE {schema}.tasks_parked PARTITION OF {schema}.tasks FOR VALUES IN (3);

-- The indexes of versions 1, 4 and 5, on every partition.
CREATE INDEX tasks_ready ON {schema}.tasks (queue_id, priority, run_at, id)
    WHERE state = 'ready';
CREATE INDEX tasks_scheduled ON {schema}.tasks (queue_id, run_at, id)
    WHERE state = 'scheduled';
CREATE INDEX tasks_leased ON {schema}.tasks (queue_id, lease_expires_at)
    WHERE state = 'leased';
CREATE INDEX tasks_dead ON {schema}.tasks (queue_id, id)
    WHERE state = 'dead';
CREATE INDEX tasks_retried ON {schema}.tasks (queue_id, attempt DESC, id)
    WHERE attempt > 1;

-- Storage settings are the partitions' (a partitioned table has no
-- storage). The ring's are truncated, not vacuumed, once old; vacuum
-- still keeps a young generation's claim index short when no horizon is
-- held (src/vacuum.rs), and never cuts a table's tail (migration 3).
ALTER TABLE {schema}.tasks_g0 SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 1,
    vacuum_truncate = false);
ALTER TABLE {schema}.tasks_g1 SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 1,
    vacuum_truncate = false);
ALTER TABLE {schema}.tasks_g2 SET (autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 1,
    vacuum_truncate = false);
ALTER TABLE {schema}.tasks_parked SET (vacuum_truncate = false);

INSERT INTO {schema}.tasks
SELECT t.*, CASE WHEN t.state = 'dead' THEN 3 ELSE 0 END::smallint
FROM {schema}.tasks_v5 t;

DROP TABLE {schema}.tasks_v5;
