-- Whether task $1 lives: tells lease_lost from not_found after a refused write.
SELECT EXISTS (SELECT 1 FROM {schema}.tasks WHERE id = $1)
