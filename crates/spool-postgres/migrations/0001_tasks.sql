-- Version 1: queues, tasks, idempotency keys.
--
-- `{schema}` is replaced by the configured schema (a quoted identifier).
-- Every timestamp is truncated to the millisecond when written (docs/spec.md §1).

-- The store's clock: the transaction's start time, to the millisecond.
CREATE FUNCTION {schema}.now_ms() RETURNS timestamptz
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT date_trunc('milliseconds', now()) $$;

-- One row per queue (docs/spec.md §4). Rows are never deleted, so a task's
-- queue_id always names a queue; tasks carry no foreign key because its
-- check would lock the queue row on every insert.
CREATE TABLE {schema}.queues (
    id              integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name            text COLLATE "C" NOT NULL UNIQUE,
    lease_ms        bigint  NOT NULL,
    max_attempts    integer NOT NULL,
    backoff_base_ms bigint  NOT NULL,
    backoff_max_ms  bigint  NOT NULL,
    dedup_window_ms bigint  NOT NULL,
    max_payload     bigint  NOT NULL,
    paused          boolean NOT NULL
);

-- Task ids: unique forever, never reused. CACHE 1 (the default) keeps them
-- increasing across connections in the order enqueues ask for them.
CREATE SEQUENCE {schema}.task_ids AS bigint;

-- Work still to do, and dead tasks. Completed tasks are deleted.
--
-- Stored states:
--   ready      claimable now (run_at has passed)
--   scheduled  run_at was in the future when written; the claim also takes
--              rows whose run_at has since passed, and the sweeper promotes
--              them to ready
--   leased     claimed; lease_* set. Once lease_expires_at passes the task
--              is ready again (or dead) in every view; the sweeper writes
--              that down
--   dead       out of attempts or discarded
CREATE TABLE {schema}.tasks (
    id               bigint      PRIMARY KEY,
    run_at           timestamptz NOT NULL,
    lease_expires_at timestamptz,
    lease_token      bigint,
    lease_ms         bigint,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    queue_id         integer     NOT NULL,
    attempt          integer     NOT NULL,
    max_attempts     integer     NOT NULL,
    priority         smallint    NOT NULL,
    payload_json     boolean     NOT NULL,
    state            text        NOT NULL
        CHECK (state IN ('ready', 'scheduled', 'leased', 'dead')),
    kind             text        NOT NULL,
    key              text COLLATE "C",
    lease_owner      text,
    -- The last failures, oldest first: [{"attempt", "at" (Unix ms), "message"}].
    errors           jsonb       NOT NULL DEFAULT '[]',
    payload          bytea       NOT NULL,
    CHECK ((state = 'leased') = (lease_token IS NOT NULL))
);

-- The claim's index: only ready rows, in claim order. Scheduled, leased and
-- dead rows stay off it, so a claim's cost does not grow with them.
CREATE INDEX tasks_ready ON {schema}.tasks (queue_id, priority, run_at, id)
    WHERE state = 'ready';
-- Due scheduled rows (claim, promotion, a waiting claim's next wake-up).
CREATE INDEX tasks_scheduled ON {schema}.tasks (queue_id, run_at)
    WHERE state = 'scheduled';
-- Lease expiry.
CREATE INDEX tasks_leased ON {schema}.tasks (queue_id, lease_expires_at)
    WHERE state = 'leased';
-- Dead tasks: listing and retrying them.
CREATE INDEX tasks_dead ON {schema}.tasks (queue_id, id)
    WHERE state = 'dead';

-- The queue table churns: every task is inserted, updated and deleted.
-- Vacuum it early so dead index entries do not pile up in front of claims.
ALTER TABLE {schema}.tasks SET (
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_insert_scale_factor = 0.05,
    autovacuum_vacuum_cost_delay = 1
);

-- Idempotency keys (docs/spec.md §3.1): one row per (queue, key), live or retired.
-- expires_at is NULL while the task lives; on ack or cancel it becomes the
-- end of the dedup window. A row is updated in place, never deleted and
-- re-inserted, so concurrent enqueues of one key serialise on it. Expired
-- rows are purged by the sweeper.
CREATE TABLE {schema}.keys (
    queue_id   integer NOT NULL,
    key        text COLLATE "C" NOT NULL,
    task_id    bigint  NOT NULL,
    expires_at timestamptz,
    PRIMARY KEY (queue_id, key)
);
CREATE INDEX keys_expiry ON {schema}.keys (expires_at)
    WHERE expires_at IS NOT NULL;
