#!/usr/bin/env bash
# EXPLAIN (ANALYZE, BUFFERS) of the claim statement at a given table size.
#
#   bench/spool-bench/scripts/explain_claim.sh ROWS [SCHEMA]
#
# Builds SCHEMA (default spool_explain; dropped first) from the PostgreSQL
# store's migrations/ (crates/spool-postgres, where it runs from),
# fills it with ROWS tasks in two queues with generate_series (80% ready in
# `emails` over three priorities, 5% ready in `other`, 5% each scheduled,
# leased and dead; 100-byte payloads; run_at a millisecond apart, as
# enqueue times are), VACUUM ANALYZEs, then explains the
# prepared claim of 1,000 from `emails` with the generic plan the store
# uses (and, like the store's connections, jit = off and enable_sort = off;
# JIT=on explains with the server's default JIT), inside a rolled-back
# transaction, RETURNING trimmed to the ids.
# The rows are spread over the ring's three generations (dead ones parked),
# as a backlog written over several rotations is.
# SKIP_FILL=1 explains an existing SCHEMA again. HELD=N first opens a
# transaction that takes an XID and sits idle (the held xmin horizon), then
# claims N tasks of `emails` 1,000 at a time and deletes them (as acks do),
# so that their dead versions and index entries stay, and explains the
# claim twice: from the front of claim order (as a claim does every 5 s)
# and from a claim floor (the (priority, run_at) of the next ready task, as
# the store's claims do otherwise; src/floor.rs there). Uses psql with PG*
# variables (default: postgres@127.0.0.1:5432/test).
set -euo pipefail
cd "$(dirname "$0")/../../../crates/spool-postgres"
rows=${1:?ROWS}
schema=${2:-spool_explain}
export PGHOST=${PGHOST:-127.0.0.1} PGUSER=${PGUSER:-postgres} PGDATABASE=${PGDATABASE:-test}
render() { sed -e "s/{schema}/\"$schema\"/g" "$@"; }

[ "${SKIP_FILL:-}" = 1 ] || {
  echo "DROP SCHEMA IF EXISTS \"$schema\" CASCADE; CREATE SCHEMA \"$schema\";"
  render migrations/*.sql
  cat <<SQL
INSERT INTO "$schema".queues (name, lease_ms, max_attempts, backoff_base_ms, backoff_max_ms,
    dedup_window_ms, max_payload, paused)
VALUES ('emails', 30000, 3, 1000, 3600000, 0, 1048576, false),
       ('other', 30000, 3, 1000, 3600000, 0, 1048576, false);
INSERT INTO "$schema".tasks (id, run_at, lease_expires_at, lease_token, created_at, updated_at,
    queue_id, attempt, max_attempts, priority, payload_json, state, kind, lease_owner, payload,
    gen)
SELECT i,
       CASE WHEN i % 20 = 0 THEN now() + interval '1 day'
            ELSE now() - interval '1 day' + i * interval '1 millisecond' END,
       CASE WHEN i % 20 = 1 THEN now() + interval '1 hour' END,
       CASE WHEN i % 20 = 1 THEN i END,
       now(), now(),
       CASE WHEN i % 20 = 3 THEN 2 ELSE 1 END,
       CASE WHEN i % 20 IN (1, 2) THEN 1 ELSE 0 END, 3, (i % 3)::smallint, false,
       CASE i % 20 WHEN 0 THEN 'scheduled' WHEN 1 THEN 'leased' WHEN 2 THEN 'dead' ELSE 'ready' END,
       'job', CASE WHEN i % 20 = 1 THEN 'w' END,
       decode(repeat('07', 100), 'hex'),
       CASE WHEN i % 20 = 2 THEN 3 ELSE (i * 3 / ($rows + 1)) END
FROM generate_series(1, $rows) i;
VACUUM ANALYZE "$schema".tasks;
ANALYZE "$schema".tasks_g0, "$schema".tasks_g1, "$schema".tasks_g2, "$schema".tasks_parked;
SQL
} | psql -q -v ON_ERROR_STOP=1

tokens="{$(seq -s, 1 1000)}"
# The claim with its steps put in (as src/sql.rs does), comments dropped.
claim=$(perl -0pe 'BEGIN { local $/;
                           open my $f, "<", "sql/claim_steps.sql" or die; $steps = <$f>;
                           open my $u, "<", "sql/claim_update.sql" or die; $update = <$u> }
                   s/\{claim_steps\}/$steps/; s/\{claim_update\}/$update/; s/\{limit\}/\$3/g' sql/claim.sql \
  | render | grep -v '^ *--' | sed -e 's/), --.*$/),/' \
  | sed -e 's/RETURNING p.n, {task}, \$1::text AS queue/RETURNING p.n, t.id/')
settings="SET plan_cache_mode = force_generic_plan; SET jit = ${JIT:-off}; SET enable_sort = off;
PREPARE claim(text, text, bigint, bigint, bigint[], smallint, timestamptz) AS $claim;"
front="-32768, '0001-01-01 00:00:00+00'"
explain() {
  echo "BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE claim('emails', 'w', 1000, NULL, '$tokens', $1);
ROLLBACK;"
}

if [ -n "${HELD:-}" ]; then
  PGAPPNAME=spool_explain_hold \
    psql -q -c "BEGIN; SELECT txid_current(); SELECT pg_sleep(3600);" >/dev/null 2>&1 &
  # The backend sleeps on when its client goes: end it by name.
  trap 'psql -qAt -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                     WHERE application_name = '"'"'spool_explain_hold'"'"'" >/dev/null' EXIT
  sleep 1
  {
    echo "$settings"
    for _ in $(seq 1 $((HELD / 1000))); do
      echo "EXECUTE claim('emails', 'churn', 1000, NULL, '$tokens', $front);"
      echo "DELETE FROM \"$schema\".tasks WHERE queue_id = 1 AND state = 'leased'
              AND lease_expires_at < now() + interval '10 minutes';"
    done
  } | psql -q -v ON_ERROR_STOP=1 >/dev/null
  floor=$(psql -At -c "SELECT priority || ', ''' || run_at || '''' FROM \"$schema\".tasks
                        WHERE queue_id = 1 AND state = 'ready'
                        ORDER BY priority, run_at, id LIMIT 1")
  echo "-- from the front, $HELD tasks claimed and acked under a held horizon"
  { echo "$settings"; explain "$front"; } | psql -q -v ON_ERROR_STOP=1
  echo "-- from the claim floor ($floor)"
  { echo "$settings"; explain "$floor"; } | psql -q -v ON_ERROR_STOP=1
else
  { echo "$settings"; explain "$front"; } | psql -q -v ON_ERROR_STOP=1
fi

psql -q -v ON_ERROR_STOP=1 <<SQL
SELECT pg_size_pretty(sum(pg_total_relation_size(c.oid))) AS "tasks + indexes",
       pg_size_pretty(sum(pg_relation_size(c.oid))) AS tasks,
       pg_size_pretty((SELECT sum(pg_relation_size(ih.inhrelid))
                       FROM pg_inherits ih
                       WHERE ih.inhparent = '"$schema".tasks_ready'::regclass)) AS tasks_ready
FROM pg_inherits h
JOIN pg_class c ON c.oid = h.inhrelid
WHERE h.inhparent = '"$schema".tasks'::regclass;
SQL
