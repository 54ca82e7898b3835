-- Acks (deletes) every task of $1 whose current, unexpired lease token is
-- the matching element of $2, retires their idempotency keys for the
-- queue's dedup window, and tells what became of each item, in input order:
-- 'done', 'lease_lost' (the task lives under another or no lease) or
-- 'not_found'. An id given twice succeeds for each copy with the right
-- token. `freed` names the queue of an acked task when that queue has a
-- max_leased, or a group_concurrency and the task a group: a slot freed
-- there wakes claims waiting for one.
--
-- Each item looks its row up by id alone, so that only the primary key
-- can serve the lookup (LIMIT 1 keeps it from being flattened into a join
-- the planner could turn around), and the delete reaches each row by its
-- partition and ctid, joined one by one with what the lookup found (a
-- TID scan of the row's own partition, the others pruned as the join
-- runs): no plan depends on the table's statistics (README.md). Not
-- `ctid = ANY(array)`: the planner costs a TID scan of an array of
-- unknown length above a sequential scan of a partition under ~25 pages,
-- and a partition is that small when a connection plans the statement
-- after a turn of the ring emptied it; the plan then read the current
-- generation whole on every ack as it grew. A row
-- changed by another transaction since the lookup (the holder's own
-- heartbeat, say) has another ctid and is not deleted: that item answers
-- 'lease_lost', and the store runs such items again in a statement of
-- their own (src/ops/lease.rs), which sees the change.
--
-- A task that pending tasks wait for (`has_dependents`, migration 11) is
-- left alone and answers 'dependents': ending it must resolve them in the
-- same transaction, which the store does in one of its own
-- (src/deps/endings.rs). For every other task that costs a test of a
-- column of the row the lookup already read.
--
-- Rendered twice over (src/sql.rs): `{tasks}` is the task table
-- (`ack_many`) or one of its partitions (`ack_in`). Every plan node that
-- reads the table is one per partition, and setting them up is most of
-- what an ack costs: a batch whose lease tokens all name one partition
-- (sql/claim_update.sql) is acked in that partition alone, for up to an
-- eighth less CPU (docs/BENCHMARKS.md). Read so, an item answers 'done' or
-- what the partition holds of it; the store asks the whole table about
-- every item not done (src/ops/lease.rs): a turn of the ring may have
-- moved its task to another partition.
WITH input AS (
    SELECT * FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS a(id, token, ord)
), held AS MATERIALIZED (
    SELECT m.gen, m.ctid
    FROM input a
    CROSS JOIN LATERAL (
        SELECT t.gen, t.ctid, t.state, t.lease_token, t.lease_expires_at, t.has_dependents
        FROM {tasks} t WHERE t.id = a.id LIMIT 1
    ) m
    WHERE m.lease_token = a.token AND m.state = 'leased' AND m.lease_expires_at > now()
      AND m.has_dependents IS NULL
), gone AS (
    DELETE FROM {tasks} t
    USING held h
    WHERE t.gen = h.gen AND t.ctid = h.ctid
    RETURNING t.id, t.lease_token, t.queue_id, t.key, t.grp
), retired AS (
    UPDATE {schema}.keys k
    SET expires_at = {schema}.now_ms() + q.dedup_window_ms * interval '1 millisecond'
    FROM gone g
    JOIN {schema}.queues q ON q.id = g.queue_id
    WHERE g.key IS NOT NULL
      AND k.queue_id = g.queue_id AND k.key = g.key AND k.task_id = g.id
)
SELECT CASE
           WHEN g.id IS NOT NULL THEN 'done'
           WHEN EXISTS (SELECT 1 FROM {tasks} t WHERE t.id = a.id AND t.has_dependents)
               THEN 'dependents'
           WHEN EXISTS (SELECT 1 FROM {tasks} t WHERE t.id = a.id) THEN 'lease_lost'
           ELSE 'not_found'
       END AS outcome,
       fq.name AS freed
FROM input a
LEFT JOIN (SELECT DISTINCT id, lease_token, queue_id, grp FROM gone) g
    ON g.id = a.id AND g.lease_token = a.token
LEFT JOIN {schema}.queues fq ON fq.id = g.queue_id
    AND (fq.max_leased IS NOT NULL OR (fq.group_concurrency IS NOT NULL AND g.grp IS NOT NULL))
ORDER BY a.ord
