-- How many tasks generation {gen} holds, counting no further than $1.
SELECT count(*) FROM (SELECT 1 FROM {schema}.tasks_g{gen} LIMIT $1) s
