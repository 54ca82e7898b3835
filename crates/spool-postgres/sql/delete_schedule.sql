-- Deletes schedule $1; answers a row if it existed.
DELETE FROM {schema}.schedules WHERE name = $1 RETURNING name
