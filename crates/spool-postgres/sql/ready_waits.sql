-- A fragment: whether queue {queue_id} holds a task a claim could take
-- were it not for the queue's limits: a ready one, with a group or
-- without, or a scheduled one whose run_at has passed (shown ready,
-- docs/spec.md §7). claim_limited.sql and peek_bucket.sql ask it only
-- when the limits let the claim take nothing; the answer is what makes
-- that claim a throttled one (spool_claims_throttled_total). Each probe
-- reads the head of one partial index (tasks_ready, tasks_ready_grouped,
-- tasks_scheduled), ordered as the index is (README.md, "Plans that do
-- not trust statistics"), and the first that finds a row ends the look.
((SELECT t.id FROM {schema}.tasks t
  WHERE t.queue_id = {queue_id} AND t.state = 'ready' AND t.grp IS NULL
  ORDER BY t.priority, t.run_at, t.id
  LIMIT 1) IS NOT NULL
 OR (SELECT t.id FROM {schema}.tasks t
     WHERE t.queue_id = {queue_id} AND t.state = 'ready' AND t.grp IS NOT NULL
     ORDER BY t.grp, t.priority, t.run_at, t.id
     LIMIT 1) IS NOT NULL
 OR (SELECT t.id FROM {schema}.tasks t
     WHERE t.queue_id = {queue_id} AND t.state = 'scheduled' AND t.run_at <= now()
     ORDER BY t.run_at, t.id
     LIMIT 1) IS NOT NULL)
