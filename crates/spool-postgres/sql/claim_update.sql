-- A fragment: the last step of a claim, after claim_steps.sql or
-- claim_group_steps.sql, which define `picked` (gen, ctid, n: the tasks to
-- lease and their place in claim order) and, before them, `q` (lease_ms:
-- the queue's lease). Leases each picked task to worker $2 with token
-- ($5)[n]; the lease is the task's own lease_ms, else the asked one ($4),
-- else the queue's (spool_core::transition::lease_for).
--
-- The update finds the rows by their partition (gen) and ctid, not by
-- joining on id: no plan of it depends on the table's statistics
-- (README.md, "Plans that do not trust statistics"). The ready scans
-- locked the rows, so their ctids hold until the statement ends. The
-- grouped steps cannot lock (a recursive query); they run under the queue
-- row's lock, which every claim of grouped tasks takes, and a row another
-- writer changed meanwhile has another ctid, so the update passes over it.
--
-- A lease token's two low bits name the partition the task was leased in
-- (its gen, the index of src/sql.rs's PARTITIONS): the rest is the random
-- token's, 62 bits of it. An ack of a batch whose tokens all name one
-- partition reads that partition alone (sql/ack_many.sql).
-- Defines `claimed`: the claimed tasks with n, their place in claim order.
claimed AS (
    UPDATE {schema}.tasks t SET
        state = 'leased',
        attempt = t.attempt + 1,
        lease_owner = $2,
        lease_token = (($5::bigint[])[p.n] & -4) | p.gen,
        lease_expires_at = {schema}.now_ms()
            + COALESCE(t.lease_ms, $4, (SELECT lease_ms FROM q)) * interval '1 millisecond',
        updated_at = {schema}.now_ms()
    FROM picked p
    WHERE t.gen = p.gen AND t.ctid = p.ctid
    RETURNING p.n, {task}, $1::text AS queue
)
