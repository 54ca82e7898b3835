-- Moves up to $2 tasks of generation {gen}, those no other transaction
-- holds, out of it (src/rotate.rs): dead tasks, pending ones (waiting
-- for others, for as long as those take) and tasks scheduled more than a
-- minute ahead to the parked partition (3), the rest to generation $1. Moving is an update of the partition key: PostgreSQL deletes the row
-- here and inserts it there, with the same id and columns.
--
-- Answers how many moved, and the names of the queues with ready tasks
-- among them: claims passed over those rows while they were locked here,
-- so their claim floors must fall.
WITH batch AS (
    SELECT ctid FROM {schema}.tasks_g{gen} LIMIT $2 FOR UPDATE SKIP LOCKED
), moved AS (
    UPDATE {schema}.tasks t
    SET gen = CASE WHEN t.state IN ('dead', 'pending')
                     OR (t.state = 'scheduled' AND t.run_at > now() + interval '1 minute')
                   THEN 3 ELSE $1::smallint END
    WHERE t.gen = {gen} AND t.ctid = ANY(ARRAY(SELECT ctid FROM batch))
    RETURNING t.queue_id, t.state
)
SELECT (SELECT count(*) FROM moved) AS moved,
       ARRAY(SELECT q.name FROM {schema}.queues q
             WHERE q.id IN (SELECT queue_id FROM moved WHERE state = 'ready')) AS queues
