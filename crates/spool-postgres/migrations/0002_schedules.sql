-- Version 2: periodic schedules (docs/spec.md §5).
--
-- One row per schedule. Its cadence is either every_ms or cron (with an
-- optional IANA time zone). last_fire_at is the latest tick any process
-- fired; the conditional UPDATE that advances it, in the same transaction
-- as the tick's enqueue, is what makes a tick fire once.
CREATE TABLE {schema}.schedules (
    name         text COLLATE "C" PRIMARY KEY,
    queue        text        NOT NULL,
    kind         text,
    payload_json boolean     NOT NULL,
    payload      bytea       NOT NULL,
    every_ms     bigint,
    cron         text,
    tz           text,
    deadline_ms  bigint,
    last_fire_at timestamptz,
    created_at   timestamptz NOT NULL,
    CHECK ((every_ms IS NULL) <> (cron IS NULL))
);
