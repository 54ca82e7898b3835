-- Empties generation {gen}, whose tasks have all been moved out under its
-- ACCESS EXCLUSIVE lock, and makes it the current one. TRUNCATE gives the
-- partition and its indexes new, empty files at commit: every dead row
-- version in them goes, whatever snapshot any transaction holds.
TRUNCATE {schema}.tasks_g{gen};
UPDATE {schema}.ring SET current = {gen}, rotated_at = now()
