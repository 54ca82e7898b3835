-- Deletes the results task $1 held from its parents (migration 13), in
-- the transaction that deleted the task, after it: the deleting statement
-- holds the row's lock, so no ending adds one after this statement looks
-- (an ending locks a task before it writes a result to it), and this
-- statement, taking its snapshot after the lock was won, sees every one
-- added before.
DELETE FROM {schema}.task_results WHERE child = $1
