-- The tick guard: records tick $2 as schedule $1's latest fire, unless it
-- or a later tick was fired already. Concurrent firers of one tick queue on
-- the row lock; the first to commit wins and the others match nothing.
-- Runs in the transaction that enqueues the tick's task.
UPDATE {schema}.schedules
SET last_fire_at = $2
WHERE name = $1 AND (last_fire_at IS NULL OR last_fire_at < $2)
RETURNING name
