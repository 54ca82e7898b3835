-- Version 4: due scheduled tasks are found in claim order from the index.
--
-- A claim also takes scheduled tasks whose run_at has passed but which the
-- sweeper has not promoted yet, ordered by (run_at, id). On
-- (queue_id, run_at) alone that order needed a sort of every due task,
-- so a claim read all of them: a million tasks falling due at once made
-- each claim read a million rows. With id in the index, the scan stops
-- after the batch.
--
-- Building the index blocks writes to the task table while it runs (a scan
-- of the scheduled rows); the old one is dropped in the same transaction.
CREATE INDEX tasks_scheduled_order ON {schema}.tasks (queue_id, run_at, id)
    WHERE state = 'scheduled';
DROP INDEX {schema}.tasks_scheduled;
ALTER INDEX {schema}.tasks_scheduled_order RENAME TO tasks_scheduled;
