-- A fragment: the steps of a claim from a queue with groups, for
-- claim_limited.sql in place of claim_steps.sql (README.md, "Groups").
-- claim_limited.sql defines before it `b` (the queue's row: id,
-- group_concurrency, group_cursor, at: the statement's clock) and `q`
-- (allowance: how many tasks the claim may take, may_claim: allowance > 0).
-- It runs under the queue row's lock (lock_limited_queue.sql, which also
-- made the queue's due scheduled tasks ready), so no other claim of the
-- queue runs meanwhile, on any node, and the counts it reads hold.
--
-- The claim order (spool_core::groups): groups in name order ('' for the
-- tasks without a group, first), starting after group_cursor (the group
-- the previous claim served last) and wrapping around; one task per group
-- per turn; within a group, (priority, run_at, id) order. With
-- group_concurrency, a group takes at most that many less its live leases
-- (a lease past its end does not count); tasks without a group are not
-- bound by it.
--
-- A group's live leases are counted on tasks_leased_grouped, from the
-- statement's clock on, stopping at group_concurrency. Said as a range of
-- (grp, lease_expires_at) rather than grp = w.grp: with the group fixed,
-- the planner took tasks_leased's (queue_id, lease_expires_at) order for
-- the same thing and read every live lease of the queue (11,700 entries
-- for one group in a test of 10,000 groups).
--
-- `walk` is a loose index scan of tasks_ready_grouped: each step one probe
-- for the first task of the first group after the last one, in the
-- index's order, which is that group's head: one probe finds the group and
-- the task of its first turn. It starts at the cursor (pos 0, not a turn;
-- or at '' when there is none) and goes up in name order; past the last
-- group it wraps (seg 1) to '', then goes on up to the cursor. `turns`
-- keeps the groups that may take a task, at most the allowance of them,
-- and `rounds` takes their tasks turn by turn: the heads first, then each
-- group's next by one probe of its range. Both are read lazily through
-- LIMITs: a claim of n tasks from n groups or more visits about n groups
-- (plus full ones) and probes each once, however many groups and tasks
-- the queue has.
-- Defines `picked` (gen, ctid, grp, n) and then `claimed`.
walk (grp, seg, pos, gen, ctid, priority, run_at, id) AS (
    SELECT COALESCE(b.group_cursor, '' COLLATE "C"), 0,
           CASE WHEN b.group_cursor IS NULL THEN 1 ELSE 0 END,
           NULL::smallint, NULL::tid, NULL::smallint, NULL::timestamptz, NULL::bigint
    FROM b WHERE (SELECT may_claim FROM q)
    UNION ALL
    SELECT n.grp, n.seg, w.pos + 1, n.gen, n.ctid, n.priority, n.run_at, n.id
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT x.grp, w.seg, x.gen, x.ctid, x.priority, x.run_at, x.id FROM (
            SELECT t.grp, t.gen, t.ctid, t.priority, t.run_at, t.id FROM {schema}.tasks t
            WHERE t.queue_id = (SELECT id FROM b) AND t.grp IS NOT NULL
              AND t.state = 'ready' AND t.grp > w.grp
            ORDER BY t.grp, t.priority, t.run_at, t.id
            LIMIT 1
        ) x
        WHERE w.seg = 0 OR x.grp <= (SELECT group_cursor FROM b)
        UNION ALL
        SELECT '' COLLATE "C", 1,
               NULL::smallint, NULL::tid, NULL::smallint, NULL::timestamptz, NULL::bigint
        WHERE w.seg = 0 AND (SELECT group_cursor FROM b) IS NOT NULL
        LIMIT 1
    ) n
), plain AS (
    -- The head of the tasks without a group, the '' group's first task (a
    -- turn of '' counts only when there is one). Ordered as tasks_ready
    -- is, like every scan here, so that the plan reads each partition's
    -- index whatever its statistics say (README.md, "Plans that do not
    -- trust statistics").
    SELECT t.gen, t.ctid, t.priority, t.run_at, t.id FROM {schema}.tasks t
    WHERE t.queue_id = (SELECT id FROM b) AND t.state = 'ready' AND t.grp IS NULL
    ORDER BY t.priority, t.run_at, t.id
    LIMIT 1
), turns AS (
    -- Each turn with its group's head: the walk's own row for a named
    -- group, `plain` for ''.
    SELECT w.pos, w.grp, r.room, h.gen, h.ctid, h.priority, h.run_at, h.id
    FROM walk w
    CROSS JOIN LATERAL (
        SELECT LEAST(
               CASE WHEN w.grp = '' OR b.group_concurrency IS NULL THEN q.allowance
               ELSE LEAST(q.allowance, b.group_concurrency - (
                   SELECT count(*) FROM (
                       SELECT 1 FROM {schema}.tasks l
                       WHERE l.queue_id = b.id AND l.grp IS NOT NULL AND l.state = 'leased'
                         AND (l.grp, l.lease_expires_at) > (w.grp, b.at) AND l.grp <= w.grp
                       ORDER BY l.grp, l.lease_expires_at
                       LIMIT b.group_concurrency
                   ) live))
               END,
               CASE WHEN w.grp = '' OR b.group_rate_limit IS NULL THEN q.allowance
               ELSE floor(COALESCE(
                   (SELECT {group_tokens:gb} FROM {schema}.group_buckets gb
                    WHERE gb.queue_id = b.id AND gb.grp = w.grp),
                   b.group_rate_burst) + 1e-9)::bigint
               END) AS room
        FROM b, q
        -- Not pulled up into the outer query, where the planner would
        -- copy the count into the filter below and run it twice.
        OFFSET 0
    ) r
    CROSS JOIN LATERAL (
        SELECT w.gen, w.ctid, w.priority, w.run_at, w.id WHERE w.grp <> ''
        UNION ALL
        SELECT p.gen, p.ctid, p.priority, p.run_at, p.id FROM plain p WHERE w.grp = ''
    ) h
    WHERE w.pos > 0 AND r.room > 0
    LIMIT (SELECT allowance FROM q)
), rounds (pos, grp, room, r, gen, ctid, priority, run_at, id) AS (
    -- Turn 1 is each group's head, found by the walk; each later turn
    -- probes the group's range for the next task.
    SELECT pos, grp, room, 1, gen, ctid, priority, run_at, id
    FROM turns
    UNION ALL
    SELECT x.pos, x.grp, x.room, x.r + 1, n.gen, n.ctid, n.priority, n.run_at, n.id
    FROM rounds x
    CROSS JOIN LATERAL (
        (SELECT t.gen, t.ctid, t.priority, t.run_at, t.id FROM {schema}.tasks t
         WHERE x.grp <> '' AND t.queue_id = (SELECT id FROM b) AND t.grp = x.grp
           AND t.grp IS NOT NULL AND t.state = 'ready'
           AND (t.priority, t.run_at, t.id) > (x.priority, x.run_at, x.id)
         ORDER BY t.priority, t.run_at, t.id
         LIMIT 1)
        UNION ALL
        (SELECT t.gen, t.ctid, t.priority, t.run_at, t.id FROM {schema}.tasks t
         WHERE x.grp = '' AND t.queue_id = (SELECT id FROM b) AND t.grp IS NULL
           AND t.state = 'ready'
           AND (t.priority, t.run_at, t.id) > (x.priority, x.run_at, x.id)
         ORDER BY t.priority, t.run_at, t.id
         LIMIT 1)
    ) n
    WHERE x.r < x.room
), picked AS (
    -- A recursive query yields each turn's rows before the next turn's,
    -- in the order of the turn before: the first rows are the claim's.
    SELECT gen, ctid, grp, row_number() OVER (ORDER BY r, pos) AS n
    FROM (SELECT * FROM rounds LIMIT (SELECT allowance FROM q)) c
), {claim_update}
