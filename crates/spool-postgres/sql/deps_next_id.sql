-- The lowest task id the store has not handed out yet (docs/spec.md §3.2:
-- an `after` naming an id at or past it names no task, ever). Reading the
-- sequence's row takes no id and writes nothing.
SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END AS next_id
FROM {schema}.task_ids
