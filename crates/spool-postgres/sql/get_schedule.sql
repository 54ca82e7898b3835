-- Schedule $1, and the store's clock.
SELECT s.*, {schema}.now_ms() AS db_now FROM {schema}.schedules s WHERE s.name = $1
