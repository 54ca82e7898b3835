-- Every schedule, by name.
SELECT * FROM {schema}.schedules ORDER BY name
