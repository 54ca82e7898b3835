-- Every dead task of queue $1 becomes ready with attempt 0; answers how many.
WITH revived AS (
    UPDATE {schema}.tasks SET
        state = 'ready',
        attempt = 0,
        run_at = {schema}.now_ms(),
        updated_at = {schema}.now_ms()
    WHERE queue_id = $1 AND state = 'dead'
    RETURNING 1
)
SELECT count(*) FROM revived
