#!/usr/bin/env bash
# EXPLAIN (ANALYZE, BUFFERS) of the claim statement at a given table size.
#
#   crates/spool-postgres/scripts/explain_claim.sh ROWS [SCHEMA]
#
# Builds SCHEMA (default spool_explain; dropped first) from migrations/,
# fills it with ROWS tasks in two queues with generate_series (80% ready in
# `emails` over three priorities, 5% ready in `other`, 5% each scheduled,
# leased and dead; 100-byte payloads), VACUUM ANALYZEs, then explains the
# prepared claim of 1,000 from `emails` with the generic plan the store
# uses (and, like the store's connections, jit = off; JIT=on explains with
# the server's default), inside a rolled-back transaction, RETURNING
# trimmed to the ids.
# SKIP_FILL=1 explains an existing SCHEMA again. Uses psql with PG*
# variables (default: postgres@127.0.0.1:5432/test).
set -euo pipefail
cd "$(dirname "$0")/.."
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
    queue_id, attempt, max_attempts, priority, payload_json, state, kind, lease_owner, payload)
SELECT i,
       CASE WHEN i % 20 = 0 THEN now() + interval '1 day' ELSE now() - interval '1 hour' END,
       CASE WHEN i % 20 = 1 THEN now() + interval '1 hour' END,
       CASE WHEN i % 20 = 1 THEN i END,
       now(), now(),
       CASE WHEN i % 20 = 3 THEN 2 ELSE 1 END,
       CASE WHEN i % 20 IN (1, 2) THEN 1 ELSE 0 END, 3, (i % 3)::smallint, false,
       CASE i % 20 WHEN 0 THEN 'scheduled' WHEN 1 THEN 'leased' WHEN 2 THEN 'dead' ELSE 'ready' END,
       'job', CASE WHEN i % 20 = 1 THEN 'w' END,
       decode(repeat('07', 100), 'hex')
FROM generate_series(1, $rows) i;
VACUUM ANALYZE "$schema".tasks;
SQL
} | psql -q -v ON_ERROR_STOP=1

tokens="{$(seq -s, 1 1000)}"
# The claim with its steps put in (as src/sql.rs does), comments dropped.
claim=$(perl -0pe 'BEGIN { local $/; open my $f, "<", "sql/claim_steps.sql" or die; $steps = <$f> }
                   s/\{claim_steps\}/$steps/' sql/claim.sql \
  | render | grep -v '^ *--' | sed -e 's/), --.*$/),/' \
  | sed -e 's/RETURNING p.n, {task}, \$1::text AS queue/RETURNING p.n, t.id/')
psql -q -v ON_ERROR_STOP=1 <<SQL
SET plan_cache_mode = force_generic_plan;
SET jit = ${JIT:-off};
PREPARE claim(text, text, bigint, bigint, bigint[]) AS $claim;
BEGIN;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF)
    EXECUTE claim('emails', 'w', 1000, NULL, '$tokens');
ROLLBACK;
SELECT pg_size_pretty(pg_relation_size('"$schema".tasks')) AS tasks,
       pg_size_pretty(pg_relation_size('"$schema".tasks_ready')) AS tasks_ready;
SQL
