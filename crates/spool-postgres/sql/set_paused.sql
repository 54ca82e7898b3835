-- Pauses ($2) or resumes queue $1; answers a row if the queue exists.
UPDATE {schema}.queues SET paused = $2 WHERE name = $1 RETURNING id
