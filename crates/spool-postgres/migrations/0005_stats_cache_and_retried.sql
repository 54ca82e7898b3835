-- Version 5: stats counted at most once per interval for every node, and
-- the attempts-descending list read from an index.
--
-- stats_cache holds the latest count of tasks per queue, kind and state
-- (sql/stats_refresh.sql), with when it was taken. A store answers stats
-- from it while it is younger than PgConfig::stats_max_age, so the admin
-- page, /metrics scrapes and every node's monitor share one scan of the
-- task table per interval instead of one each.
CREATE TABLE {schema}.stats_cache (
    one         boolean PRIMARY KEY DEFAULT true CHECK (one),
    computed_at timestamptz NOT NULL,
    groups      jsonb       NOT NULL
);

-- Tasks past their second attempt, most attempts first: what the list in
-- attempts order shows first. Tasks on their first or second attempt (the
-- hot path: every claim writes attempt 1) stay off it and are listed in id
-- order after these (sql/list_by_attempts.sql). Building it blocks writes
-- to the task table while it runs (a scan of the table).
CREATE INDEX tasks_retried ON {schema}.tasks (queue_id, attempt DESC, id)
    WHERE attempt > 1;
