-- The store's clock, to the millisecond.
SELECT date_trunc('milliseconds', clock_timestamp())
