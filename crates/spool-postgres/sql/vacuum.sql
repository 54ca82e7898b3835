-- Removes the dead rows of one partition of the task table ({table}) and
-- their index entries, and unlinks emptied index pages (src/vacuum.rs says
-- why the store does this itself). INDEX_CLEANUP ON: never skip the
-- indexes, which is the point. TRUNCATE false: never lock the table to cut
-- its empty tail (the partitions' setting says so too, migrations 3 and 6;
-- said here as well so that this never depends on it).
VACUUM (INDEX_CLEANUP ON, TRUNCATE false) {schema}.{table}
