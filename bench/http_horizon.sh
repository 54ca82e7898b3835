#!/usr/bin/env bash
# The PostgreSQL store through `spool serve --postgres`, over HTTP, with and
# without a transaction holding the xmin horizon, as a user would run it:
# 8 producers of one task per call + 8 consumers claiming up to 100.
# Three phases against one server and one schema:
#
#   free     no other transaction;
#   held     a session holds BEGIN; SELECT txid_current(); for the whole
#            phase (started 5 s before it, ended after it); with
#            HOLDER=readers, four REPEATABLE READ sessions instead, each in
#            10-s transactions (staggered) counting the tasks by state
#            every 200 ms;
#   after    the same load again, 10 s after the holder ended.
#
# Each phase prints `spool bench`'s cycle line (tasks/s, pickup p50/p99) and
# then the task tables' size (heap + indexes, every partition) and their
# dead tuples at its end, and the median and largest of the sizes sampled
# every 10 s during it. Needs a release build (`cargo build --release -p spool-cli`)
# and PostgreSQL at DATABASE_URL. Usage: bash bench/http_horizon.sh [SECONDS [HELD]]:
# SECONDS for the free and after phases (40), HELD for the held one (SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_EACH=${1:-40}
HELD=${2:-$SECONDS_EACH}
HOLDER=${HOLDER:-writer}
URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
SCHEMA=spool_http_horizon
PORT=${PORT:-7811}
SPOOL=target/release/spool
[ -x "$SPOOL" ] || { echo "build first: cargo build --release -p spool-cli" >&2; exit 1; }
psql -qXAt "$URL" -c "SELECT 1" >/dev/null || { echo "PostgreSQL unreachable at $URL" >&2; exit 1; }

psql -qX "$URL" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $SCHEMA CASCADE"
"$SPOOL" serve --postgres "$URL" --pg-schema "$SCHEMA" --listen "127.0.0.1:$PORT" --resp off \
    >/tmp/spool-http-horizon.log 2>&1 &
SERVER=$!
HOLDERS=()
READ_SQL=
stop_holders() {
    for pid in "${HOLDERS[@]}"; do
        pkill -P "$pid" 2>/dev/null || true
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${HOLDERS[@]}"; do
        wait "$pid" 2>/dev/null || true
    done
    HOLDERS=()
}
cleanup() {
    stop_holders
    [ -n "$READ_SQL" ] && rm -f "$READ_SQL"
    kill "$SERVER" 2>/dev/null || true
    wait 2>/dev/null || true
    psql -qX "$URL" -c "SET client_min_messages = warning; DROP SCHEMA IF EXISTS $SCHEMA CASCADE" >/dev/null
}
trap cleanup EXIT
for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$PORT/healthz" >/dev/null && break
    sleep 0.1
done

# The task partitions, as their statistics name them (the parent has none).
TASK_TABLES="pg_stat_user_tables s WHERE s.schemaname = '$SCHEMA' AND s.relname LIKE 'tasks\_%'"

# Size, dead and live tuples of the task tables, now.
tables() {
    psql -qXAt "$URL" -c "
        SELECT round(sum(pg_total_relation_size(s.relid)) / 1048576.0, 2) || ' MB, ' ||
               sum(s.n_dead_tup) || ' dead tuples, ' || sum(s.n_live_tup) || ' live'
        FROM $TASK_TABLES"
}

# The task tables' size in MB, every 10 s, into $1, until killed.
sample_sizes() {
    while true; do
        psql -qXAt "$URL" -c "
            SELECT round(sum(pg_total_relation_size(s.relid)) / 1048576.0, 2) FROM $TASK_TABLES" >>"$1"
        sleep 10
    done
}

phase() {
    echo "== $1, $2 s"
    local samples
    samples=$(mktemp)
    sample_sizes "$samples" &
    local sampler=$!
    "$SPOOL" bench --url "http://127.0.0.1:$PORT" --workload cycle \
        --producers 8 --batch 1 --consumers 8 --claim-batch 100 \
        --tasks 100000000 --max-seconds "$2" 2>&1 | grep -E "cycle|tasks/s" || true
    kill "$sampler" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
    echo "   task tables: $(tables); every 10 s: median $(sort -n "$samples" | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}') MB, largest $(sort -n "$samples" | tail -1) MB"
    rm -f "$samples"
}

phase free "$SECONDS_EACH"
case "$HOLDER" in
writer)
    psql -qX "$URL" -c "BEGIN; SELECT txid_current(); SELECT pg_sleep($((HELD + 30)));" >/dev/null 2>&1 &
    HOLDERS+=($!)
    ;;
readers)
    READ_SQL=$(mktemp)
    {
        echo "BEGIN ISOLATION LEVEL REPEATABLE READ;"
        for _ in $(seq 50); do
            echo "SELECT state, count(*) FROM $SCHEMA.tasks GROUP BY state;"
            echo "SELECT pg_sleep(0.2);"
        done
        echo "COMMIT;"
    } >"$READ_SQL"
    for r in 0 1 2 3; do
        (
            sleep "$(awk "BEGIN { print $r * 2.5 }")"
            while true; do psql -qX "$URL" -f "$READ_SQL" >/dev/null 2>&1 || sleep 1; done
        ) &
        HOLDERS+=($!)
    done
    ;;
*) echo "HOLDER is writer or readers, not $HOLDER" >&2; exit 1 ;;
esac
sleep 5
phase "held ($HOLDER)" "$HELD"
stop_holders
echo "   holder ended; tables: $(tables)"
sleep 10
echo "   10 s later: $(tables)"
phase after "$SECONDS_EACH"
