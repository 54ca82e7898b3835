#!/usr/bin/env bash
# The PostgreSQL store under a held xmin horizon, beside the hand-written
# SKIP LOCKED queue (docs/spec.md §11) in one run, one system at a time on
# a schema of its own, on the server at DATABASE_URL (default: the local
# development server):
#
#   1. steady 8 + 8 (`horizon`): baseline, then a writing transaction
#      (`BEGIN; SELECT txid_current();`, then idle) held for HOLD seconds
#      (600), then AFTER (60) seconds;
#   2. the same with four REPEATABLE READ readers (10-s transactions,
#      staggered, each scanning the system's tables every 200 ms) for
#      READERS_HOLD seconds (180);
#   3. the drain of DRAIN tasks (1,000,000; 16 consumers, claims of 100)
#      with nothing held, under the writing transaction, and under the four
#      readers: each held from before the fill to the end of the drain,
#      the drain cut at DRAIN_LIMIT seconds (300).
#
#   bash bench/held_horizon.sh        # about 50 minutes on 2 cores
#
# Prints every sample and a summary table per run (throughput, pickup or
# claim p50/p99, table and index sizes, dead tuples, time back after the
# release); docs/BENCHMARKS.md, "A held horizon, side by side", has the
# figures of a run and what they say.
set -euo pipefail
cd "$(dirname "$0")/.."

HOLD=${HOLD:-600}
AFTER=${AFTER:-60}
READERS_HOLD=${READERS_HOLD:-180}
DRAIN=${DRAIN:-1000000}
DRAIN_LIMIT=${DRAIN_LIMIT:-300}

pg_isready -q -h 127.0.0.1 -p 5432 ||
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start

echo "== build"
CARGO_PROFILE_RELEASE_DEBUG=0 cargo build --release -q -p spool-bench --bin horizon --bin drain
bin=target/release
git log -1 --format='commit %h %s'
date -u +'%F %T UTC'; uptime

echo "== steady 8 + 8, writing transaction held ${HOLD} s"
"$bin/horizon" --holder writer --before 30 --hold "$HOLD" --after "$AFTER" --every 10
echo "== steady 8 + 8, four readers for ${READERS_HOLD} s"
"$bin/horizon" --holder readers --before 30 --hold "$READERS_HOLD" --after "$AFTER" --every 10
for holder in none writer readers; do
  echo "== drain of ${DRAIN}, 16 x 100, held by: ${holder}"
  "$bin/drain" "$DRAIN" 16 100 "$holder" "$DRAIN_LIMIT"
done
date -u +'%F %T UTC'; uptime
