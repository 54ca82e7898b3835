#!/usr/bin/env bash
# Spool over RESP against Redis 7 with `appendonly yes`, `appendfsync
# always`, in one run, the two sides alternating (the machine is shared):
#
#   1. single enqueues, redis-benchmark for both, 64 clients, 100-byte
#      argument: ENQUEUE against LPUSH, without pipelining and with -P 16;
#   2. bench/compare's drain (claim batches + ACKMANY through
#      spool_client::RespStore, against Redis's BLMOVE + LREM reliable
#      queue, batched like Spool's) and its steady state at a low offered
#      rate (idle pickup);
#   3. the same drain against the reliable queue as it is usually written:
#      one BLMOVE and one LREM per task (`--claim-batch 1` for Redis only);
#
#   bash bench/resp.sh            # ROUNDS=2 N=200000 NP=1000000 FILL=200000 by default
#
# N is the number of single enqueues per run without pipelining, NP with
# -P 16: at 600,000/s a run of 100,000 lasts a sixth of a second, mostly
# connection start-up, so the pipelined runs are longer. Redis runs with
# its automatic AOF rewrite off (auto-aof-rewrite-percentage 0), so that
# no background rewrite of its growing log lands inside a measured run:
# that favours Redis, never Spool.
#
# Redis runs on a port of its own (16390) with its own directory, started
# and stopped here; so does `spool serve` (HTTP 17800, RESP 17801). Prints
# every figure and the Spool/Redis ratio of each pair.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-2}
N=${N:-200000}
NP=${NP:-1000000}
FILL=${FILL:-200000}
REDIS_PORT=16390
SPOOL_RESP=17801
work=$(mktemp -d /tmp/spool-resp-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== build"
cargo build --release -p spool-cli
(cd bench/compare && cargo build --release)

echo "== machine"
date -u
nproc
uptime
redis-server --version
git log -1 --oneline

redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$work" \
  --appendonly yes --appendfsync always --save '' --auto-aof-rewrite-percentage 0 \
  --logfile "$work/redis.log" &
pids+=($!)
target/release/spool serve --data "$work/spool" --listen 127.0.0.1:17800 \
  --resp "127.0.0.1:$SPOOL_RESP" 2>"$work/spool.log" &
pids+=($!)
for _ in $(seq 1 100); do
  redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 &&
    redis-cli -p "$SPOOL_RESP" ping >/dev/null 2>&1 && break
  sleep 0.1
done
echo "redis: appendonly $(redis-cli -p "$REDIS_PORT" config get appendonly | tail -1)," \
  "appendfsync $(redis-cli -p "$REDIS_PORT" config get appendfsync | tail -1)," \
  "auto-aof-rewrite-percentage $(redis-cli -p "$REDIS_PORT" config get auto-aof-rewrite-percentage | tail -1)"

payload=$(printf 'x%.0s' $(seq 1 100))
# redis-benchmark -q prints "CMD ...: R requests per second, p50=L msec".
rate() { grep -o '[0-9.]* requests per second' | head -1 | cut -d' ' -f1; }
p50() { grep -o 'p50=[0-9.]* msec' | head -1 | cut -d= -f2; }

echo "== single enqueues, 64 clients, n=$N without pipelining, $NP with -P 16"
for round in $(seq 1 "$ROUNDS"); do
  for pipe in 1 16; do
    n=$N
    [ "$pipe" = 1 ] || n=$NP
    s=$(redis-benchmark -p "$SPOOL_RESP" -c 64 -n "$n" -P "$pipe" -q ENQUEUE q "$payload" 2>&1)
    r=$(redis-benchmark -p "$REDIS_PORT" -c 64 -n "$n" -P "$pipe" -q LPUSH q "$payload" 2>&1)
    sr=$(rate <<<"$s") rr=$(rate <<<"$r")
    printf 'round %s -P %-2s  spool ENQUEUE %10s/s (p50 %s ms)  redis LPUSH %10s/s (p50 %s ms)  ratio %s\n' \
      "$round" "$pipe" "$sr" "$(p50 <<<"$s")" "$rr" "$(p50 <<<"$r")" \
      "$(awk -v a="$sr" -v b="$rr" 'BEGIN { printf "%.2f", a / b }')"
  done
done

echo "== drain (claim batches + ack) and idle pickup, bench/compare"
for round in $(seq 1 "$ROUNDS"); do
  bench/compare/target/release/spool-compare \
    --spool-bin target/release/spool \
    --redis "redis://127.0.0.1:$REDIS_PORT/" \
    --systems spool-resp,redis \
    --workloads batch-drain,steady \
    --fill "$FILL" --max-secs 60 \
    --steady-rate 100 --steady-clients 1 --steady-secs 10 \
    --out "$work/compare-$round.json" 2>&1 | grep -v '^\s*$' | grep -iv 'wrote' || true
  cat "$work/compare-$round.md"
done

echo "== drain: Spool's claim batches + ACKMANY against one BLMOVE + one LREM per task"
for round in $(seq 1 "$ROUNDS"); do
  bench/compare/target/release/spool-compare \
    --spool-bin target/release/spool \
    --systems spool-resp --workloads batch-drain \
    --fill "$FILL" --max-secs 60 \
    --out "$work/batched-$round.json" 2>&1 | grep -v '^\s*$' | grep -iv 'wrote' || true
  bench/compare/target/release/spool-compare \
    --redis "redis://127.0.0.1:$REDIS_PORT/" \
    --systems redis --workloads batch-drain --claim-batch 1 \
    --fill "$FILL" --max-secs 60 \
    --out "$work/pertask-$round.json" 2>&1 | grep -v '^\s*$' | grep -iv 'wrote' || true
  grep -h '^| drain' "$work/batched-$round.md" "$work/pertask-$round.md" || true
done
