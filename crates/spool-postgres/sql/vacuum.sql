-- Removes the dead rows of the task table and their index entries, and
-- unlinks emptied index pages (src/vacuum.rs says why the store does this
-- itself). INDEX_CLEANUP ON: never skip the indexes, which is the point.
-- TRUNCATE false: never lock the table to cut its empty tail (the table's
-- setting says so too, migration 3; said here as well so that this never
-- depends on it).
VACUUM (INDEX_CLEANUP ON, TRUNCATE false) {schema}.tasks
