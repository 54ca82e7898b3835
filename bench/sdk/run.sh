#!/usr/bin/env bash
# The client libraries' throughput beside RQ, Celery and BullMQ on this machine,
# all durable: Spool fsyncs before it answers; the peers run on a Redis of
# their own with `appendonly yes`, `appendfsync always`. Reported in
# docs/BENCHMARKS.md ("Client libraries").
#
#   bash bench/sdk/run.sh            # TASKS=10000 PEER_TASKS=1000 by default
#
# Needs a release build (cargo build --release -p spool-cli), redis-server,
# node >= 20 and python3; installs the Python and Node packages it needs
# (the SDK venv under target/, bullmq here).
set -euo pipefail
cd "$(dirname "$0")/../.."

tasks="${TASKS:-10000}"
peer_tasks="${PEER_TASKS:-1000}"
target="${CARGO_TARGET_DIR:-target}"
venv="$target/sdk-venv"
work="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null || true; redis-cli -p 6390 shutdown nosave >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

[[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -e clients/python celery redis rq
(cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build:test)
(cd bench/sdk && npm ci --no-audit --no-fund --loglevel=error)

"$target/release/spool" serve --data "$work/data" --listen 127.0.0.1:0 2>"$work/serve.log" &
server=$!
url=""
for _ in $(seq 1 100); do
  url="$(sed -n 's|.*listening on \(http://[0-9.:]*\).*|\1|p' "$work/serve.log" | head -n 1)"
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { cat "$work/serve.log"; exit 1; }
redis-server --port 6390 --bind 127.0.0.1 --dir "$work" --appendonly yes --appendfsync always \
  --save '' --daemonize yes --logfile "$work/redis.log"
for _ in $(seq 1 50); do redis-cli -p 6390 ping >/dev/null 2>&1 && break; sleep 0.1; done

echo "== spool, python client ($tasks tasks)"
"$venv/bin/python" clients/python/bench/bench.py --url "$url" --tasks "$tasks"
echo "== spool, python client, sync handlers"
"$venv/bin/python" clients/python/bench/bench.py --url "$url" --tasks "$tasks" --sync
echo "== spool, typescript client ($tasks tasks)"
node clients/typescript/build/bench/bench.js --url "$url" --tasks "$tasks"
echo "== bullmq ($tasks tasks)"
node bench/sdk/bullmq.mjs --tasks "$tasks"
echo "== celery ($peer_tasks tasks)"
"$venv/bin/python" bench/sdk/peers.py celery --tasks "$peer_tasks"
echo "== rq ($peer_tasks tasks)"
"$venv/bin/python" bench/sdk/peers.py rq --tasks "$peer_tasks"
